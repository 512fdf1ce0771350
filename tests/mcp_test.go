package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"dataplatform/cmd/dataplatform/config"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// headerTransport adds a credential to every request of an MCP client.
type headerTransport struct {
	h    header
	base http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header.Set(k, v)
	}
	return t.base.RoundTrip(r)
}

// mcpClient is an MCP session of the Go SDK's client with a credential; progress
// notifications are collected.
type mcpClient struct {
	t        testing.TB
	cs       *sdk.ClientSession
	mu       sync.Mutex
	progress []string
}

func (e *env) mcp(h header) *mcpClient {
	e.t.Helper()
	m := &mcpClient{t: e.t}
	c := sdk.NewClient(&sdk.Implementation{Name: "dataplatform-tests", Version: "1.0.0"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.progress = append(m.progress, r.Params.Message)
		}})
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: e.ts.URL + "/api/v1/mcp",
		HTTPClient: &http.Client{Transport: headerTransport{h, http.DefaultTransport}}, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err != nil {
		e.t.Fatalf("MCP connect: %v", err)
	}
	e.t.Cleanup(func() { cs.Close() })
	m.cs = cs
	return m
}

func (m *mcpClient) tools() []string {
	m.t.Helper()
	r, err := m.cs.ListTools(context.Background(), nil)
	if err != nil {
		m.t.Fatal(err)
	}
	var names []string
	for _, t := range r.Tools {
		if t.InputSchema == nil || t.OutputSchema == nil || t.Description == "" {
			m.t.Errorf("tool %s without input schema, output schema or description", t.Name)
		}
		names = append(names, t.Name)
	}
	slices.Sort(names)
	return names
}

// call calls a tool; it returns the structured result, or the tool error's text.
func (m *mcpClient) call(name string, args map[string]any) (map[string]any, string) {
	m.t.Helper()
	r, err := m.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, err.Error() // a protocol error (unknown tool)
	}
	if r.IsError {
		return nil, r.Content[0].(*sdk.TextContent).Text
	}
	var out map[string]any
	b, _ := json.Marshal(r.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil {
		m.t.Fatal(err)
	}
	return out, ""
}

// ok calls a tool that must succeed.
func (m *mcpClient) ok(name string, args map[string]any) map[string]any {
	m.t.Helper()
	out, e := m.call(name, args)
	if e != "" {
		m.t.Fatalf("%s: %s", name, e)
	}
	return out
}

// refused calls a tool that must fail with the API error code (one of a|b; for a protocol
// error, a message containing code).
func (m *mcpClient) refused(name string, args map[string]any, code string) string {
	m.t.Helper()
	out, e := m.call(name, args)
	if e == "" {
		m.t.Fatalf("%s succeeded, want %s: %v", name, code, out)
	}
	var env struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(e), &env) == nil && env.Error.Code != "" {
		if !slices.Contains(strings.Split(code, "|"), env.Error.Code) {
			m.t.Fatalf("%s: %s, want %s", name, e, code)
		}
	} else if !strings.Contains(e, code) {
		m.t.Fatalf("%s: %s, want %s", name, e, code)
	}
	return e
}

func jget(v any, path string) any {
	for _, p := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case []any:
			var i int
			fmt.Sscan(p, &i)
			if i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

var readTools = []string{"ask", "describe_dataset", "get_dashboard", "get_record", "list_datasets", "list_projects",
	"list_records", "list_saved_queries", "query_sql", "run_saved_query"}

func withMCPWrites(c *config.Config) { c.MCPWrites = true }

const mcpOrdersCSV = "order_id,region,amount\n1,north,10\n2,south,20\n3,north,30\n4,east,40\n5,south,50\n"

// TestMCPTools drives every tool through the Go SDK's client with an API key, and the write
// tools' gate: not listed and not callable without the key's mcp_writes (an unenforced flag
// would let the create below through and the row count change).
func TestMCPTools(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withMCPWrites)
	own := bearer(e.ownerToken)
	ds := e.uploadAndCreate(e.ownerToken, "orders", "orders.csv", mcpOrdersCSV)
	e.waitDataset(e.ownerToken, ds)
	perms := []string{"datasets:list", "datasets:read", "datasets:write", "datasets:delete", "queries:read", "queries:execute",
		"visualizations:create", "dashboards:view"}
	roKey := e.do("POST", "/api/v1/api-keys", map[string]any{"name": "agent", "permissions": perms}, own).status(201)
	if roKey.get("mcp_writes") != false {
		t.Fatalf("mcp_writes default: %s", roKey.Body)
	}
	rwKey := e.do("POST", "/api/v1/api-keys", map[string]any{"name": "agent-rw", "permissions": perms, "mcp_writes": true}, own).status(201)
	if rwKey.get("mcp_writes") != true {
		t.Fatalf("mcp_writes: %s", rwKey.Body)
	}
	ro, rw := e.mcp(apiKey(roKey.str("key"))), e.mcp(apiKey(rwKey.str("key")))
	count := func() int {
		return e.do("GET", "/api/v1/datasets/"+ds+"/data", nil, own).status(200).num("pagination.total")
	}

	// Read-only by default: the write tools are neither listed nor callable.
	if got := ro.tools(); !slices.Equal(got, readTools) {
		t.Fatalf("read-only tools: %v", got)
	}
	ro.refused("create_record", map[string]any{"dataset_id": ds, "record": map[string]any{"order_id": 9, "region": "west", "amount": 1}}, "create_record")
	ro.refused("delete_record", map[string]any{"dataset_id": ds, "id": "1"}, "delete_record")
	if n := count(); n != 5 {
		t.Fatalf("a read-only key changed data: %d records", n)
	}
	want := append(slices.Clone(readTools), "create_record", "delete_record", "generate_dashboard", "update_record")
	slices.Sort(want)
	if got := rw.tools(); !slices.Equal(got, want) {
		t.Fatalf("read-write tools: %v", got)
	}
	// An organization's keys carry the flag the same way.
	for flag, tools := range map[bool][]string{false: readTools, true: want} {
		ok := e.do("POST", "/api/v1/organizations/"+e.orgID+"/api-keys", map[string]any{"name": fmt.Sprint("org-", flag),
			"permissions": []string{"datasets:read", "datasets:write"}, "mcp_writes": flag}, own).status(201)
		if got := e.mcp(apiKey(ok.str("key"))).tools(); ok.get("mcp_writes") != flag || !slices.Equal(got, tools) {
			t.Fatalf("organization key with mcp_writes %v: %v", flag, got)
		}
	}

	// Projects and datasets.
	p := ro.ok("list_projects", map[string]any{})
	if jget(p, "projects.0.id") != e.projectID || jget(p, "pagination.total") != float64(1) {
		t.Fatalf("list_projects: %v", p)
	}
	d := ro.ok("list_datasets", map[string]any{"project_id": e.projectID, "search": "orders"})
	if jget(d, "datasets.0.id") != ds {
		t.Fatalf("list_datasets: %v", d)
	}
	desc := ro.ok("describe_dataset", map[string]any{"project_id": e.projectID, "dataset_id": ds})
	if jget(desc, "dataset.name") != "orders" || jget(desc, "schema") == nil || !strings.HasSuffix(desc["openapi_url"].(string), "/api/v1/datasets/"+ds+"/openapi.json") {
		t.Fatalf("describe_dataset: %v", desc)
	}
	table, _ := jget(desc, "dataset.table_name").(string)
	if table == "" {
		table = "orders"
	}

	// SQL with caps: max_rows and max_bytes cut, and say so.
	q := ro.ok("query_sql", map[string]any{"project_id": e.projectID, "sql": "SELECT region, sum(amount) AS total FROM " + table + " GROUP BY region ORDER BY region"})
	if q["row_count"] != float64(3) || q["truncated"] != false || jget(q, "rows.0.0") != "east" {
		t.Fatalf("query_sql: %v", q)
	}
	q = ro.ok("query_sql", map[string]any{"project_id": e.projectID, "sql": "SELECT * FROM " + table + " ORDER BY order_id", "max_rows": 2})
	if q["row_count"] != float64(2) || q["truncated"] != true || q["truncated_by"] != "max_rows" {
		t.Fatalf("query_sql max_rows: %v", q)
	}
	q = ro.ok("query_sql", map[string]any{"project_id": e.projectID, "sql": "SELECT repeat('x', 400) AS pad FROM " + table, "max_bytes": 1024})
	if q["row_count"] != float64(2) || q["truncated"] != true || q["truncated_by"] != "max_bytes" {
		t.Fatalf("query_sql max_bytes: %v", q)
	}
	ro.refused("query_sql", map[string]any{"project_id": e.projectID, "sql": "DELETE FROM " + table}, "FORBIDDEN_OPERATION")
	ro.refused("query_sql", map[string]any{"project_id": e.projectID, "sql": "SELECT 1", "max_rows": 5000}, "max_rows")
	// An argument the tool does not take is refused, not ignored.
	ro.refused("query_sql", map[string]any{"project_id": e.projectID, "sql": "SELECT 1", "format": "csv"}, "format")

	// Plain English: the answer, its SQL and assumptions; a refusal carries suggestions.
	a := ro.ok("ask", map[string]any{"project_id": e.projectID, "question": "total amount by region"})
	if a["sql"] == "" || len(a["assumptions"].([]any)) == 0 || jget(a, "answer.row_count") == float64(0) {
		t.Fatalf("ask: %v", a)
	}
	if msg := ro.refused("ask", map[string]any{"project_id": e.projectID, "question": "what is the weather like?"}, "INVALID_QUERY"); !strings.Contains(msg, "suggestions") {
		t.Fatalf("ask refusal without suggestions: %s", msg)
	}

	// Records: structured filters with the API's operators, sort, fields, cursor.
	l := ro.ok("list_records", map[string]any{"dataset_id": ds, "filters": []any{map[string]any{"field": "amount", "operator": "gte", "value": 20},
		map[string]any{"field": "region", "operator": "in", "value": []any{"south", "east"}}}, "sort": "-amount", "fields": []any{"order_id", "amount"}, "limit": 2})
	if l["total"] != float64(3) || jget(l, "records.0.order_id") != float64(5) || jget(l, "records.0.region") != nil || l["next_cursor"] == nil {
		t.Fatalf("list_records: %v", l)
	}
	l2 := ro.ok("list_records", map[string]any{"dataset_id": ds, "filters": []any{map[string]any{"field": "amount", "operator": "gte", "value": 20},
		map[string]any{"field": "region", "operator": "in", "value": []any{"south", "east"}}}, "sort": "-amount", "limit": 2, "cursor": l["next_cursor"]})
	if jget(l2, "records.0.order_id") != float64(2) {
		t.Fatalf("list_records next page: %v", l2)
	}
	ro.refused("list_records", map[string]any{"dataset_id": ds, "filters": []any{map[string]any{"field": "amount", "operator": "near", "value": 1}}}, "operator")
	ro.refused("list_records", map[string]any{"dataset_id": ds, "filters": []any{map[string]any{"field": "nope", "value": 1}}}, "VALIDATION_ERROR")
	r := ro.ok("get_record", map[string]any{"dataset_id": ds, "id": "3"})
	if jget(r, "record.region") != "north" {
		t.Fatalf("get_record: %v", r)
	}
	ro.refused("get_record", map[string]any{"dataset_id": ds, "id": "99"}, "RECORD_NOT_FOUND")

	// Writes with the key that allows them.
	c := rw.ok("create_record", map[string]any{"dataset_id": ds, "record": map[string]any{"order_id": 6, "region": "west", "amount": 60}})
	if jget(c, "record.region") != "west" || count() != 6 {
		t.Fatalf("create_record: %v", c)
	}
	rw.refused("create_record", map[string]any{"dataset_id": ds, "record": map[string]any{"order_id": "x"}}, "VALIDATION_ERROR")
	u := rw.ok("update_record", map[string]any{"dataset_id": ds, "id": "6", "changes": map[string]any{"amount": 61}})
	if jget(u, "record.amount") != float64(61) {
		t.Fatalf("update_record: %v", u)
	}
	rw.refused("update_record", map[string]any{"dataset_id": ds, "id": "6", "changes": map[string]any{"amount": 62}, "version": 1}, "OPTIMISTIC_LOCK_ERROR")
	if x := rw.ok("delete_record", map[string]any{"dataset_id": ds, "id": "6"}); x["deleted"] != true || count() != 5 {
		t.Fatalf("delete_record: %v", x)
	}

	// Saved queries.
	ex := e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/execute", map[string]any{"type": "sql",
		"query": "SELECT count(*) AS n FROM " + table + " WHERE region = {{region}}", "parameters": map[string]any{"region": "north"}}, own).status(200)
	e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/"+ex.str("query_id")+"/save", map[string]any{"name": "Orders of a region",
		"parameters": []any{map[string]any{"name": "region", "type": "string"}}}, own).status(201)
	sq := ro.ok("list_saved_queries", map[string]any{"project_id": e.projectID})
	sqID, _ := jget(sq, "saved_queries.0.id").(string)
	if sqID == "" {
		t.Fatalf("list_saved_queries: %v", sq)
	}
	rs := ro.ok("run_saved_query", map[string]any{"project_id": e.projectID, "saved_query_id": sqID, "parameters": map[string]any{"region": "south"}})
	if fmt.Sprint(jget(rs, "rows.0.0")) != "2" {
		t.Fatalf("run_saved_query: %v", rs)
	}

	// Dashboards: generation reports its phases as progress notifications.
	r0, err := rw.cs.CallTool(context.Background(), func() *sdk.CallToolParams {
		p := &sdk.CallToolParams{Name: "generate_dashboard", Arguments: map[string]any{"dataset_id": ds}}
		p.SetProgressToken("gen-1")
		return p
	}())
	if err != nil || r0.IsError {
		t.Fatalf("generate_dashboard: %v %+v", err, r0)
	}
	var gen map[string]any
	b, _ := json.Marshal(r0.StructuredContent)
	json.Unmarshal(b, &gen)
	dshID, _ := jget(gen, "dashboard.id").(string)
	if dshID == "" || gen["page_url"] != baseURL+"/dashboards/"+dshID {
		t.Fatalf("generate_dashboard: %s", b)
	}
	time.Sleep(100 * time.Millisecond) // notifications precede the result on the stream; the handler runs apart
	rw.mu.Lock()
	progress := slices.Clone(rw.progress)
	rw.mu.Unlock()
	if len(progress) < 3 {
		t.Fatalf("progress notifications: %v", progress)
	}
	g := ro.ok("get_dashboard", map[string]any{"dashboard_id": dshID})
	if jget(g, "dashboard.id") != dshID || g["page_url"] != baseURL+"/dashboards/"+dshID {
		t.Fatalf("get_dashboard: %v", g)
	}
	rw.refused("generate_dashboard", map[string]any{"dataset_id": ds, "project_id": e.projectID}, "VALIDATION_ERROR")

	// Resources and prompts.
	if lr, err := ro.cs.ListResources(context.Background(), nil); err != nil || !slices.ContainsFunc(lr.Resources, func(r *sdk.Resource) bool {
		return r.URI == baseURL+"/api/v1/datasets/"+ds+"/schema"
	}) {
		t.Fatalf("resources/list: %v", err)
	}
	res, err := ro.cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: baseURL + "/api/v1/datasets/" + ds + "/openapi.json"})
	if err != nil || !strings.Contains(res.Contents[0].Text, `"openapi"`) {
		t.Fatalf("openapi resource: %v", err)
	}
	res, err = ro.cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: baseURL + "/api/v1/datasets/" + ds + "/schema"})
	if err != nil || !strings.Contains(res.Contents[0].Text, "amount") {
		t.Fatalf("schema resource: %v", err)
	}
	for _, pr := range []struct {
		name string
		args map[string]string
	}{{"explore_dataset", map[string]string{"project_id": e.projectID, "dataset_id": ds}},
		{"answer_with_sql", map[string]string{"project_id": e.projectID, "question": "best region?"}}} {
		gp, err := ro.cs.GetPrompt(context.Background(), &sdk.GetPromptParams{Name: pr.name, Arguments: pr.args})
		if err != nil || len(gp.Messages) == 0 {
			t.Fatalf("prompt %s: %v", pr.name, err)
		}
	}

	// Every call is audited: actor, tool, arguments.
	var n int
	if err := e.st.DB.Get(&n, `SELECT count(*) FROM platform.audit_log WHERE organization_id = $1 AND action = 'mcp.tool_call'
		AND details->>'tool' = 'query_sql' AND details->'arguments'->>'sql' LIKE 'SELECT region%' AND details->>'api_key_id' = $2
		AND actor_id IS NOT NULL`, e.orgID, roKey.str("id")); err != nil || n != 1 {
		t.Fatalf("audit rows of query_sql: %d %v", n, err)
	}
	if err := e.st.DB.Get(&n, `SELECT count(*) FROM platform.audit_log WHERE action = 'mcp.tool_call' AND details->>'tool' = 'query_sql'
		AND details->>'outcome' = 'FORBIDDEN_OPERATION'`); err != nil || n != 1 {
		t.Fatalf("audit rows of a refused call: %d %v", n, err)
	}
	// So is a write tool asked of the read-only server.
	if err := e.st.DB.Get(&n, `SELECT count(*) FROM platform.audit_log WHERE organization_id = $1 AND action = 'mcp.tool_call'
		AND details->>'tool' = 'create_record' AND details->>'outcome' = 'unknown_tool' AND details->>'api_key_id' = $2`, e.orgID, roKey.str("id")); err != nil || n != 1 {
		t.Fatalf("audit rows of a write refused to a read-only key: %d %v", n, err)
	}
}

// TestMCPAccess: the REST API's rules over MCP: authentication with its challenge, the
// resource metadata, organization isolation, per-tool permissions, the server's write
// setting over a key's flag, the rate-limit category and cancellation.
func TestMCPAccess(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) { c.RateLimits = "mcp=60-M"; c.QueryConcurrency = 20 })
	own := bearer(e.ownerToken)
	ds := e.uploadAndCreate(e.ownerToken, "orders", "orders.csv", mcpOrdersCSV)
	e.waitDataset(e.ownerToken, ds)

	// No credential: 401 pointing at the resource metadata.
	req, _ := http.NewRequest("POST", e.ts.URL+"/api/v1/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 401 || !strings.Contains(res.Header.Get("WWW-Authenticate"), `resource_metadata="`+baseURL+`/.well-known/oauth-protected-resource"`) {
		t.Fatalf("unauthenticated: %d %q", res.StatusCode, res.Header.Get("WWW-Authenticate"))
	}
	// The metadata is outside the description (a document of RFC 9728, not an API operation).
	for path, resource := range map[string]string{"/.well-known/oauth-protected-resource": baseURL,
		"/.well-known/oauth-protected-resource/api/v1/mcp": baseURL + "/api/v1/mcp"} {
		res, err := http.Get(e.ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		var md map[string]any
		json.NewDecoder(res.Body).Decode(&md)
		res.Body.Close()
		if res.StatusCode != 200 || md["resource"] != resource || jget(md, "bearer_methods_supported.0") != "header" {
			t.Fatalf("resource metadata %s: %d %v", path, res.StatusCode, md)
		}
	}

	// Writes are off on this server: even a key made for them gets the read tools only.
	k := e.do("POST", "/api/v1/api-keys", map[string]any{"name": "rw", "permissions": []string{"datasets:read", "datasets:write"}, "mcp_writes": true}, own).status(201)
	if got := e.mcp(apiKey(k.str("key"))).tools(); !slices.Equal(got, readTools) {
		t.Fatalf("tools with writes off: %v", got)
	}
	owner := e.mcp(own) // a signed-in user's token works as well
	if got := owner.tools(); !slices.Equal(got, readTools) {
		t.Fatalf("owner's tools with writes off: %v", got)
	}

	// Permissions per tool: a viewer lists but may not read records or run SQL.
	_, viewerTok := e.member(e.orgID, "viewer")
	viewer := e.mcp(bearer(viewerTok))
	viewer.ok("list_datasets", map[string]any{"project_id": e.projectID})
	viewer.refused("query_sql", map[string]any{"project_id": e.projectID, "sql": "SELECT 1"}, "PERMISSION_DENIED")
	viewer.refused("list_records", map[string]any{"dataset_id": ds}, "PERMISSION_DENIED")

	// Isolation: a member of another organization only sees nothing of this one.
	other := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Elsewhere"}, own).status(201).str("id")
	_, strangerTok := e.member(other, "admin")
	stranger := e.mcp(bearer(strangerTok))
	if p := stranger.ok("list_projects", map[string]any{}); slices.ContainsFunc(p["projects"].([]any), func(x any) bool { return jget(x, "id") == e.projectID }) {
		t.Fatalf("another organization's project listed: %v", p)
	}
	if p := stranger.ok("list_projects", map[string]any{"organization_id": e.orgID}); len(p["projects"].([]any)) != 0 {
		t.Fatalf("projects of an organization the caller is not in: %v", p)
	}
	stranger.refused("describe_dataset", map[string]any{"project_id": e.projectID, "dataset_id": ds}, "NOT_FOUND|DATASET_NOT_FOUND")
	stranger.refused("query_sql", map[string]any{"project_id": e.projectID, "sql": "SELECT 1"}, "NOT_FOUND")
	stranger.refused("get_record", map[string]any{"dataset_id": ds, "id": "1"}, "NOT_FOUND|DATASET_NOT_FOUND")
	if lr, err := stranger.cs.ListResources(context.Background(), nil); err != nil || slices.ContainsFunc(lr.Resources, func(r *sdk.Resource) bool {
		return strings.Contains(r.URI, ds)
	}) {
		t.Fatalf("another organization's dataset in resources/list: %v", err)
	}
	if _, err := stranger.cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: baseURL + "/api/v1/datasets/" + ds + "/openapi.json"}); err == nil {
		t.Fatal("another organization's description read")
	}

	// Cancellation: a client that gives up ends the query in the database.
	slow := "SELECT count(*) AS slow_marker FROM orders, generate_series(1, 10000000) a, generate_series(1, 1000) b"
	running := func() (n int) {
		e.st.DB.Get(&n, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state = 'active'
			AND query LIKE '%slow_marker%' AND pid <> pg_backend_pid()`)
		return n
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := owner.cs.CallTool(ctx, &sdk.CallToolParams{Name: "query_sql", Arguments: map[string]any{"project_id": e.projectID, "sql": slow}})
		done <- err
	}()
	for i := 0; running() == 0; i++ {
		if i > 500 {
			t.Fatal("the slow query never ran")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	for i := 0; running() > 0; i++ {
		if i > 300 {
			t.Fatal("the query still runs after its client cancelled")
		}
		time.Sleep(10 * time.Millisecond)
	}

	// The user's query slots: with five of the owner's queries running over REST, query_sql
	// waits for none.
	slots, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := 0; i < 5; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body, _ := json.Marshal(map[string]any{"type": "sql", "query": slow})
			req, _ := http.NewRequestWithContext(slots, "POST", e.ts.URL+"/api/v1/projects/"+e.projectID+"/queries/execute", strings.NewReader(string(body)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+e.ownerToken)
			if res, err := http.DefaultClient.Do(req); err == nil {
				res.Body.Close()
			}
		}()
	}
	for i := 0; running() < 5; i++ {
		if i > 1000 {
			t.Fatalf("%d of the 5 slow queries run", running())
		}
		time.Sleep(10 * time.Millisecond)
	}
	owner.refused("query_sql", map[string]any{"project_id": e.projectID, "sql": "SELECT 1"}, "RATE_LIMIT_EXCEEDED")
	stop()
	wg.Wait()
	for i := 0; running() > 0; i++ {
		if i > 300 {
			t.Fatal("the slow queries still run")
		}
		time.Sleep(10 * time.Millisecond)
	}

	// The MCP server's own rate-limit category (60 a minute here).
	limited := 0
	for i := 0; i < 70 && limited == 0; i++ {
		req, _ := http.NewRequest("POST", e.ts.URL+"/api/v1/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+viewerTok)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode == 429 {
			limited++
			if res.Header.Get("X-RateLimit-Limit") != "60" {
				t.Fatalf("rate limit headers: %v", res.Header)
			}
		}
	}
	if limited == 0 {
		t.Fatal("no 429 in the mcp category")
	}
}

// mcpTS is a client of the official TypeScript SDK (scripts/tools/mcp): it lists the tools,
// calls three, cancels a slow query with an AbortSignal (a notifications/cancelled of its
// protocol version, a request of its own) and prints what it saw.
const mcpTS = `
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
const [url, key, project, dataset] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url + "/api/v1/mcp"), { requestInit: { headers: { "X-API-Key": key } } });
const client = new Client({ name: "ts-e2e", version: "1.0.0" });
await client.connect(transport);
const tools = (await client.listTools()).tools.map((t) => t.name).sort();
const projects = await client.callTool({ name: "list_projects", arguments: {} });
const q = await client.callTool({ name: "query_sql", arguments: { project_id: project, sql: "SELECT count(*) AS n FROM orders" } });
const rec = await client.callTool({ name: "get_record", arguments: { dataset_id: dataset, id: "2" } });
const bad = await client.callTool({ name: "query_sql", arguments: { project_id: project, sql: "DROP TABLE orders" } });
const ac = new AbortController();
const slow = client.callTool({ name: "query_sql", arguments: { project_id: project,
  sql: "SELECT count(*) AS slow_marker FROM orders, generate_series(1, 10000000) a, generate_series(1, 1000) b" } },
  undefined, { signal: ac.signal, timeout: 120000 }).then(() => "finished", (e) => "aborted");
await new Promise((r) => setTimeout(r, Number(process.env.ABORT_AFTER_MS || 1500)));
ac.abort();
console.log(JSON.stringify({ protocol: transport.protocolVersion, tools, project: projects.structuredContent.projects[0].id,
  n: q.structuredContent.rows[0][0], region: rec.structuredContent.record.region, bad: bad.isError && JSON.parse(bad.content[0].text).error.code,
  slow: await slow }));
await new Promise((r) => setTimeout(r, 500)); // closing aborts what the transport still sends: the cancellation
await client.close();
`

// TestMCPTypeScriptClient runs the official TypeScript SDK's client against the server.
func TestMCPTypeScriptClient(t *testing.T) {
	t.Parallel()
	modules, _ := filepath.Abs("../scripts/tools/mcp/node_modules")
	if _, err := os.Stat(filepath.Join(modules, "@modelcontextprotocol", "sdk")); err != nil {
		t.Fatalf("the TypeScript MCP SDK is not installed (scripts/ensure-node-tools.sh): %v", err)
	}
	e := newEnv(t)
	ds := e.uploadAndCreate(e.ownerToken, "orders", "orders.csv", mcpOrdersCSV)
	e.waitDataset(e.ownerToken, ds)
	key := e.do("POST", "/api/v1/api-keys", map[string]any{"name": "ts", "permissions": []string{"datasets:list", "datasets:read", "queries:execute"}},
		bearer(e.ownerToken)).status(201).str("key")
	dir := t.TempDir()
	os.Symlink(modules, filepath.Join(dir, "node_modules"))
	os.WriteFile(filepath.Join(dir, "main.mjs"), []byte(mcpTS), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := toolRunner(ctx, "")(t, dir, "node", "main.mjs", e.ts.URL, key, e.projectID, ds)
	var got struct {
		Protocol, Project, Region, Bad, Slow string
		Tools                                []string
		N                                    any
	}
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.Protocol == "" || !slices.Equal(got.Tools, readTools) || got.Project != e.projectID || fmt.Sprint(got.N) != "5" ||
		got.Region != "south" || got.Bad != "FORBIDDEN_OPERATION" || got.Slow != "aborted" {
		t.Fatalf("TypeScript client: %s", out)
	}
	// Its cancellation, sent apart from the call, ended the query in the database.
	for i := 0; ; i++ {
		var n int
		e.st.DB.Get(&n, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state = 'active'
			AND query LIKE '%slow_marker%' AND pid <> pg_backend_pid()`)
		if n == 0 {
			break
		}
		if i > 300 {
			t.Fatal("the TypeScript client's cancelled query still runs")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// BenchmarkQueryRoundTrip times one project SQL query end to end over loopback HTTP: as a
// query_sql call of an MCP client session (Go SDK) and as the same query over REST
// (POST /queries/execute), same credential, same SQL.
func BenchmarkQueryRoundTrip(b *testing.B) {
	e := newEnv(b, func(c *config.Config) { c.RateLimits = "queries=1000000000-M,mcp=1000000000-M" })
	e.setPlan(e.orgID, "enterprise")
	ds := e.uploadAndCreate(e.ownerToken, "orders", "orders.csv", mcpOrdersCSV)
	e.waitDataset(e.ownerToken, ds)
	key := e.do("POST", "/api/v1/api-keys", map[string]any{"name": "bench", "permissions": []string{"datasets:read", "queries:execute"}},
		bearer(e.ownerToken)).status(201).str("key")
	sql := "SELECT region, sum(amount) AS total FROM orders GROUP BY region ORDER BY region"
	b.Run("rest", func(b *testing.B) {
		body, _ := json.Marshal(map[string]any{"type": "sql", "query": sql})
		for b.Loop() {
			req, _ := http.NewRequest("POST", e.ts.URL+"/api/v1/projects/"+e.projectID+"/queries/execute", strings.NewReader(string(body)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-API-Key", key)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			var out map[string]any
			json.NewDecoder(res.Body).Decode(&out)
			res.Body.Close()
			if res.StatusCode != 200 || jget(out, "results.row_count") != float64(3) {
				b.Fatalf("REST: %d %v", res.StatusCode, out)
			}
		}
	})
	b.Run("mcp", func(b *testing.B) {
		m := e.mcp(apiKey(key))
		for b.Loop() {
			if out := m.ok("query_sql", map[string]any{"project_id": e.projectID, "sql": sql}); out["row_count"] != float64(3) {
				b.Fatalf("MCP: %v", out)
			}
		}
	})
}
