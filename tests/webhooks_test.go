package tests

import (
	"encoding/base64"
	"net/netip"
	"regexp"
	"strings"
	"testing"
	"time"

	"dataplatform/cmd/dataplatform/config"
)

func webhookNetworks(c *config.Config) {
	c.WebhookNetworks = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
}

// TestWebhookRegistration: register, list, read, change, rotate and remove webhook
// endpoints; every bad value is 400 with its field and changes nothing; addresses outside
// the public internet and DP_WEBHOOK_NETWORKS are refused, plain http only inside it; the
// secret is a Standard Webhooks secret shown once.
func TestWebhookRegistration(t *testing.T) {
	t.Parallel()
	e := newEnv(t, webhookNetworks)
	own := bearer(e.ownerToken)
	base := "/api/v1/organizations/" + e.orgID + "/webhooks"

	c := e.do("POST", base, map[string]any{"url": "http://127.0.0.1:9/hook", "description": "ops", "events": []string{"dataset.*", "query.completed"},
		"project_ids": []string{e.projectID}}, own).status(201)
	id, secret := c.str("id"), c.str("secret")
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if !strings.HasPrefix(secret, "whsec_") || err != nil || len(raw) != 24 || c.get("enabled") != true || c.len("events") != 2 ||
		c.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("create: %s", c.Body)
	}
	for _, bad := range []struct {
		body        map[string]any
		field, code string
	}{
		{map[string]any{"url": "http://127.0.0.1:9/", "events": []string{"dataset.exploded"}}, "body.events", "unknown_event"},
		{map[string]any{"url": "http://127.0.0.1:9/", "events": []string{"robots.*"}}, "body.events", "unknown_event"},
		{map[string]any{"url": "ftp://127.0.0.1/", "events": []string{"*"}}, "body.url", "format"},
		{map[string]any{"url": "http://user:pw@127.0.0.1/", "events": []string{"*"}}, "body.url", "format"},
		{map[string]any{"url": "http://10.0.0.1/", "events": []string{"*"}}, "body.url", "refused_address"},
		{map[string]any{"url": "https://169.254.169.254/latest", "events": []string{"*"}}, "body.url", "refused_address"},
		{map[string]any{"url": "http://1.1.1.1/hook", "events": []string{"*"}}, "body.url", "https_required"},
		{map[string]any{"url": "http://127.0.0.1:9/", "events": []string{"*"}, "project_ids": []string{"prj_nothere"}}, "body.project_ids", "unknown_project"},
	} {
		r := e.do("POST", base, bad.body, own).apiError(400, "VALIDATION_ERROR", bad.field, bad.code)
		if bad.code == "unknown_event" && !strings.Contains(r.str("error.details.0.message"), "query.saved") {
			t.Fatalf("unknown events should list the known ones: %s", r.Body)
		}
	}
	e.do("POST", base, map[string]any{"url": "http://127.0.0.1:9/", "events": []string{"Dataset"}}, own).apiError(400, "VALIDATION_ERROR")
	e.do("POST", base, map[string]any{"url": "https://1.1.1.1/hook", "events": []string{"*"}}, own).status(201)
	_, devTok := e.member(e.orgID, "developer")
	e.do("GET", base, nil, bearer(devTok)).authError(403, "PERMISSION_DENIED")
	e.do("POST", base, map[string]any{"url": "https://1.1.1.1/", "events": []string{"*"}}, bearer(devTok)).authError(403, "PERMISSION_DENIED")
	e.do("GET", "/api/v1/organizations/org_nothere/webhooks", nil, own).apiError(404, "NOT_FOUND")

	if l := e.do("GET", base, nil, own).status(200); l.len("webhooks") != 2 || l.get("webhooks.0.secret") != nil {
		t.Fatalf("list: %s", l.Body)
	}
	one := base + "/" + id
	if g := e.do("GET", one, nil, own).status(200); g.get("secret") != nil || g.str("project_ids.0") != e.projectID || g.get("previous_secret_expires_at") != nil {
		t.Fatalf("get: %s", g.Body)
	}
	// Changes; a bad one changes nothing.
	e.do("PATCH", one, map[string]any{"url": "http://10.1.2.3/", "enabled": false}, own).apiError(400, "VALIDATION_ERROR", "body.url", "refused_address")
	e.do("PATCH", one, map[string]any{"events": []string{"nope.nope"}}, own).apiError(400, "VALIDATION_ERROR", "body.events", "unknown_event")
	if g := e.do("GET", one, nil, own).status(200); g.get("enabled") != true || g.len("events") != 2 {
		t.Fatalf("a refused change changed something: %s", g.Body)
	}
	p := e.do("PATCH", one, map[string]any{"events": []string{"*"}, "description": "", "enabled": false, "project_ids": []string{}}, own).status(200)
	if p.get("enabled") != false || p.get("description") != nil || p.len("project_ids") != 0 || p.str("events.0") != "*" {
		t.Fatalf("patch: %s", p.Body)
	}
	// Rotation: a new secret, the old one signs for 24 hours more.
	r := e.do("POST", one+"/rotate-secret", nil, own).status(200)
	until, _ := time.Parse(time.RFC3339Nano, r.str("previous_secret_expires_at"))
	if r.str("secret") == secret || !strings.HasPrefix(r.str("secret"), "whsec_") || until.Sub(e.clock.Now()) < 23*time.Hour {
		t.Fatalf("rotate: %s", r.Body)
	}
	e.do("DELETE", one, nil, own).status(204)
	e.do("GET", one, nil, own).apiError(404, "NOT_FOUND")
	e.do("DELETE", one, nil, own).apiError(404, "NOT_FOUND")
	for _, a := range []string{"webhook.create", "webhook.update", "webhook.rotate_secret", "webhook.delete"} {
		if e.countAuditRows(e.orgID, a) == 0 {
			t.Fatalf("no audit row %s", a)
		}
	}
}

// TestWebhookURLCheckedAfterAccess: the endpoint's address is looked up only for a caller who
// manages the organization, so no one else learns what a name resolves to (404 to outsiders
// and for a made-up organization, 403 to members without organizations:manage, whatever the
// url); and no answer says what a name resolved to, or which resolver was asked.
func TestWebhookURLCheckedAfterAccess(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	base := "/api/v1/organizations/" + e.orgID + "/webhooks"
	id := e.do("POST", base, map[string]any{"url": "https://1.1.1.1/hook", "events": []string{"*"}}, own).status(201).str("id")
	other := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Other"}, own).status(201).str("id")
	_, outsider := e.member(other, "admin")
	_, dev := e.member(e.orgID, "developer")
	internal := []string{"http://localhost:9/hook", "https://localhost/hook", "http://nothing-here.invalid/", "https://10.0.0.1/"}
	for _, u := range internal {
		body := map[string]any{"url": u, "events": []string{"*"}}
		e.do("POST", base, body, bearer(outsider)).apiError(404, "NOT_FOUND")
		e.do("POST", "/api/v1/organizations/org_madeup/webhooks", body, bearer(outsider)).apiError(404, "NOT_FOUND")
		e.do("POST", "/api/v1/organizations/org_madeup/webhooks", body, own).apiError(404, "NOT_FOUND")
		e.do("POST", base, body, bearer(dev)).authError(403, "PERMISSION_DENIED")
		e.do("PATCH", base+"/"+id, map[string]any{"url": u}, bearer(outsider)).apiError(404, "NOT_FOUND")
		e.do("PATCH", "/api/v1/organizations/org_madeup/webhooks/"+id, map[string]any{"url": u}, own).apiError(404, "NOT_FOUND")
		e.do("PATCH", base+"/"+id, map[string]any{"url": u}, bearer(dev)).authError(403, "PERMISSION_DENIED")
		e.do("PATCH", base+"/wh_nothere", map[string]any{"url": u}, own).apiError(404, "NOT_FOUND")
	}
	// A manager hears that the address is refused, never where the name led.
	leak := regexp.MustCompile(`\d+\.\d+\.\d+\.\d+|::1|lookup| on `)
	for _, tc := range []struct{ url, code string }{
		{"http://localhost:9/hook", "refused_address"},
		{"https://localhost/hook", "refused_address"},
		{"https://nothing-here.invalid/", "unresolvable"},
	} {
		for _, r := range []*resp{
			e.do("POST", base, map[string]any{"url": tc.url, "events": []string{"*"}}, own),
			e.do("PATCH", base+"/"+id, map[string]any{"url": tc.url}, own),
		} {
			r.apiError(400, "VALIDATION_ERROR", "body.url", tc.code)
			if m := r.str("error.message") + r.str("error.details.0.message"); leak.MatchString(m) {
				t.Fatalf("%s: the answer tells where the name led: %s", tc.url, r.Body)
			}
		}
	}
}
