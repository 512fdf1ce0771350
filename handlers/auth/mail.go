package auth

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/smtp"
	"net/url"
	"strings"
	"time"
)

// Mailer sends plain-text mail through one SMTP server: `smtp://user:pass@host:port` (STARTTLS
// when the server offers it; credentials are only sent over TLS or to localhost, as net/smtp
// insists) or `smtps://...` (TLS from the first byte).
type Mailer struct {
	addr, host string
	implicit   bool
	user, pass string
	from       string
}

// NewMailer parses DP_SMTP_URL and DP_MAIL_FROM.
func NewMailer(rawURL, from string) (*Mailer, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "smtp" && u.Scheme != "smtps") || u.Hostname() == "" {
		return nil, errors.New("DP_SMTP_URL must look like smtp://user:password@host:587 or smtps://host:465")
	}
	m := &Mailer{host: u.Hostname(), implicit: u.Scheme == "smtps"}
	port := u.Port()
	if port == "" {
		port = map[bool]string{true: "465", false: "587"}[m.implicit]
	}
	m.addr = net.JoinHostPort(m.host, port)
	if u.User != nil {
		m.user = u.User.Username()
		m.pass, _ = u.User.Password()
	}
	a, err := mail.ParseAddress(from)
	if err != nil {
		return nil, fmt.Errorf("DP_MAIL_FROM %q: %w", from, err)
	}
	m.from = a.Address
	return m, nil
}

// Send mails subject and body to one address. to must be a bare address (the API's email
// format); anything with line breaks is refused so that no header can be injected.
func (m *Mailer) Send(ctx context.Context, to, subject, body string) error {
	if strings.ContainsAny(to+subject, "\r\n") {
		return errors.New("mail: line break in an address or subject")
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	d := &net.Dialer{}
	var conn net.Conn
	var err error
	if m.implicit {
		conn, err = (&tls.Dialer{NetDialer: d, Config: &tls.Config{ServerName: m.host}}).DialContext(ctx, "tcp", m.addr)
	} else {
		conn, err = d.DialContext(ctx, "tcp", m.addr)
	}
	if err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	c, err := smtp.NewClient(conn, m.host)
	if err != nil {
		_ = conn.Close()
		return err
	}
	defer func() { _ = c.Close() }()
	if !m.implicit {
		if ok, _ := c.Extension("STARTTLS"); ok {
			if err := c.StartTLS(&tls.Config{ServerName: m.host}); err != nil {
				return err
			}
		}
	}
	if m.user != "" {
		if err := c.Auth(smtp.PlainAuth("", m.user, m.pass, m.host)); err != nil {
			return err
		}
	}
	if err := c.Mail(m.from); err != nil {
		return err
	}
	if err := c.Rcpt(to); err != nil {
		return err
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	msg := "From: " + m.from + "\r\nTo: " + to + "\r\nSubject: " + subject +
		"\r\nDate: " + time.Now().UTC().Format(time.RFC1123Z) +
		"\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" +
		strings.ReplaceAll(strings.ReplaceAll(body, "\r\n", "\n"), "\n", "\r\n")
	if _, err := w.Write([]byte(msg)); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return c.Quit()
}
