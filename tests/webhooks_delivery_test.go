package tests

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"dataplatform/cmd/dataplatform/config"
	"dataplatform/handlers"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// received is one request a receiver got.
type received struct {
	ID, Timestamp, Signature, UserAgent, ContentType string
	Body                                             []byte
	Type                                             string
	Data                                             map[string]any
}

// receiver is a webhook endpoint the test runs: it records every request and answers with
// what answer says (200 unless set).
type receiver struct {
	t      testing.TB
	srv    *httptest.Server
	mu     sync.Mutex
	got    []received
	answer func(n int, h http.Header) int // n counts requests from 1; h: the answer's headers
}

func newReceiver(t testing.TB) *receiver { return newReceiverAt(t, "127.0.0.1") }

// newReceiverAt is a receiver listening on another address.
func newReceiverAt(t testing.TB, addr string) *receiver {
	rc := &receiver{t: t}
	l, err := net.Listen("tcp", addr+":0")
	if err != nil {
		t.Fatal(err)
	}
	rc.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		}
		json.Unmarshal(b, &m)
		rc.mu.Lock()
		rc.got = append(rc.got, received{ID: r.Header.Get("webhook-id"), Timestamp: r.Header.Get("webhook-timestamp"),
			Signature: r.Header.Get("webhook-signature"), UserAgent: r.Header.Get("User-Agent"), ContentType: r.Header.Get("Content-Type"),
			Body: b, Type: m.Type, Data: m.Data})
		n, answer := len(rc.got), rc.answer
		rc.mu.Unlock()
		code := 200
		if answer != nil {
			code = answer(n, w.Header())
		}
		w.WriteHeader(code)
		io.WriteString(w, `{"ok":true}`)
	}))
	rc.srv.Listener.Close()
	rc.srv.Listener = l
	rc.srv.Start()
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) setAnswer(f func(n int, h http.Header) int) {
	rc.mu.Lock()
	rc.answer = f
	rc.mu.Unlock()
}

func (rc *receiver) all() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.got)
}

// waitFor waits until done holds for what arrived (up to 30 s).
func (rc *receiver) waitFor(what string, done func([]received) bool) []received {
	rc.t.Helper()
	for start := time.Now(); time.Since(start) < 30*time.Second; time.Sleep(20 * time.Millisecond) {
		if got := rc.all(); done(got) {
			return got
		}
	}
	got := rc.all()
	var types []string
	for _, g := range got {
		types = append(types, g.Type)
	}
	rc.t.Fatalf("receiver %s: waited in vain for %s; got %d: %v", rc.srv.URL, what, len(got), types)
	return nil
}

// count waits for n requests.
func (rc *receiver) count(n int) []received {
	rc.t.Helper()
	return rc.waitFor(fmt.Sprintf("%d requests", n), func(g []received) bool { return len(g) >= n })
}

// types are the distinct event types received, sorted.
func types(got []received) []string {
	var ts []string
	for _, g := range got {
		if !slices.Contains(ts, g.Type) {
			ts = append(ts, g.Type)
		}
	}
	sort.Strings(ts)
	return ts
}

// verify checks every request with the Standard Webhooks reference library and returns the
// number that verify under secret.
func verify(t testing.TB, secret string, got []received, checkTime bool) int {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	ok := 0
	for _, g := range got {
		h := http.Header{}
		h.Set("webhook-id", g.ID)
		h.Set("webhook-timestamp", g.Timestamp)
		h.Set("webhook-signature", g.Signature)
		if checkTime {
			err = wh.Verify(g.Body, h)
		} else {
			err = wh.VerifyIgnoringTimestamp(g.Body, h)
		}
		if err == nil {
			ok++
		}
	}
	return ok
}

func (e *env) createWebhook(orgID, url string, events []string, extra map[string]any) (id, secret string) {
	e.t.Helper()
	body := map[string]any{"url": url, "events": events}
	for k, v := range extra {
		body[k] = v
	}
	r := e.do("POST", "/api/v1/organizations/"+orgID+"/webhooks", body, bearer(e.ownerToken)).status(201)
	return r.str("id"), r.str("secret")
}

// TestWebhookDeliveryEveryKind: every event kind that an operation causes arrives,
// once per matching endpoint, signed as the Standard Webhooks reference library verifies,
// with the payload shape {type, timestamp, data}; filters by kind, wildcard and project hold.
func TestWebhookDeliveryEveryKind(t *testing.T) {
	t.Parallel()
	e, customers, _ := queryFixtureWith(t, webhookNetworks)
	own := bearer(e.ownerToken)
	all, datasets, teams := newReceiver(t), newReceiver(t), newReceiver(t)
	allID, allSecret := e.createWebhook(e.orgID, all.srv.URL+"/hook?token=abc", []string{"*"}, nil)
	_, dsSecret := e.createWebhook(e.orgID, datasets.srv.URL, []string{"dataset.*"}, map[string]any{"project_ids": []string{e.projectID}})
	_, teamSecret := e.createWebhook(e.orgID, teams.srv.URL, []string{"team.created", "team.deleted"}, nil)

	// organization.updated
	e.do("PATCH", "/api/v1/organizations/"+e.orgID, map[string]any{"name": "Renamed Org"}, own).status(200)
	// user.invited, user.joined, user.removed
	email, _ := e.member(e.orgID, "viewer")
	e.do("DELETE", "/api/v1/organizations/"+e.orgID+"/users/"+e.userIDOf(email), nil, own).status(204)
	// team.created, team.updated, team.deleted
	tm := e.do("POST", "/api/v1/organizations/"+e.orgID+"/teams", map[string]any{"name": "Analysts"}, own).status(201)
	e.do("PATCH", "/api/v1/organizations/"+e.orgID+"/teams/"+tm.str("id"), map[string]any{"description": "numbers"}, own).status(200)
	e.do("DELETE", "/api/v1/organizations/"+e.orgID+"/teams/"+tm.str("id"), nil, own).status(204)
	// dataset.created, dataset.processing, dataset.ready; dataset.failed; dataset.deleted
	good := e.uploadAndCreate(e.ownerToken, "Later", "later.csv", "a,b\n1,2\n")
	e.waitDataset(e.ownerToken, good)
	bad := e.uploadAndCreate(e.ownerToken, "Ragged", "bad.csv", "a,b,c\n1,2,3\n4,5\n")
	e.waitDataset(e.ownerToken, bad)
	e.do("DELETE", "/api/v1/projects/"+e.projectID+"/datasets/"+customers, nil, own).status(200)
	// query.started, query.completed, query.failed, query.saved
	q := e.execute(map[string]any{"query": "SELECT count(*) FROM sales_orders"}, e.ownerToken).status(200)
	e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/"+q.str("query_id")+"/save", map[string]any{"name": "Count"}, own).status(201)
	e.execute(map[string]any{"query": "SELECT 1 / (count(*) - count(*)) FROM sales_orders"}, e.ownerToken)
	// A dataset of another project reaches "*" but not the project-filtered endpoint.
	home := e.projectID
	e.projectID = e.do("POST", "/api/v1/organizations/"+e.orgID+"/projects", map[string]any{"name": "Elsewhere"}, own).status(201).str("id")
	e.waitDataset(e.ownerToken, e.uploadAndCreate(e.ownerToken, "Elsewhere", "else.csv", "x\n1\n"))
	elsewhere := e.projectID
	e.projectID = home

	want := []string{"dataset.created", "dataset.deleted", "dataset.failed", "dataset.processing", "dataset.ready", "organization.updated",
		"query.completed", "query.failed", "query.saved", "query.started", "team.created", "team.deleted", "team.updated",
		"user.invited", "user.joined", "user.removed"}
	all.waitFor("every kind", func(g []received) bool { return slices.Equal(types(g), want) })
	datasets.waitFor("dataset kinds", func(g []received) bool { return len(types(g)) == 5 })
	teams.waitFor("team kinds", func(g []received) bool { return len(g) >= 2 })

	// Once per endpoint: as many deliveries as events of the organization since the endpoint
	// was made; no id twice.
	var events int
	e.st.DB.Get(&events, `SELECT count(*) FROM platform.outbox WHERE organization_id = $1
		AND id > (SELECT since_event FROM platform.webhooks WHERE id = $2)`, e.orgID, allID)
	all.count(events)
	time.Sleep(300 * time.Millisecond)
	got, dsGot, teamGot := all.all(), datasets.all(), teams.all()
	ids := map[string]bool{}
	for _, g := range got {
		if ids[g.ID] {
			t.Fatalf("webhook-id %s arrived twice", g.ID)
		}
		ids[g.ID] = true
	}
	if len(got) != events {
		t.Fatalf("the * endpoint got %d requests for %d events", len(got), events)
	}
	if n := verify(t, allSecret, got, true); n != len(got) {
		t.Fatalf("%d of %d deliveries verify with the reference library", n, len(got))
	}
	if verify(t, dsSecret, got, true) != 0 {
		t.Fatal("a delivery verifies under another endpoint's secret")
	}
	if verify(t, dsSecret, dsGot, true) != len(dsGot) || verify(t, teamSecret, teamGot, true) != len(teamGot) {
		t.Fatal("deliveries to the filtered endpoints do not verify")
	}
	for _, g := range dsGot {
		if !strings.HasPrefix(g.Type, "dataset.") || g.Data["project_id"] != e.projectID {
			t.Fatalf("the project-filtered dataset.* endpoint got %s of %v", g.Type, g.Data["project_id"])
		}
	}
	if !slices.ContainsFunc(got, func(g received) bool { return g.Data["project_id"] == elsewhere }) {
		t.Fatal("the * endpoint did not get the other project's dataset events")
	}
	if !slices.Equal(types(teamGot), []string{"team.created", "team.deleted"}) || len(teamGot) != 2 {
		t.Fatalf("the team endpoint got %v", types(teamGot))
	}
	for _, g := range got {
		var m map[string]any
		if err := json.Unmarshal(g.Body, &m); err != nil || len(m) != 3 || m["type"] != g.Type || g.Data["organization_id"] != e.orgID ||
			g.ContentType != "application/json" || !strings.HasPrefix(g.UserAgent, "dataplatform-webhooks/") || !strings.HasPrefix(g.ID, "msg_") {
			t.Fatalf("message: %s %v", g.Body, g)
		}
		if _, err := time.Parse(time.RFC3339Nano, m["timestamp"].(string)); err != nil {
			t.Fatalf("timestamp: %s", g.Body)
		}
	}

	// The delivery log says the same, and a delivery shows its message and attempts.
	base := "/api/v1/organizations/" + e.orgID + "/webhooks/" + allID
	l := e.do("GET", base+"/deliveries?status=succeeded&limit=100", nil, own).status(200)
	if l.num("pagination.total") != events || l.str("deliveries.0.status") != "succeeded" || l.num("deliveries.0.attempts") != 1 {
		t.Fatalf("deliveries: %s", l.Body)
	}
	if f := e.do("GET", base+"/deliveries?event_type=team.*", nil, own).status(200); f.num("pagination.total") != 3 {
		t.Fatalf("team.* deliveries: %s", f.Body)
	}
	if f := e.do("GET", base+"/deliveries?status=failed", nil, own).status(200); f.num("pagination.total") != 0 {
		t.Fatalf("failed deliveries: %s", f.Body)
	}
	d := e.do("GET", base+"/deliveries/"+got[0].ID, nil, own).status(200)
	if d.str("payload.type") != got[0].Type || d.len("attempt_history") != 1 || d.num("attempt_history.0.response_status") != 200 ||
		d.str("attempt_history.0.response_body") != `{"ok":true}` {
		t.Fatalf("delivery: %s", d.Body)
	}
	e.do("GET", base+"/deliveries?status=lost", nil, own).apiError(400, "VALIDATION_ERROR")
	e.do("GET", base+"/deliveries/msg_nothere", nil, own).apiError(404, "NOT_FOUND")
	_, devTok := e.member(e.orgID, "developer")
	e.do("GET", base+"/deliveries", nil, bearer(devTok)).authError(403, "PERMISSION_DENIED")
}

// TestWebhookOrganizationDeleted: deleting an organization sends organization.deleted to its
// endpoints (retired, not removed with it), and nothing after.
func TestWebhookOrganizationDeleted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, webhookNetworks)
	own := bearer(e.ownerToken)
	org := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Short Lived"}, own).status(201).str("id")
	rc := newReceiver(t)
	_, secret := e.createWebhook(org, rc.srv.URL, []string{"organization.*"}, nil)
	e.do("DELETE", "/api/v1/organizations/"+org, map[string]any{"confirmation": "short-lived"}, own).status(200)
	got := rc.count(1)
	if got[0].Type != "organization.deleted" || got[0].Data["id"] != org || verify(t, secret, got, true) != 1 {
		t.Fatalf("got %v", got)
	}
}

// TestWebhookRetries: a receiver that is down gets everything once it is back, in order,
// with the same webhook-id on every attempt; the schedule is followed (fake clock) and shown
// in the delivery log; 410 and 400 are not retried; 429's Retry-After is honoured.
func TestWebhookRetries(t *testing.T) {
	t.Parallel()
	e := newEnv(t, webhookNetworks)
	own := bearer(e.ownerToken)
	rc := newReceiver(t)
	down := true
	var mu sync.Mutex
	rc.setAnswer(func(n int, h http.Header) int {
		mu.Lock()
		defer mu.Unlock()
		if down {
			return 503
		}
		return 200
	})
	id, secret := e.createWebhook(e.orgID, rc.srv.URL, []string{"team.*"}, nil)
	base := "/api/v1/organizations/" + e.orgID + "/webhooks/" + id
	var names []string
	for i := range 5 {
		name := "Team " + string(rune('A'+i))
		names = append(names, name)
		e.do("POST", "/api/v1/organizations/"+e.orgID+"/teams", map[string]any{"name": name}, own).status(201)
	}
	// The first attempt fails; the rest of the queue waits behind it rather than each failing.
	first := rc.count(1)
	time.Sleep(300 * time.Millisecond)
	if n := len(rc.all()); n != 1 {
		t.Fatalf("%d attempts while the endpoint is failing, want 1 (the others wait their turn)", n)
	}
	l := e.waitDeliveries(base, func(l *resp) bool { return l.num("deliveries.4.attempts") == 1 })
	next, _ := time.Parse(time.RFC3339Nano, l.str("deliveries.4.next_attempt_at"))
	if wait := next.Sub(e.clock.Now()); wait < 4*time.Second || wait > 6*time.Second || l.str("deliveries.4.last_error") != "answered 503" ||
		l.num("deliveries.4.last_response_status") != 503 || l.str("deliveries.4.status") != "pending" {
		t.Fatalf("after the first failure: next attempt in %s; %s", wait, l.Body)
	}
	// Still down at the second attempt; the third waits about 5 minutes.
	e.clock.Advance(6 * time.Second)
	e.srv.Webhooks.Poke()
	rc.count(2)
	e.waitDeliveries(base, func(l *resp) bool { return l.num("deliveries.4.attempts") == 2 })
	if got := rc.all(); got[1].ID != first[0].ID {
		t.Fatal("a retry carries another webhook-id")
	}
	e.clock.Advance(time.Minute)
	e.srv.Webhooks.Poke()
	time.Sleep(200 * time.Millisecond)
	if len(rc.all()) != 2 {
		t.Fatal("retried before its time")
	}
	if w := e.do("GET", base, nil, own).status(200); w.get("failing_since") == nil {
		t.Fatalf("failing_since: %s", w.Body)
	}
	// Back up: everything arrives, in event order.
	mu.Lock()
	down = false
	mu.Unlock()
	e.clock.Advance(5 * time.Minute)
	e.srv.Webhooks.Poke()
	got := rc.waitFor("all five teams", func(g []received) bool { return len(g) == 2+5 })
	var order []string
	for _, g := range got[2:] {
		order = append(order, g.Data["name"].(string))
	}
	if !slices.Equal(order, names) || verify(t, secret, got, false) != len(got) {
		t.Fatalf("order %v, want %v", order, names)
	}
	e.waitDeliveries(base+"?status=succeeded", func(l *resp) bool { return l.num("pagination.total") == 5 })
	d := e.do("GET", base+"/deliveries/"+first[0].ID, nil, own).status(200)
	if d.str("status") != "succeeded" || d.num("attempts") != 3 || d.len("attempt_history") != 3 || d.num("attempt_history.0.response_status") != 503 {
		t.Fatalf("delivery after recovery: %s", d.Body)
	}
	if w := e.do("GET", base, nil, own).status(200); w.get("failing_since") != nil {
		t.Fatalf("failing_since after a success: %s", w.Body)
	}
	// The metrics count attempts by outcome (the registry is the process's, shared by the
	// tests running beside this one: the series must exist, and the retries be counted).
	rec := httptest.NewRecorder()
	handlers.MetricsHandler.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, series := range []string{`dataplatform_webhook_attempts_total{outcome="retry"}`, `dataplatform_webhook_attempts_total{outcome="succeeded"}`,
		"dataplatform_webhook_deliveries_created_total", "dataplatform_webhook_queue_age_seconds", "dataplatform_webhook_delivery_latency_seconds_count"} {
		if !strings.Contains(rec.Body.String(), series) {
			t.Fatalf("/metrics lacks %s", series)
		}
	}

	// 410 and 400 are given up at once; 429 waits what Retry-After says.
	rc.setAnswer(func(n int, h http.Header) int {
		switch n {
		case 8:
			return 410
		case 9:
			return 400
		case 10:
			return 429
		case 11:
			h.Set("Retry-After", "120")
			return 429
		}
		return 200
	})
	for _, name := range []string{"Gone", "Bad"} {
		e.do("POST", "/api/v1/organizations/"+e.orgID+"/teams", map[string]any{"name": name}, own).status(201)
	}
	rc.count(9)
	failed := e.waitDeliveries(base+"?status=failed", func(l *resp) bool { return l.num("pagination.total") == 2 })
	if failed.num("deliveries.0.attempts") != 1 || failed.num("deliveries.1.attempts") != 1 || failed.get("deliveries.0.next_attempt_at") != nil ||
		!strings.Contains(failed.str("deliveries.1.last_error"), "410") {
		t.Fatalf("410/400: %s", failed.Body)
	}
	e.clock.Advance(time.Hour)
	e.srv.Webhooks.Poke()
	time.Sleep(200 * time.Millisecond)
	if len(rc.all()) != 9 {
		t.Fatal("a 410 or 400 was retried")
	}
	e.ownerToken = e.login(adminEmail, adminPassword, "").str("access_token")
	own = bearer(e.ownerToken)
	e.do("POST", "/api/v1/organizations/"+e.orgID+"/teams", map[string]any{"name": "Busy"}, own).status(201)
	rc.count(10)
	busy := e.waitDeliveries(base+"?status=pending", func(l *resp) bool { return l.num("pagination.total") == 1 && l.num("deliveries.0.attempts") == 1 })
	next, _ = time.Parse(time.RFC3339Nano, busy.str("deliveries.0.next_attempt_at"))
	if wait := next.Sub(e.clock.Now()); wait < 4*time.Second || wait > 6*time.Second {
		t.Fatalf("429 without Retry-After: next in %s", wait)
	}
	e.clock.Advance(6 * time.Second)
	e.srv.Webhooks.Poke()
	rc.count(11)
	busy = e.waitDeliveries(base+"?status=pending", func(l *resp) bool { return l.num("deliveries.0.attempts") == 2 })
	next, _ = time.Parse(time.RFC3339Nano, busy.str("deliveries.0.next_attempt_at"))
	if wait := next.Sub(e.clock.Now()); wait < 120*time.Second-time.Millisecond || wait > 120*time.Second+time.Millisecond {
		t.Fatalf("429 with Retry-After: 120: next in %s", wait)
	}
	e.clock.Advance(2 * time.Minute)
	e.srv.Webhooks.Poke()
	rc.count(12)

	// Redeliver a failed one: the same id again, now.
	gone := failed.str("deliveries.1.id")
	r := e.do("POST", base+"/deliveries/"+gone+"/redeliver", nil, own).status(202)
	if r.str("status") != "pending" {
		t.Fatalf("redeliver: %s", r.Body)
	}
	e.clock.Advance(10 * time.Second)
	e.srv.Webhooks.Poke()
	rc.waitFor("the redelivery", func(g []received) bool {
		return slices.ContainsFunc(g[12:], func(x received) bool { return x.ID == gone })
	})
	if e.countAuditRows(e.orgID, "webhook.redeliver") != 1 {
		t.Fatal("redelivery not audited")
	}
	e.do("POST", base+"/deliveries/msg_nothere/redeliver", nil, own).apiError(404, "NOT_FOUND")
}

// waitDeliveries polls a delivery list until done holds.
func (e *env) waitDeliveries(path string, done func(*resp) bool) *resp {
	e.t.Helper()
	p, q, _ := strings.Cut(path, "?")
	url := p + "/deliveries"
	if q != "" {
		url += "?" + q
	}
	for start := time.Now(); time.Since(start) < 30*time.Second; time.Sleep(20 * time.Millisecond) {
		if l := e.do("GET", url, nil, bearer(e.ownerToken)).status(200); done(l) {
			return l
		}
	}
	e.t.Fatalf("deliveries of %s never reached the state wanted: %s", path, e.do("GET", url, nil, bearer(e.ownerToken)).Body)
	return nil
}

// TestWebhookSafety: an endpoint whose name now resolves to a refused address is never
// contacted (the check is on the address dialled); rotation signs with both secrets for a
// day; a test ping arrives; an endpoint failing too long is disabled, logs the events of that
// time as failed (to redeliver), and sends again once enabled.
func TestWebhookSafety(t *testing.T) {
	t.Parallel()
	e := newEnv(t, webhookNetworks, func(c *config.Config) { c.WebhookDisableFailures = 3 })
	own := bearer(e.ownerToken)
	rc := newReceiver(t)
	id, oldSecret := e.createWebhook(e.orgID, rc.srv.URL, []string{"team.*"}, nil)
	base := "/api/v1/organizations/" + e.orgID + "/webhooks/" + id

	// The test ping.
	p := e.do("POST", base+"/test", nil, own).status(202)
	got := rc.count(1)
	if got[0].Type != "webhook.ping" || got[0].ID != p.str("id") || verify(t, oldSecret, got, true) != 1 {
		t.Fatalf("ping: %v", got[0])
	}
	// Rotation: both signatures for 24 hours, then only the new one.
	newSecret := e.do("POST", base+"/rotate-secret", nil, own).status(200).str("secret")
	e.do("POST", "/api/v1/organizations/"+e.orgID+"/teams", map[string]any{"name": "Rotated"}, own).status(201)
	got = rc.count(2)
	if verify(t, oldSecret, got[1:], true) != 1 || verify(t, newSecret, got[1:], true) != 1 || len(strings.Fields(got[1].Signature)) != 2 {
		t.Fatalf("after rotation: %q", got[1].Signature)
	}
	// (Moving the clock a day while a sender holds the endpoint would end its lease.)
	e.waitDeliveries(base+"?status=succeeded", func(l *resp) bool { return l.num("pagination.total") == 2 })
	e.clock.Advance(25 * time.Hour)
	e.ownerToken = e.login(adminEmail, adminPassword, "").str("access_token")
	own = bearer(e.ownerToken)
	e.do("POST", "/api/v1/organizations/"+e.orgID+"/teams", map[string]any{"name": "Later"}, own).status(201)
	got = rc.count(3)
	if verify(t, oldSecret, got[2:], false) != 0 || verify(t, newSecret, got[2:], false) != 1 || len(strings.Fields(got[2].Signature)) != 1 {
		t.Fatalf("a day after rotation: %q", got[2].Signature)
	}

	// An address outside DP_WEBHOOK_NETWORKS (127.0.0.1/32 here) is refused where it is
	// dialled: the endpoint now points at 127.0.0.2, as a changed DNS answer would.
	trap := newReceiverAt(t, "127.0.0.2")
	if _, err := e.st.DB.Exec(`UPDATE platform.webhooks SET url = $2 WHERE id = $1`, id, trap.srv.URL); err != nil {
		t.Fatal(err)
	}
	e.do("POST", "/api/v1/organizations/"+e.orgID+"/teams", map[string]any{"name": "Trap"}, own).status(201)
	refused := e.waitDeliveries(base+"?status=failed", func(l *resp) bool { return l.num("pagination.total") == 1 })
	if !strings.Contains(refused.str("deliveries.0.last_error"), "refused address") || len(trap.all()) != 0 {
		t.Fatalf("refused: %s (trap got %d)", refused.Body, len(trap.all()))
	}
	// Two more given up in a row disable the endpoint (DP_WEBHOOK_DISABLE_FAILURES=3).
	for _, n := range []string{"Trap 2", "Trap 3"} {
		e.do("POST", "/api/v1/organizations/"+e.orgID+"/teams", map[string]any{"name": n}, own).status(201)
	}
	w := e.waitWebhook(base, func(w *resp) bool { return w.get("enabled") == false })
	if !strings.Contains(w.str("disabled_reason"), "3 deliveries in a row") || e.countAuditRows(e.orgID, "webhook.disable") != 1 || len(trap.all()) != 0 {
		t.Fatalf("disabled: %s", w.Body)
	}
	// Disabled: new events are logged, not sent; a test says why.
	e.do("POST", "/api/v1/organizations/"+e.orgID+"/teams", map[string]any{"name": "While Off"}, own).status(201)
	e.do("POST", base+"/test", nil, own).apiError(409, "CONFLICT")
	// What happened while it was disabled is in the log, failed, not sent (waited for before
	// enabling it again: fanned out after that, the event would be sent instead).
	l := e.waitDeliveries(base+"?status=failed", func(l *resp) bool { return l.num("pagination.total") == 4 })
	if l.get("deliveries.0.attempts") != 0.0 || !strings.Contains(l.str("deliveries.0.last_error"), "disabled") ||
		!strings.Contains(l.str("deliveries.1.last_error"), "refused address") {
		t.Fatalf("failed deliveries: %s", l.Body)
	}
	// Fixed and enabled again: the failed ones can be redelivered.
	if _, err := e.st.DB.Exec(`UPDATE platform.webhooks SET url = $2 WHERE id = $1`, id, rc.srv.URL); err != nil {
		t.Fatal(err)
	}
	if w := e.do("PATCH", base, map[string]any{"enabled": true}, own).status(200); w.get("disabled_reason") != nil || w.get("failing_since") != nil {
		t.Fatalf("enable: %s", w.Body)
	}
	e.do("POST", base+"/deliveries/"+l.str("deliveries.1.id")+"/redeliver", nil, own).status(202)
	got = rc.count(4)
	if got[3].Data["name"] != "Trap 3" || len(trap.all()) != 0 {
		t.Fatalf("after enabling: %v", got[3].Data)
	}
	time.Sleep(200 * time.Millisecond)
	if len(rc.all()) != 4 {
		t.Fatal("an event from while the endpoint was disabled was delivered")
	}
}

// waitWebhook polls an endpoint until done holds.
func (e *env) waitWebhook(path string, done func(*resp) bool) *resp {
	e.t.Helper()
	for start := time.Now(); time.Since(start) < 30*time.Second; time.Sleep(20 * time.Millisecond) {
		if w := e.do("GET", path, nil, bearer(e.ownerToken)).status(200); done(w) {
			return w
		}
	}
	e.t.Fatalf("webhook %s never reached the state wanted", path)
	return nil
}

// TestWebhookTimeout: an endpoint that does not answer within DP_WEBHOOK_TIMEOUT is retried
// on the schedule; the attempt says why.
func TestWebhookTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t, webhookNetworks, func(c *config.Config) { c.WebhookTimeout = 300 * time.Millisecond })
	slow := make(chan struct{})
	rc := newReceiver(t)
	rc.setAnswer(func(n int, h http.Header) int {
		if n == 1 {
			<-slow
		}
		return 200
	})
	defer close(slow)
	id, _ := e.createWebhook(e.orgID, rc.srv.URL, []string{"*"}, nil)
	base := "/api/v1/organizations/" + e.orgID + "/webhooks/" + id
	e.do("POST", base+"/test", nil, bearer(e.ownerToken)).status(202)
	l := e.waitDeliveries(base, func(l *resp) bool { return l.num("deliveries.0.attempts") == 1 })
	next, _ := time.Parse(time.RFC3339Nano, l.str("deliveries.0.next_attempt_at"))
	if l.str("deliveries.0.last_error") != "no answer within 300ms" || l.get("deliveries.0.last_response_status") != nil ||
		l.str("deliveries.0.status") != "pending" || next.Sub(e.clock.Now()) < 4*time.Second {
		t.Fatalf("after a timeout: %s", l.Body)
	}
	e.clock.Advance(6 * time.Second)
	e.srv.Webhooks.Poke()
	e.waitDeliveries(base, func(l *resp) bool {
		return l.str("deliveries.0.status") == "succeeded" && l.num("deliveries.0.attempts") == 2
	})
}
