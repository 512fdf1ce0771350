package webhooks

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"dataplatform/store"
	"dataplatform/store/extdb"
	"dataplatform/store/secrets"

	"github.com/lib/pq"
)

// Schedule is the wait before each retry after a failed attempt: about a day in all, as
// Svix and Stripe retry; each wait is jittered by ±20%.
var Schedule = []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour}

const (
	channel = "platform_webhooks" // payload "outbox": new events; "deliveries": new or due deliveries
	// ResponseCap is how much of a receiver's answer is kept (the rest is read and dropped up
	// to drainCap, so the connection can be reused).
	ResponseCap = 4 << 10
	drainCap    = 64 << 10
	userAgent   = "dataplatform-webhooks/1"
)

// Options tune a Dispatcher.
type Options struct {
	Workers int           // endpoints sent to at once; default 8
	Lease   time.Duration // how long a claimed endpoint waits for a dead worker; default 30s
	Poll    time.Duration // how often to look for work without a notification; default 1s
	Timeout time.Duration // one attempt, connection to answer; default 10s
	Batch   int           // deliveries read per round; default 100
	// Networks are the addresses beyond the public internet deliveries may reach
	// (DP_WEBHOOK_NETWORKS); every other address is refused where it is dialled.
	Networks extdb.Networks
	// An endpoint is disabled when its deliveries have failed for DisableAfter (default 5
	// days) or DisableFailures deliveries in a row were given up (default 100).
	DisableAfter    time.Duration
	DisableFailures int
}

// Dispatcher fans the outbox out into deliveries and sends them.
type Dispatcher struct {
	st     *store.Store
	url    string
	box    *secrets.Box
	clock  func() time.Time
	log    *slog.Logger
	opt    Options
	id     string
	client *http.Client

	fanWake  chan struct{}
	sendWake chan struct{}
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

// New builds a dispatcher; dbURL is used for LISTEN (empty: poll only).
func New(st *store.Store, dbURL string, box *secrets.Box, clock func() time.Time, log *slog.Logger, opt Options) *Dispatcher {
	if opt.Workers <= 0 {
		opt.Workers = 8
	}
	if opt.Lease <= 0 {
		opt.Lease = 30 * time.Second
	}
	if opt.Poll <= 0 {
		opt.Poll = time.Second
	}
	if opt.Timeout <= 0 {
		opt.Timeout = 10 * time.Second
	}
	if opt.Batch <= 0 {
		opt.Batch = 100
	}
	if opt.DisableAfter <= 0 {
		opt.DisableAfter = 5 * 24 * time.Hour
	}
	if opt.DisableFailures <= 0 {
		opt.DisableFailures = 100
	}
	d := &Dispatcher{st: st, url: dbURL, box: box, clock: clock, log: log, opt: opt, id: store.NewID("wrk"),
		fanWake: make(chan struct{}, 1), sendWake: make(chan struct{}, opt.Workers)}
	dialer := &net.Dialer{Timeout: opt.Timeout, KeepAlive: 30 * time.Second, Control: opt.Networks.Control("DP_WEBHOOK_NETWORKS")}
	d.client = &http.Client{
		Timeout: opt.Timeout,
		Transport: &http.Transport{
			Proxy:                 nil, // a proxy would dial for us, past the address check
			DialContext:           dialer.DialContext,
			TLSHandshakeTimeout:   opt.Timeout,
			ResponseHeaderTimeout: opt.Timeout,
			MaxIdleConns:          256,
			MaxIdleConnsPerHost:   4,
			IdleConnTimeout:       90 * time.Second,
		},
		// A redirect is answered as it is: following it would send the signed event elsewhere.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return d
}

// Start runs the fan-out and the senders until Stop.
func (d *Dispatcher) Start(ctx context.Context) {
	ctx, d.cancel = context.WithCancel(ctx)
	if d.url != "" {
		l := pq.NewListener(d.url, time.Second, time.Minute, nil)
		if err := l.Listen(channel); err != nil {
			d.log.Warn("webhook notifications unavailable; polling only", "error", err)
			_ = l.Close()
		} else {
			d.wg.Add(1)
			go func() {
				defer d.wg.Done()
				defer func() { _ = l.Close() }()
				for {
					select {
					case <-ctx.Done():
						return
					case n := <-l.Notify:
						if n == nil || n.Extra == "outbox" { // nil: reconnected, something may have been missed
							poke(d.fanWake)
						}
						if n == nil || n.Extra == "deliveries" {
							d.pokeSenders()
						}
					}
				}
			}()
		}
	}
	d.wg.Add(1 + d.opt.Workers)
	go d.fanLoop(ctx)
	for range d.opt.Workers {
		go d.sendLoop(ctx)
	}
}

// Stop ends the loops; a delivery being sent is abandoned unrecorded and sent again later.
func (d *Dispatcher) Stop() {
	if d.cancel != nil {
		d.cancel()
	}
	d.wg.Wait()
	d.client.CloseIdleConnections()
}

// Poke makes the dispatcher look for work now (tests move a fake clock, then poke).
func (d *Dispatcher) Poke() {
	poke(d.fanWake)
	d.pokeSenders()
}

func poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (d *Dispatcher) pokeSenders() {
	for range d.opt.Workers {
		poke(d.sendWake)
	}
}

func (d *Dispatcher) fanLoop(ctx context.Context) {
	defer d.wg.Done()
	t := time.NewTicker(d.opt.Poll)
	defer t.Stop()
	for ctx.Err() == nil {
		for ctx.Err() == nil {
			events, deliveries, err := Fanout(ctx, d.st, d.clock())
			if err != nil {
				if ctx.Err() == nil {
					d.log.Warn("fanning out webhook events", "error", err)
				}
				break
			}
			if deliveries > 0 {
				d.pokeSenders()
			}
			if events < fanBatch {
				break
			}
		}
		select {
		case <-ctx.Done():
		case <-d.fanWake:
		case <-t.C:
			d.measureQueue(ctx)
		}
	}
}

func (d *Dispatcher) sendLoop(ctx context.Context) {
	defer d.wg.Done()
	for ctx.Err() == nil {
		ep, err := d.claim(ctx)
		if err != nil && ctx.Err() == nil {
			d.log.Warn("claiming a webhook endpoint", "error", err)
		}
		if ep != nil {
			d.deliver(ctx, ep)
			continue
		}
		select {
		case <-ctx.Done():
		case <-d.sendWake:
		case <-time.After(d.opt.Poll):
		}
	}
}

// endpoint is a claimed webhook endpoint with what sending needs.
type endpoint struct {
	ID             string     `db:"id"`
	OrgID          string     `db:"organization_id"`
	URL            string     `db:"url"`
	Secret         []byte     `db:"secret"`
	PreviousSecret []byte     `db:"previous_secret"`
	PreviousUntil  *time.Time `db:"previous_until"`
	FailingSince   *time.Time `db:"failing_since"`
	FailuresInRow  int        `db:"failures_in_row"`
	keys           [][]byte
	renewed        time.Time // wall time of the last lease renewal
}

// claim leases an enabled endpoint with a due delivery that no live worker holds, the one
// served least recently first.
func (d *Dispatcher) claim(ctx context.Context) (*endpoint, error) {
	now := d.clock()
	var ep endpoint
	err := d.st.DB.GetContext(ctx, &ep, `UPDATE platform.webhooks SET lease_owner = $1, lease_until = $2
		WHERE id = (SELECT w.id FROM platform.webhooks w
			WHERE w.enabled AND (w.lease_owner IS NULL OR w.lease_until < $3)
			AND EXISTS (SELECT 1 FROM platform.webhook_deliveries x WHERE x.webhook_id = w.id AND x.status = 'pending' AND x.next_attempt_at <= $3)
			ORDER BY w.lease_until NULLS FIRST LIMIT 1 FOR UPDATE SKIP LOCKED)
		RETURNING id, organization_id, url, secret, previous_secret, previous_until, failing_since, failures_in_row`,
		d.id, now.Add(d.opt.Lease), now)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ep.renewed = time.Now()
	secrets := [][]byte{ep.Secret}
	if ep.PreviousSecret != nil && ep.PreviousUntil != nil && ep.PreviousUntil.After(now) {
		secrets = append(secrets, ep.PreviousSecret) // the rotated-out secret signs for its grace day
	}
	for _, sealed := range secrets {
		plain, err := d.box.Open(sealed)
		var k []byte
		if err == nil {
			k, err = key(string(plain))
		}
		if err != nil {
			d.release(ep.ID)
			return nil, fmt.Errorf("webhook %s: signing secret: %w", ep.ID, err)
		}
		ep.keys = append(ep.keys, k)
	}
	return &ep, nil
}

// renew extends the lease; false when it was lost (expired and taken) or the endpoint was
// disabled or removed meanwhile.
func (d *Dispatcher) renew(ctx context.Context, ep *endpoint) bool {
	res, err := d.st.DB.ExecContext(ctx, `UPDATE platform.webhooks SET lease_until = $3 WHERE id = $1 AND lease_owner = $2 AND enabled`,
		ep.ID, d.id, d.clock().Add(d.opt.Lease))
	if err != nil {
		return false
	}
	n, _ := res.RowsAffected()
	ep.renewed = time.Now()
	return n == 1
}

// release gives the endpoint back; its lease_until stays as when it was last served.
func (d *Dispatcher) release(id string) {
	_, _ = d.st.DB.Exec(`UPDATE platform.webhooks SET lease_owner = NULL, lease_until = $3 WHERE id = $1 AND lease_owner = $2`, id, d.id, d.clock())
}

// due is a delivery to send.
type due struct {
	ID           string    `db:"id"`
	Body         string    `db:"body"`
	Attempts     int       `db:"attempts"`
	ScheduleFrom int       `db:"schedule_from"`
	CreatedAt    time.Time `db:"created_at"`
}

// deliver sends the endpoint's due deliveries in order, a batch at a time, until none is due
// or one fails in a way worth retrying: then the endpoint's other deliveries wait with it (an
// outage costs one attempt per retry, not one per event, and keeps the order).
func (d *Dispatcher) deliver(ctx context.Context, ep *endpoint) {
	defer d.release(ep.ID)
	for ctx.Err() == nil {
		var batch []due
		if err := d.st.DB.SelectContext(ctx, &batch, `SELECT id, body, attempts, schedule_from, created_at
			FROM platform.webhook_deliveries WHERE webhook_id = $1 AND status = 'pending' AND next_attempt_at <= $2
			ORDER BY seq LIMIT $3`, ep.ID, d.clock(), d.opt.Batch); err != nil {
			if ctx.Err() == nil {
				d.log.Warn("reading webhook deliveries", "webhook_id", ep.ID, "error", err)
			}
			return
		}
		if len(batch) == 0 {
			return
		}
		var done []attempt
		var hold *time.Time
		for i := range batch {
			if time.Since(ep.renewed) > d.opt.Lease/3 && !d.renew(ctx, ep) {
				break // another worker has the endpoint now, or it was disabled
			}
			a, ok := d.send(ctx, ep, &batch[i])
			if !ok {
				break // shutting down: not an attempt
			}
			done = append(done, a)
			if a.Outcome == outcomeRetry {
				hold = a.Next
				break
			}
		}
		if len(done) > 0 {
			if err := d.record(ctx, ep, done, hold); err != nil {
				if !errors.Is(err, errLeaseLost) {
					d.log.Warn("recording webhook deliveries", "webhook_id", ep.ID, "error", err)
				}
				return
			}
		}
		if hold != nil || len(done) < d.opt.Batch {
			return // drained (what came meanwhile: the sender loop claims again at once)
		}
	}
}

const (
	outcomeSucceeded = "succeeded"
	outcomeRetry     = "retry"  // failed; tried again later
	outcomeFailed    = "failed" // failed for good
)

// attempt is what one send did.
type attempt struct {
	DeliveryID string
	N          int
	At         time.Time
	StatusCode *int
	Response   *string
	Error      *string
	Duration   time.Duration
	Outcome    string
	Next       *time.Time // the next attempt (retry)
	latency    time.Duration
}

// send makes one attempt; false when ctx ended first (not an attempt).
func (d *Dispatcher) send(ctx context.Context, ep *endpoint, dl *due) (attempt, bool) {
	at := d.clock()
	a := attempt{DeliveryID: dl.ID, N: dl.Attempts + 1, At: at}
	body := []byte(dl.Body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, bytes.NewReader(body))
	if err != nil {
		return d.failed(a, dl, "the endpoint's url is not a valid address: "+err.Error(), false, 0), true
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("webhook-id", dl.ID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(at.Unix(), 10))
	req.Header.Set("webhook-signature", Signature(dl.ID, at, body, ep.keys...))
	start := time.Now()
	res, err := d.client.Do(req)
	if err != nil {
		a.Duration = time.Since(start)
		if ctx.Err() != nil {
			return a, false
		}
		var ne net.Error
		switch {
		case errors.Is(err, extdb.ErrRefusedAddress):
			return d.failed(a, dl, reason(err), false, 0), true // "refused address: ..."
		case errors.As(err, &ne) && ne.Timeout():
			return d.failed(a, dl, fmt.Sprintf("no answer within %s", d.opt.Timeout), true, 0), true
		default:
			return d.failed(a, dl, "connection failed: "+reason(err), true, 0), true
		}
	}
	b, _ := io.ReadAll(io.LimitReader(res.Body, ResponseCap))
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, drainCap))
	_ = res.Body.Close() // read and drained above
	a.Duration = time.Since(start)
	code := res.StatusCode
	a.StatusCode = &code
	if len(b) > 0 {
		s := strings.ReplaceAll(strings.ToValidUTF8(string(b), "\uFFFD"), "\x00", "")
		a.Response = &s
	}
	switch {
	case code >= 200 && code < 300:
		a.Outcome = outcomeSucceeded
		a.latency = at.Add(a.Duration).Sub(dl.CreatedAt)
		return a, true
	case code == 429 || code >= 500 || code == 408 || code == 409 || code == 425:
		return d.failed(a, dl, fmt.Sprintf("answered %d", code), true, retryAfter(res.Header.Get("Retry-After"), at)), true
	case code >= 300 && code < 400:
		return d.failed(a, dl, fmt.Sprintf("answered %d: redirects are not followed; register the address it points to", code), false, 0), true
	default:
		return d.failed(a, dl, fmt.Sprintf("answered %d, which is not retried", code), false, 0), true
	}
}

// failed completes a failed attempt: retried on the schedule (or after the receiver's
// Retry-After) while the schedule lasts, else given up.
func (d *Dispatcher) failed(a attempt, dl *due, msg string, retry bool, after time.Duration) attempt {
	a.Error = &msg
	n := a.N - dl.ScheduleFrom // attempts since the first or the last redelivery
	if !retry || n > len(Schedule) {
		a.Outcome = outcomeFailed
		return a
	}
	wait := time.Duration(float64(Schedule[n-1]) * (0.8 + 0.4*rand.Float64()))
	if after > 0 {
		wait = after
	}
	next := a.At.Add(wait)
	a.Outcome, a.Next = outcomeRetry, &next
	return a
}

// retryAfter reads a Retry-After header (seconds or an HTTP date), capped at a day.
func retryAfter(h string, now time.Time) time.Duration {
	if h == "" {
		return 0
	}
	var d time.Duration
	if s, err := strconv.Atoi(strings.TrimSpace(h)); err == nil {
		d = time.Duration(s) * time.Second
	} else if t, err := http.ParseTime(h); err == nil {
		d = t.Sub(now)
	}
	return max(0, min(d, 24*time.Hour))
}

// reason is what failed, without the url.Error's "Post <url>:" that repeats the address, and
// without the addresses and resolver of the server's network (extdb.DialError).
func reason(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return extdb.DialError(err).Error()
}
