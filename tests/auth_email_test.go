package tests

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"dataplatform/cmd/dataplatform/config"
	"dataplatform/handlers/auth/oidctest"
)

// mailSink is a tiny SMTP server on 127.0.0.1 that keeps every message it is given: the
// mailboxes of the people in a test.
type mailSink struct {
	ln   net.Listener
	mu   sync.Mutex
	msgs []sunkMail
	// gate, when set, is asked about each recipient: it may block, and a reply it returns
	// (such as "550 no such mailbox") refuses the recipient.
	gate func(to string) string
}

type sunkMail struct{ to, data string }

func startMailSink(t testing.TB) *mailSink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &mailSink{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	return s
}

func (s *mailSink) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	say := func(line string) { fmt.Fprintf(c, "%s\r\n", line) }
	say("220 sink ESMTP")
	var to []string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		cmd := strings.ToUpper(strings.TrimSpace(line))
		switch {
		case strings.HasPrefix(cmd, "EHLO"), strings.HasPrefix(cmd, "HELO"):
			say("250 sink")
		case strings.HasPrefix(cmd, "MAIL FROM:"):
			to = nil
			say("250 ok")
		case strings.HasPrefix(cmd, "RCPT TO:"):
			addr := strings.Trim(strings.TrimSpace(line[len("RCPT TO:"):]), "<>")
			s.mu.Lock()
			gate := s.gate
			s.mu.Unlock()
			if gate != nil {
				if reply := gate(addr); reply != "" {
					say(reply)
					continue
				}
			}
			to = append(to, addr)
			say("250 ok")
		case cmd == "DATA":
			say("354 go on")
			var b strings.Builder
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" || l == ".\n" {
					break
				}
				b.WriteString(strings.TrimPrefix(l, "."))
			}
			s.mu.Lock()
			for _, a := range to {
				s.msgs = append(s.msgs, sunkMail{to: strings.ToLower(a), data: b.String()})
			}
			s.mu.Unlock()
			say("250 kept")
		case cmd == "QUIT":
			say("221 bye")
			return
		default:
			say("250 ok")
		}
	}
}

func (s *mailSink) setGate(gate func(to string) string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gate = gate
}

// mailbox is every message to one address, oldest first.
func (s *mailSink) mailbox(addr string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, m := range s.msgs {
		if m.to == strings.ToLower(addr) {
			out = append(out, m.data)
		}
	}
	return out
}

// last finds the first submatch of re in the newest message to addr that has it.
func (s *mailSink) last(t testing.TB, addr string, re *regexp.Regexp) string {
	t.Helper()
	box := s.mailbox(addr)
	for i := len(box) - 1; i >= 0; i-- {
		if m := re.FindStringSubmatch(box[i]); m != nil {
			return m[1]
		}
	}
	t.Fatalf("no mail to %s matches %s (%d mails)", addr, re, len(box))
	return ""
}

var (
	mailedInvitation = regexp.MustCompile(`/api/v1/invitations/([A-Za-z0-9_-]+)/accept`)
	mailedCode       = regexp.MustCompile(`verification code: ([A-Za-z0-9_-]+)`)
)

// sinks finds a test's mail sink by its DP_SMTP_URL, for the harness's invitations.
var sinks sync.Map

func withMail(s *mailSink) option {
	u := "smtp://" + s.ln.Addr().String()
	sinks.Store(u, s)
	return func(c *config.Config) { c.SMTPURL, c.MailFrom = u, "platform@dp.test" }
}

// invitationToken is the token of an invitation just made: from the answer's link, or from
// the invited mailbox when it was mailed.
func (e *env) invitationToken(inv *resp) string {
	e.t.Helper()
	if inv.get("delivery") != "email" {
		return invTokenOf(inv)
	}
	s, ok := sinks.Load(e.cfg.SMTPURL)
	if !ok {
		e.t.Fatal("a mailed invitation without a mail sink")
	}
	return s.(*mailSink).last(e.t, inv.str("email"), mailedInvitation)
}

// unverified clears an account's verified address, as for one set up through a link.
func (e *env) unverified(email string) {
	e.t.Helper()
	if _, err := e.st.DB.Exec(`UPDATE platform.users SET email_verified_at = NULL WHERE lower(email) = lower($1)`, email); err != nil {
		e.t.Fatal(err)
	}
}

// verified marks an account's address verified, straight in the database: the shortcut for
// tests about something else (TestEmailVerificationFlow goes the whole way).
func (e *env) verified(email string) {
	e.t.Helper()
	if _, err := e.st.DB.Exec(`UPDATE platform.users SET email_verified_at = now() WHERE lower(email) = lower($1)`, email); err != nil {
		e.t.Fatal(err)
	}
}

// The audit's attack: the admin of their own organization invites the victim's address,
// accepts the link themselves, and holds an account under it. The victim's organization then
// invites the same address: whoever holds that link with the attacker's password must not get
// in, and neither may the attacker signed in.
func TestEmailClaimByInvitationLink(t *testing.T) {
	t.Parallel()
	e := newEnv(t) // no mail server: invitations are links the inviter sees
	const victim = "ceo@victim.example"
	_, attTok := e.member(e.orgID, "viewer")
	orgA := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Attacker Inc"}, bearer(attTok)).status(201).str("id")
	invA := e.do("POST", "/api/v1/organizations/"+orgA+"/invitations", map[string]any{"email": victim, "role": "viewer"}, bearer(attTok)).status(201)
	if invA.str("delivery") != "link" {
		t.Fatalf("without a mail server the invitation is a link: %s", invA.Body)
	}
	held := e.do("POST", "/api/v1/invitations/"+invTokenOf(invA)+"/accept", map[string]any{"name": "Fake CEO", "password": "attacker-pass"}).status(200)
	heldTok := held.str("access_token")
	if me := e.do("GET", "/api/v1/auth/me", nil, bearer(heldTok)).status(200); me.get("email_verified") != false {
		t.Fatalf("an account set up through a link its inviter saw is verified: %s", me.Body)
	}

	// The victim's organization (e.orgID) invites the real CEO; the link leaks to the attacker.
	invB := e.do("POST", "/api/v1/organizations/"+e.orgID+"/invitations", map[string]any{"email": victim, "role": "admin"}, bearer(e.ownerToken)).status(201)
	acceptB := "/api/v1/invitations/" + invTokenOf(invB) + "/accept"
	e.do("POST", acceptB, map[string]any{"password": "attacker-pass"}).authError(401, "AUTH_REQUIRED")
	e.do("POST", acceptB, map[string]any{"name": "x", "password": "attacker-pass"}).authError(401, "AUTH_REQUIRED")
	e.do("POST", acceptB, map[string]any{}, bearer(heldTok)).authError(403, "EMAIL_NOT_VERIFIED")
	e.do("POST", acceptB, map[string]any{}, bearer(attTok)).authError(403, "PERMISSION_DENIED")
	e.do("POST", "/api/v1/auth/verify-email/send", nil, bearer(heldTok)).apiError(501, "MAIL_NOT_CONFIGURED")
	e.do("GET", "/api/v1/organizations/"+e.orgID, nil, bearer(e.login(victim, "attacker-pass", "").str("access_token"))).apiError(404, "NOT_FOUND")
	if l := e.do("GET", "/api/v1/organizations/"+e.orgID+"/users?search=victim", nil, bearer(e.ownerToken)).status(200); l.str("users.0.status") != "invited" {
		t.Fatalf("the attacker's account joined the victim's organization: %s", l.Body)
	}
	// The invitation is still there for the real person.
	e.do("GET", "/api/v1/invitations/"+invTokenOf(invB), nil).status(200)
}

// With a mail server, an invitation's token reaches only the mailbox. An attacker holding an
// unverified account under the victim's address (here: provisioned from their own identity
// provider account, which does not vouch for the address) cannot join the victim's
// organization; the mailbox's owner reads the mail, accepts, and takes the address over.
func TestEmailClaimByMailboxOwner(t *testing.T) {
	t.Parallel()
	sink := startMailSink(t)
	p := oidctest.Start(t)
	e := newEnv(t, withMail(sink), withProvider(p))
	p.Clock = e.clock.Now
	const victim = "ceo@victim.example"
	p.AddUser("attacker-sub", victim, "Fake CEO", false)
	attBearer := bearer(p.Token("attacker-sub", p.ClientID, time.Hour))
	if me := e.do("GET", "/api/v1/auth/me", nil, attBearer).status(200); me.get("email_verified") != false {
		t.Fatalf("provisioned with an unverified address: %s", me.Body)
	}
	// The attacker's own organization's invitation is mailed too: no link to accept.
	orgA := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Attacker Inc"}, attBearer).status(201).str("id")
	if inv := e.do("POST", "/api/v1/organizations/"+orgA+"/invitations", map[string]any{"email": "other@victim.example"}, attBearer).status(201); inv.str("delivery") != "email" || inv.get("invitation_url") != nil {
		t.Fatalf("a mailed invitation shows its link to the inviter: %s", inv.Body)
	}

	inv := e.do("POST", "/api/v1/organizations/"+e.orgID+"/invitations", map[string]any{"email": victim, "role": "admin"}, bearer(e.ownerToken)).status(201)
	if inv.get("invitation_url") != nil || strings.Contains(string(inv.Body), "/accept") {
		t.Fatalf("the inviter sees the mailed token: %s", inv.Body)
	}
	// The attacker can ask for a code, but it goes to the victim's mailbox.
	e.do("POST", "/api/v1/auth/verify-email/send", nil, attBearer).status(200)
	e.do("POST", "/api/v1/auth/verify-email", map[string]any{"code": "guess-guess-guess"}, attBearer).apiError(400, "INVALID_VERIFICATION_CODE")
	e.do("GET", "/api/v1/organizations/"+e.orgID, nil, attBearer).apiError(404, "NOT_FOUND")

	// The CEO reads the invitation in their mailbox and accepts it.
	tok := sink.last(t, victim, mailedInvitation)
	acc := e.do("POST", "/api/v1/invitations/"+tok+"/accept", map[string]any{"name": "Real CEO", "password": "ceo-kettle-orbit-42"}).status(200)
	if acc.str("user.organization_id") != e.orgID || acc.str("user.roles.0") != "admin" {
		t.Fatalf("accept: %s", acc.Body)
	}
	me := e.do("GET", "/api/v1/auth/me", nil, bearer(acc.str("access_token"))).status(200)
	if me.get("email_verified") != true || me.len("organizations") != 1 || me.str("email") != victim {
		t.Fatalf("the CEO's account: %s", me.Body)
	}
	e.login(victim, "ceo-kettle-orbit-42", e.orgID)
	// The attacker's account lost the address and is disabled.
	e.do("GET", "/api/v1/auth/me", nil, bearer(p.Token("attacker-sub", p.ClientID, time.Hour))).authError(401, "AUTH_REQUIRED")
	e.do("GET", "/api/v1/organizations/"+e.orgID, nil, attBearer).authError(401, "AUTH_REQUIRED")
	if n := len(sink.mailbox(victim)); n != 2 {
		t.Fatalf("%d mails to the victim, want the code and the invitation", n)
	}
}

// A provider account links to an existing account of the same address only when both the
// provider and this service know the address to be the person's.
func TestOIDCLinksOnlyVerifiedAddresses(t *testing.T) {
	t.Parallel()
	p := oidctest.Start(t)
	e := newEnv(t, withProvider(p))
	p.Clock = e.clock.Now
	unverifiedLocal, _ := e.member(e.orgID, "viewer") // set up through a link: not verified

	callback := func(sub string) *resp {
		loc := e.do("GET", "/api/v1/auth/oauth/authorize", nil).status(302).Header.Get("Location")
		code, state := p.Authorize(t, loc, sub)
		return e.do("GET", "/api/v1/auth/oauth/callback?code="+url.QueryEscape(code)+"&state="+url.QueryEscape(state), nil)
	}
	// The provider does not vouch for the owner's (verified) address: not linked.
	p.AddUser("typed-owner", adminEmail, "Not the owner", false)
	callback("typed-owner").authError(403, "EMAIL_NOT_VERIFIED")
	e.do("GET", "/api/v1/auth/me", nil, bearer(p.Token("typed-owner", p.ClientID, time.Hour))).authError(401, "AUTH_REQUIRED")
	// The provider vouches, but the local account never proved the address: not linked.
	p.AddUser("real-viewer", unverifiedLocal, "Viewer", true)
	callback("real-viewer").authError(403, "EMAIL_NOT_VERIFIED")
	e.do("GET", "/api/v1/auth/me", nil, bearer(p.Token("real-viewer", p.ClientID, time.Hour))).authError(401, "AUTH_REQUIRED")
	var links int
	if err := e.st.DB.Get(&links, `SELECT count(*) FROM platform.identities`); err != nil || links != 0 {
		t.Fatalf("%d identities linked (%v)", links, err)
	}
	// Both verified: linked to the existing account.
	p.AddUser("real-owner", adminEmail, "Owner", true)
	cb := callback("real-owner").status(200)
	if cb.str("user.id") != e.userIDOf(adminEmail) || cb.str("user.organization_id") != e.orgID {
		t.Fatalf("not linked to the owner: %s", cb.Body)
	}
}

// The whole verification path: a code mailed to the signed-in account's address verifies it
// (once, for that account only), and then the account joins a second organization's invitation
// signed in.
func TestEmailVerificationFlow(t *testing.T) {
	t.Parallel()
	sink := startMailSink(t)
	e := newEnv(t, withMail(sink))
	email, tok := e.member(e.orgID, "developer")
	e.unverified(email) // as if set up through a link, before mail was configured
	second := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Second"}, bearer(e.ownerToken)).status(201).str("id")
	// Without the mail a link would be: a link is what an unverified account cannot use.
	e.do("POST", "/api/v1/organizations/"+second+"/invitations", map[string]any{"email": email, "role": "developer"}, bearer(e.ownerToken)).status(201)
	linkTok := sink.last(t, email, mailedInvitation)
	if _, err := e.st.DB.Exec(`UPDATE platform.invitations SET delivered_by_email = false WHERE organization_id = $1`, second); err != nil {
		t.Fatal(err)
	}
	accept := "/api/v1/invitations/" + linkTok + "/accept"
	e.do("POST", accept, map[string]any{}, bearer(tok)).authError(403, "EMAIL_NOT_VERIFIED")

	m := e
	m.do("POST", "/api/v1/auth/verify-email", map[string]any{"code": "nothing-sent-yet"}, bearer(tok)).apiError(400, "INVALID_VERIFICATION_CODE")
	s := m.do("POST", "/api/v1/auth/verify-email/send", nil, bearer(tok)).status(200)
	if s.get("email_verified") != false || s.get("code_expires_at") == nil {
		t.Fatalf("send: %s", s.Body)
	}
	code := sink.last(t, email, mailedCode)
	// Only the account that asked can use it; a key cannot.
	m.do("POST", "/api/v1/auth/verify-email", map[string]any{"code": code}, bearer(e.ownerToken)).apiError(400, "INVALID_VERIFICATION_CODE")
	key := m.do("POST", "/api/v1/api-keys", map[string]any{"name": "k", "permissions": []string{"datasets:list"}}, bearer(tok)).status(201).str("key")
	m.do("POST", "/api/v1/auth/verify-email", map[string]any{"code": code}, apiKey(key)).authError(403, "PERMISSION_DENIED")
	v := m.do("POST", "/api/v1/auth/verify-email", map[string]any{"code": code}, bearer(tok)).status(200)
	if v.get("email_verified") != true || v.get("email_verified_at") == nil {
		t.Fatalf("verify: %s", v.Body)
	}
	m.do("POST", "/api/v1/auth/verify-email", map[string]any{"code": code}, bearer(tok)).apiError(400, "INVALID_VERIFICATION_CODE")
	if again := m.do("POST", "/api/v1/auth/verify-email/send", nil, bearer(tok)).status(200); again.get("email_verified") != true || len(sink.mailbox(email)) != 3 {
		t.Fatalf("a verified address is sent another code: %s", again.Body)
	}
	acc := e.do("POST", accept, map[string]any{}, bearer(tok)).status(200)
	if acc.str("user.organization_id") != second || acc.str("user.roles.0") != "developer" {
		t.Fatalf("accept: %s", acc.Body)
	}
}

// Wrong codes are counted: after 5, even the right one is refused.
func TestEmailVerificationTries(t *testing.T) {
	t.Parallel()
	sink := startMailSink(t)
	e := newEnv(t, withMail(sink))
	email, tok := e.member(e.orgID, "viewer") // mailed invitation: verified on accepting
	if me := e.do("GET", "/api/v1/auth/me", nil, bearer(tok)).status(200); me.get("email_verified") != true {
		t.Fatalf("accepting a mailed invitation verifies: %s", me.Body)
	}
	e.unverified(email)
	e.do("POST", "/api/v1/auth/verify-email/send", nil, bearer(tok)).status(200)
	for i := 0; i < 5; i++ {
		e.do("POST", "/api/v1/auth/verify-email", map[string]any{"code": fmt.Sprint("wrong-", i)}, bearer(tok)).apiError(400, "INVALID_VERIFICATION_CODE")
	}
	e.do("POST", "/api/v1/auth/verify-email", map[string]any{"code": sink.last(t, email, mailedCode)}, bearer(tok)).apiError(400, "INVALID_VERIFICATION_CODE")
}

// Credential stuffing against one account: after 5 failures in a row, sign-ins for that
// address wait (1 s, doubling), even with the right password, and unknown addresses are
// treated the same; a success resets the count. The server's fake clock moves; nothing sleeps.
func TestLoginBackoffPerAccount(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	email, _ := e.member(e.orgID, "viewer") // password "password-viewer"
	try := func(addr, password string) *resp {
		return e.do("POST", "/api/v1/auth/login", map[string]any{"email": addr, "password": password})
	}
	throttled := func(r *resp, wait string) {
		t.Helper()
		r.apiError(429, "LOGIN_THROTTLED")
		if r.Header.Get("Retry-After") != wait {
			t.Fatalf("Retry-After %q, want %s", r.Header.Get("Retry-After"), wait)
		}
	}
	for _, addr := range []string{email, "nobody@example.com"} {
		for i := 0; i < 5; i++ {
			try(addr, "wrong-password").authError(401, "AUTH_REQUIRED")
		}
		// Known or not, the same answer, and the right password does not get through.
		throttled(try(addr, "password-viewer"), "1")
		throttled(try(strings.ToUpper(addr), "wrong-password"), "1")
	}
	// Other accounts are not affected.
	e.login(adminEmail, adminPassword, "")

	e.clock.Advance(time.Second)
	try(email, "wrong-password").authError(401, "AUTH_REQUIRED") // the 6th failure: 2 s
	throttled(try(email, "password-viewer"), "2")
	e.clock.Advance(2 * time.Second)
	try(email, "wrong-password").authError(401, "AUTH_REQUIRED") // the 7th: 4 s
	e.clock.Advance(3 * time.Second)
	throttled(try(email, "password-viewer"), "1")
	e.clock.Advance(time.Second)
	e.login(email, "password-viewer", "") // success resets
	try(email, "wrong-password").authError(401, "AUTH_REQUIRED")
	e.login(email, "password-viewer", "")

	// The wait is capped at 15 minutes, and the count lives in PostgreSQL: another replica sees it.
	if _, err := e.st.DB.Exec(`UPDATE platform.login_failures SET failures = 40 WHERE email_key = 'nobody@example.com'`); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	try("nobody@example.com", "wrong-password").authError(401, "AUTH_REQUIRED")
	throttled(try("nobody@example.com", "x"), "900")
	other := e.replica()
	res, err := http.Post(other+"/api/v1/auth/login", "application/json", strings.NewReader(`{"email":"nobody@example.com","password":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 429 || res.Header.Get("Retry-After") != "900" {
		t.Fatalf("the replica answered %d, Retry-After %q", res.StatusCode, res.Header.Get("Retry-After"))
	}
}

// Answers that carry tokens or secrets tell caches not to keep them (RFC 6749 §5.1).
func TestTokenAnswersNotCached(t *testing.T) {
	t.Parallel()
	sink := startMailSink(t)
	e := newEnv(t, withMail(sink))
	noStore := func(r *resp) *resp {
		t.Helper()
		if r.Header.Get("Cache-Control") != "no-store" || r.Header.Get("Pragma") != "no-cache" {
			t.Fatalf("%s: Cache-Control %q, Pragma %q", r.req, r.Header.Get("Cache-Control"), r.Header.Get("Pragma"))
		}
		return r
	}
	l := noStore(e.login(adminEmail, adminPassword, ""))
	noStore(e.do("POST", "/api/v1/auth/refresh", map[string]any{"refresh_token": l.str("refresh_token")}).status(200))
	k := noStore(e.do("POST", "/api/v1/api-keys", map[string]any{"name": "k", "permissions": []string{"datasets:list"}}, bearer(e.ownerToken)).status(201))
	noStore(e.do("POST", "/api/v1/api-keys/"+k.str("id")+"/rotate", map[string]any{}, bearer(e.ownerToken)).status(200))
	inv := e.do("POST", "/api/v1/organizations/"+e.orgID+"/invitations", map[string]any{"email": "cache@example.com"}, bearer(e.ownerToken)).status(201)
	noStore(e.do("POST", "/api/v1/invitations/"+e.invitationToken(inv)+"/accept", map[string]any{"name": "C", "password": "quiet harbor lantern"}).status(200))

	p := oidctest.Start(t)
	o := newEnv(t, withProvider(p))
	p.Clock = o.clock.Now
	p.AddUser("sub", "new@example.com", "New", true)
	loc := o.do("GET", "/api/v1/auth/oauth/authorize", nil).status(302).Header.Get("Location")
	code, state := p.Authorize(t, loc, "sub")
	noStore(o.do("GET", "/api/v1/auth/oauth/callback?code="+url.QueryEscape(code)+"&state="+url.QueryEscape(state), nil).status(200))
}

// TestInvitationMailAfterCommit: an invitation is mailed after its transaction, so a mail
// server that takes its time does not hold the organization (another invitation goes through
// meanwhile); a refused mail keeps nothing: the invitation, the membership and the account
// made for it are gone, an earlier pending invitation of the person is pending again, and no
// audit row or event says it was made.
func TestInvitationMailAfterCommit(t *testing.T) {
	t.Parallel()
	sink := startMailSink(t)
	held, release := make(chan struct{}), make(chan struct{})
	sink.setGate(func(to string) string {
		switch {
		case strings.HasPrefix(to, "slow@"):
			close(held)
			<-release
		case strings.HasPrefix(to, "refused@"):
			return "550 no such mailbox"
		}
		return ""
	})
	e := newEnv(t, withMail(sink))
	own := bearer(e.ownerToken)
	invite := func(email, role string) *resp {
		return e.do("POST", "/api/v1/organizations/"+e.orgID+"/invitations", map[string]any{"email": email, "role": role}, own)
	}
	slow := make(chan *resp, 1)
	go func() { slow <- invite("slow@example.com", "viewer") }()
	<-held
	// The first invitation's mail is still being sent: the organization is not locked. (The
	// wait only turns a deadlock into a failure; it is not a measure of speed.)
	quick := make(chan *resp, 1)
	go func() { quick <- invite("quick@example.com", "viewer") }()
	select {
	case r := <-quick:
		r.status(201)
	case <-time.After(time.Minute):
		t.Fatal("an invitation waited for another invitation's mail to be sent")
	}
	close(release)
	(<-slow).status(201)

	count := func(q string, args ...any) int {
		var n int
		if err := e.st.DB.Get(&n, q, args...); err != nil {
			t.Fatal(err)
		}
		return n
	}
	state := func() string {
		return fmt.Sprint(count(`SELECT count(*) FROM platform.users WHERE email LIKE 'refused@%'`),
			count(`SELECT count(*) FROM platform.memberships m JOIN platform.users u ON u.id = m.user_id WHERE u.email LIKE 'refused@%'`),
			count(`SELECT count(*) FROM platform.invitations WHERE email LIKE 'refused@%' AND status = 'pending'`),
			count(`SELECT count(*) FROM platform.audit_log WHERE organization_id = $1 AND action = 'user.invite'`, e.orgID),
			e.countOutboxRows(e.orgID, "user.invited"))
	}
	if got := state(); got != "0 0 0 2 2" {
		t.Fatalf("before: %s", got)
	}
	invite("refused@example.com", "viewer").apiError(502, "MAIL_ERROR")
	if got := state(); got != "0 0 0 2 2" {
		t.Fatalf("a refused mail kept something (users memberships pending audit events): %s", got)
	}
	// A person with a pending invitation (sent to another address of theirs, then changed):
	// a second invitation that cannot be mailed leaves the first one pending.
	sink.setGate(nil)
	invite("refused@example.com", "viewer").status(201)
	sink.setGate(func(to string) string { return "550 no such mailbox" })
	invite("refused@example.com", "admin").apiError(502, "MAIL_ERROR")
	if got := state(); got != "1 1 1 3 3" {
		t.Fatalf("after a refused second invitation: %s", got)
	}
	if l := e.do("GET", "/api/v1/organizations/"+e.orgID+"/users?search=refused", nil, own).status(200); l.str("users.0.role") != "viewer" || l.str("users.0.status") != "invited" {
		t.Fatalf("the first invitation's membership: %s", l.Body)
	}
}
