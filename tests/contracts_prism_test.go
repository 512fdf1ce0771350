package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// prismProxy is Stoplight Prism's validating proxy in front of the test server: it checks
// each request and answer against one description and reports what does not match in the
// answer's sl-violations header, as users' own Prism would.
type prismProxy struct {
	t    *testing.T
	base string
	log  *bytes.Buffer
}

// startPrism runs `prism proxy` (installed under scripts/tools/lint) for the description at
// spec, forwarding to upstream, and waits until it forwards.
// prismClient opens a connection per call: Node closes idle keep-alive connections on its
// own schedule, and a POST sent on one it has just closed fails with "connection reset"
// (seen on a loaded machine); Go retries only idempotent requests.
var prismClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

func startPrism(t *testing.T, spec, upstream string) *prismProxy {
	t.Helper()
	bin := lintTool(t, "prism")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "proxy", "--port", strconv.Itoa(port), "--host", "127.0.0.1", "--errors=false", spec, upstream)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	p := &prismProxy{t: t, base: "http://127.0.0.1:" + strconv.Itoa(port), log: &log}
	for i := 0; ; i++ { // Prism reads the description first: a few seconds on a busy machine
		r, err := prismClient.Get(p.base + "/healthz")
		if err == nil {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				return p
			}
		}
		if i == 600 {
			t.Fatalf("prism did not start: %v\n%s", err, log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// call sends a request through the proxy and fails the test on any violation Prism reports
// or on an unexpected status. body is JSON-encoded unless it is a string (sent as is).
func (p *prismProxy) call(method, path string, body any, want int, headers ...header) map[string]any {
	p.t.Helper()
	out, violations := p.send(method, path, body, want, headers...)
	if violations != "" {
		p.t.Errorf("%s %s: prism reports violations: %s", method, path, violations)
	}
	return out
}

// send is call answering Prism's violations (its sl-violations header) instead of failing.
func (p *prismProxy) send(method, path string, body any, want int, headers ...header) (map[string]any, string) {
	p.t.Helper()
	var rd io.Reader
	ctype := ""
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd, ctype = bytes.NewReader(j), "application/json"
	}
	req, _ := http.NewRequest(method, p.base+path, rd)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	for _, h := range headers {
		for k, v := range h {
			req.Header.Set(k, v)
		}
	}
	res, err := prismClient.Do(req)
	if err != nil {
		p.t.Fatalf("%s %s through prism: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		p.t.Fatalf("%s %s through prism: %d, want %d: %s", method, path, res.StatusCode, want, raw)
	}
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return out, res.Header.Get("sl-violations")
}

// TestPrismProxySmoke replays a new user's first calls through Prism's validating proxy: on
// the platform description (sign in, find the project, upload, create the dataset, read it,
// its descriptions, a SQL question, an error) and on the dataset's own description (list,
// narrow, create, read, both PATCH kinds, replace, query, aggregate, delete, a missing
// record). Prism reports no violation on either.
func TestPrismProxySmoke(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	platform, err := filepath.Abs("../gen/spec/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	px := startPrism(t, platform, e.ts.URL)
	login := px.call("POST", "/api/v1/auth/login", map[string]any{"email": adminEmail, "password": adminPassword}, 200)
	tok, _ := login["access_token"].(string)
	own := bearer(tok)
	px.call("GET", "/api/v1/auth/me", nil, 200, own)
	projects := px.call("GET", "/api/v1/projects", nil, 200, own)
	pid := e.projectID
	if ps, _ := projects["projects"].([]any); len(ps) == 0 {
		t.Fatalf("projects: %v", projects)
	}
	px.call("GET", "/api/v1/organizations", nil, 200, own)
	px.call("GET", "/api/v1/organizations/"+e.orgID+"/projects", nil, 200, own)
	body, h := multipartBody(t, "customers.csv", []byte("id,name,email,city,phone\n1,Ann,ann@example.com,Boston,+15550101\n2,Bob,bob@example.com,Oslo,+15550102\n"), nil)
	up := px.call("POST", "/api/v1/projects/"+pid+"/datasets/upload", body, 201, own, h)
	d := px.call("POST", "/api/v1/projects/"+pid+"/datasets", map[string]any{"name": "Customers", "source": map[string]any{"file_id": up["file_id"]}}, 202, own)
	id, _ := d["id"].(string)
	e.waitDataset(tok, id)
	px.call("GET", "/api/v1/projects/"+pid+"/datasets/"+id, nil, 200, own)
	px.call("GET", "/api/v1/projects/"+pid+"/datasets?limit=5", nil, 200, own)
	px.call("GET", "/api/v1/projects/"+pid+"/datasets/"+id+"/preview?limit=2", nil, 200, own)
	px.call("GET", "/api/v1/datasets/"+id+"/openapi.json", nil, 200, own)
	px.call("GET", "/api/v1/datasets/"+id+"/openapi.yaml", nil, 200, own)
	px.call("GET", "/api/v1/datasets/"+id+"/changelog", nil, 200, own)
	px.call("POST", "/api/v1/projects/"+pid+"/queries/execute", map[string]any{"type": "sql", "query": `SELECT city, count(*) AS n FROM "` + id + `" GROUP BY city ORDER BY city`}, 200, own)
	px.call("GET", "/api/v1/projects/prj_nope", nil, 404, own)

	// The dataset's own description, as its users download it.
	spec := filepath.Join(t.TempDir(), "customers.json")
	raw := e.do("GET", "/api/v1/datasets/"+id+"/openapi.json", nil, own).status(200).Body
	if err := os.WriteFile(spec, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	dx := startPrism(t, spec, e.ts.URL)
	data := "/api/v1/datasets/" + id + "/data"
	dx.call("GET", data+"?limit=1&sort=name", nil, 200, own)
	dx.call("GET", data+"?fields=name,city", nil, 200, own)
	rec := dx.call("POST", data, map[string]any{"name": "Cid", "email": "cid@example.com"}, 201, own)
	rid := strconv.FormatFloat(rec["id"].(float64), 'f', -1, 64)
	dx.call("GET", data+"/"+rid, nil, 200, own)
	dx.call("PATCH", data+"/"+rid, map[string]any{"city": "Lima"}, 200, own)
	// A JSON Patch goes straight to the server: Prism 5.16 takes every +json media type for
	// application/json and checks the array of operations against the merge-patch object
	// (stoplightio/prism#2509). The description declares both bodies apart, and the suite's
	// own validation (kin-openapi) checks this call against application/json-patch+json.
	e.do("PATCH", data+"/"+rid, `[{"op": "replace", "path": "/city", "value": "Quito"}]`, own, header{"Content-Type": "application/json-patch+json"}).status(200)
	dx.call("PUT", data+"/"+rid, map[string]any{"name": "Cid", "email": "cid@example.com", "city": "Quito"}, 200, own)
	dx.call("POST", data+"/query", map[string]any{"sql": "SELECT city, count(*) AS n FROM ${table} GROUP BY city"}, 200, own)
	dx.call("GET", data+"/aggregate?group_by=city&agg=count", nil, 200, own)
	dx.call("DELETE", data+"/"+rid, nil, 200, own)
	dx.call("GET", data+"/999999", nil, 404, own)

	// The control: the same calls against a description that says name is a number are
	// reported, so a quiet proxy means the answers matched.
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	doc["components"].(map[string]any)["schemas"].(map[string]any)["Customer"].(map[string]any)["properties"].(map[string]any)["name"] = map[string]any{"type": "integer"}
	wrong := filepath.Join(t.TempDir(), "wrong.json")
	b, _ := json.Marshal(doc)
	os.WriteFile(wrong, b, 0o644)
	if _, v := startPrism(t, wrong, e.ts.URL).send("GET", data+"/1", nil, 200, own); !strings.Contains(v, "name") {
		t.Errorf("prism reports no violation for a name that is text where the description says integer: %q", v)
	}
	if t.Failed() {
		sc := bufio.NewScanner(strings.NewReader(px.log.String() + dx.log.String()))
		for sc.Scan() {
			if strings.Contains(sc.Text(), "Violation") || strings.Contains(sc.Text(), "✖") {
				t.Log(sc.Text())
			}
		}
	}
}
