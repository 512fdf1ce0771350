// Package mcp is the Model Context Protocol server at /api/v1/mcp (Streamable HTTP, stateless:
// any replica answers any request). Its tools are the REST API's operations run in process
// for the caller the server authenticated (Dispatch): the same permission checks,
// organization isolation, validation, query slots and errors, never a rule of its own beside
// them. What it adds is what an agent needs on top: read-only unless writes are allowed for
// the caller, an audit row per tool call, caps on what a result puts in a model's context,
// and progress notifications for dashboard generation.
package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"dataplatform/handlers"
	"dataplatform/handlers/apierr"
	"dataplatform/handlers/auth"
	"dataplatform/handlers/reqmeta"
	"dataplatform/store"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Path is where the server answers; MetadataPath the protected resource metadata (RFC 9728).
const (
	Path         = "/api/v1/mcp"
	MetadataPath = "/.well-known/oauth-protected-resource"
)

// Dispatch runs an API operation in process (handlers.Dispatch).
type Dispatch = handlers.Dispatch

// Agents is the MCP server as the API server mounts it (a handlers.AgentsFunc).
func Agents(h *handlers.Handlers, d handlers.Dispatch, log *slog.Logger) handlers.Agents {
	m := New(Deps{Dispatch: d, Store: h.Store, BaseURL: h.Config.BaseURL, OIDCIssuer: h.Config.OIDCIssuer,
		Writes: h.Config.MCPWrites, Clock: h.Now, Log: log})
	return handlers.Agents{Path: Path, Category: "mcp", Handler: m.Handler(), Metadata: m.ProtectedResource(),
		MetadataPaths: []string{MetadataPath, MetadataPath + Path}}
}

// Deps are what the server is built from.
type Deps struct {
	Dispatch   Dispatch
	Store      *store.Store
	BaseURL    string
	OIDCIssuer string // the authorization server named in the resource metadata ("" none)
	Writes     bool   // DP_MCP_WRITES: write tools may be offered at all
	Clock      func() time.Time
	Log        *slog.Logger
}

// Server is the MCP server: one SDK server of read tools and one with the write tools too;
// each request is answered by the one its caller may use, so a write tool the caller may not
// use is neither listed nor callable (unknown tool).
type Server struct {
	d            Deps
	read, writes *sdk.Server
	handler      http.Handler
	calls        running
}

// New builds the server.
func New(d Deps) *Server {
	if d.Log == nil {
		d.Log = slog.Default()
	}
	s := &Server{d: d}
	s.read, s.writes = s.build(false), s.build(true)
	s.handler = sdk.NewStreamableHTTPHandler(s.serverFor, &sdk.StreamableHTTPOptions{
		Stateless: true,
		Logger:    d.Log,
		// Every request carries its credential in a header (or a same-origin session), which a
		// DNS-rebinding page cannot send; the check would refuse a reverse proxy on loopback
		// that keeps the public Host.
		DisableLocalhostProtection: true,
		// A client that gives up a call closes its request: the call's queries end with it.
		PropagateRequestCancellation: true,
	})
	return s
}

// Handler serves the protocol; the API's middleware has authenticated the caller.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serve) }

// serve notes which tool call a request carries, so that a later notifications/cancelled
// (another request: clients of protocols before 2026-07-28 cancel that way) ends it.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	p := auth.FromContext(r.Context())
	if r.Method == http.MethodPost && p != nil && r.Body != nil {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			status := http.StatusBadRequest
			if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
				status = http.StatusRequestEntityTooLarge
			}
			http.Error(w, "the request body could not be read: "+err.Error(), status)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				RequestID json.RawMessage `json:"requestId"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &msg) == nil {
			switch {
			case msg.Method == "tools/call" && len(msg.ID) > 0:
				r = r.WithContext(context.WithValue(r.Context(), callKey{}, p.Subject()+" "+string(msg.ID)))
				// A tool may run as long as its operation may (a dashboard's generation, a
				// query up to its timeout): past the server's write timeout for plain answers.
				_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(10 * time.Minute))
			case msg.Method == "notifications/cancelled" && len(msg.Params.RequestID) > 0:
				s.calls.cancel(p.Subject() + " " + string(msg.Params.RequestID))
			}
		}
	}
	s.handler.ServeHTTP(w, r)
}

type callKey struct{}

// running are the tool calls in progress on this server, by caller and JSON-RPC id.
type running struct {
	mu sync.Mutex
	m  map[string][]*context.CancelFunc
}

// track makes ctx cancellable by a cancellation of its call; done forgets it.
func (c *running) track(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	key, _ := ctx.Value(callKey{}).(string)
	if key == "" {
		return ctx, cancel
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string][]*context.CancelFunc{}
	}
	c.m[key] = append(c.m[key], &cancel)
	return ctx, func() {
		cancel()
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.m[key] = slices.DeleteFunc(c.m[key], func(f *context.CancelFunc) bool { return f == &cancel }); len(c.m[key]) == 0 {
			delete(c.m, key)
		}
	}
}

func (c *running) cancel(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range c.m[key] {
		(*f)()
	}
}

func (s *Server) serverFor(r *http.Request) *sdk.Server {
	if s.writesAllowed(r.Context()) {
		return s.writes
	}
	return s.read
}

// writesAllowed reports whether the caller of ctx may be offered the write tools: the server
// allows MCP writes, an API key was made with mcp_writes (a signed-in user's token needs only
// the server's setting), and the caller may write data in some organization. Each call is
// then checked per dataset by the operation it runs.
func (s *Server) writesAllowed(ctx context.Context) bool {
	p := auth.FromContext(ctx)
	if !s.d.Writes || p == nil {
		return false
	}
	if p.KeyID != "" {
		ok, err := store.APIKeyMCPWrites(ctx, s.d.Store.DB, p.KeyID)
		if err != nil || !ok {
			return false
		}
	}
	orgs, err := store.UserOrganizations(ctx, s.d.Store.DB, p.UserID)
	if err != nil {
		return false
	}
	for _, o := range orgs {
		if a := auth.AccessFor(p, o.OrgID, o.Role); a.Has("datasets:write") || a.Has("datasets:delete") || a.Has("visualizations:create") {
			return true
		}
	}
	return false
}

// ProtectedResource serves the resource metadata of RFC 9728: the API is the resource, bearer
// tokens in the Authorization header (or API keys) its credentials, the configured OpenID
// Connect issuer its authorization server.
func (s *Server) ProtectedResource() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resource := s.d.BaseURL
		if strings.HasSuffix(r.URL.Path, Path) {
			resource += Path
		}
		m := map[string]any{"resource": resource, "bearer_methods_supported": []string{"header"},
			"resource_name": "dataplatform API and MCP server", "resource_documentation": s.d.BaseURL + "/api/v1/docs"}
		if s.d.OIDCIssuer != "" {
			m["authorization_servers"] = []string{s.d.OIDCIssuer}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=3600")
		_ = json.NewEncoder(w).Encode(m)
	})
}

// toolError is a refusal as a tool's error result: the API's nested error envelope, with the
// HTTP status the REST call would have had.
type toolError struct{ e *apierr.Error }

func (t toolError) Unwrap() error { return t.e }

func (t toolError) Error() string {
	inner := map[string]any{"status": t.e.Status, "code": t.e.Code, "message": t.e.Message}
	if t.e.Details != nil {
		inner["details"] = t.e.Details
	}
	for k, v := range t.e.Extra {
		inner[k] = v
	}
	b, _ := json.Marshal(map[string]any{"error": inner})
	return string(b)
}

// refusal makes err a tool error: API errors keep their shape, anything else is internal.
func (s *Server) refusal(ctx context.Context, err error) error {
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return toolError{ae}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("the call was cancelled by the client: %w", context.Canceled)
	}
	s.d.Log.Error("MCP tool failed", "request_id", reqmeta.From(ctx).RequestID, "error", err)
	return toolError{apierr.New(http.StatusInternalServerError, apierr.CodeInternalError, "internal error (request "+reqmeta.From(ctx).RequestID+")")}
}

// answer is an in-process API answer: status, header and body, written as they come
// (onWrite sees each write, for Server-Sent Events).
type answer struct {
	h       http.Header
	status  int
	body    bytes.Buffer
	onWrite func([]byte)
}

func (a *answer) Header() http.Header {
	if a.h == nil {
		a.h = http.Header{}
	}
	return a.h
}
func (a *answer) WriteHeader(code int) {
	if a.status == 0 {
		a.status = code
	}
}
func (a *answer) Write(b []byte) (int, error) {
	if a.status == 0 {
		a.status = http.StatusOK
	}
	if a.onWrite != nil {
		a.onWrite(b)
	}
	return a.body.Write(b)
}
func (a *answer) Flush() {}

// call runs an API operation and decodes its JSON answer into out (nil: not read).
func (s *Server) call(ctx context.Context, method, target string, body any, out any) error {
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return err
		}
	}
	a := &answer{}
	if err := s.d.Dispatch(ctx, method, target, b, a); err != nil {
		return s.refusal(ctx, err)
	}
	if out == nil || a.body.Len() == 0 {
		return nil
	}
	dec := json.NewDecoder(&a.body)
	dec.UseNumber()
	if err := dec.Decode(out); err != nil {
		return s.refusal(ctx, err)
	}
	return nil
}

// secretKey names arguments that are never written to the audit log as they are.
var secretKey = regexp.MustCompile(`(?i)pass(word)?|secret|token|api_?key|authorization|credential`)

// redact is a tool's arguments as the audit log keeps them: secrets replaced, long texts cut.
func redact(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			if secretKey.MatchString(k) {
				out[k] = "[redacted]"
			} else {
				out[k] = redact(val)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = redact(val)
		}
		return out
	case string:
		if len(x) > 2000 {
			return x[:2000] + "…"
		}
	}
	return v
}

// auditCalls writes the audit row of every tools/call, refused ones included (an unknown
// tool: a write tool asked of the read-only server, say).
func (s *Server) auditCalls(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		res, err := next(ctx, method, req)
		call, ok := req.(*sdk.CallToolRequest)
		if method != "tools/call" || !ok || call.Params == nil {
			return res, err
		}
		outcome := "ok"
		r, _ := res.(*sdk.CallToolResult)
		switch {
		case ctx.Err() != nil:
			outcome = "cancelled"
		case err != nil && strings.Contains(err.Error(), "unknown tool"):
			outcome = "unknown_tool"
		case err != nil:
			outcome = "protocol_error"
		case r != nil && r.IsError:
			outcome = "error"
			if len(r.Content) > 0 {
				if t, ok := r.Content[0].(*sdk.TextContent); ok {
					var env struct {
						Error struct {
							Code string `json:"code"`
						} `json:"error"`
					}
					if json.Unmarshal([]byte(t.Text), &env) == nil && env.Error.Code != "" {
						outcome = env.Error.Code
					} else if strings.Contains(t.Text, "cancelled") {
						outcome = "cancelled"
					} else if strings.HasPrefix(t.Text, "validating") || strings.Contains(t.Text, "unmarshal") {
						outcome = "invalid_arguments"
					}
				}
			}
		}
		s.audit(ctx, call.Params.Name, call.Params.Arguments, outcome)
		return res, err
	}
}

// auditTargets are the arguments that name what a call touches, most specific first.
var auditTargets = []struct{ arg, kind string }{{"dataset_id", "dataset"}, {"dashboard_id", "dashboard"},
	{"saved_query_id", "saved_query"}, {"project_id", "project"}, {"organization_id", "organization"}}

// audit writes the audit row of a tool call: the caller, the tool, its arguments without
// secrets, the outcome, in the organization of what it touched when the caller is a member
// there (none: a call about nothing in particular, or about something the caller cannot see).
func (s *Server) audit(ctx context.Context, tool string, raw json.RawMessage, outcome string) {
	p := auth.FromContext(ctx)
	if p == nil {
		return
	}
	ctx = context.WithoutCancel(ctx) // a cancelled call is still recorded
	var args map[string]any
	_ = json.Unmarshal(raw, &args)
	details := map[string]any{"tool": tool, "arguments": redact(args), "outcome": outcome}
	if p.KeyID != "" {
		details["api_key_id"] = p.KeyID
	}
	org := ""
	for _, t := range auditTargets {
		id, _ := args[t.arg].(string)
		if id == "" {
			continue
		}
		if t.kind == "organization" {
			if _, err := store.Role(ctx, s.d.Store.DB, id, p.UserID); err == nil {
				org = id
			}
		} else if o, err := store.MemberOrgOf(ctx, s.d.Store.DB, t.kind, id, p.UserID); err == nil {
			org = o
			details["target"] = map[string]any{"type": t.kind, "id": id}
		}
		break
	}
	m := reqmeta.From(ctx)
	e := store.AuditEntry{OrgID: org, ActorID: p.UserID, ActorEmail: p.Email, Action: "mcp.tool_call", ResourceType: "mcp_tool",
		ResourceID: tool, ResourceName: tool, Details: details, IP: m.IP, UserAgent: m.UserAgent, At: s.d.Clock()}
	if err := store.Audit(ctx, s.d.Store.DB, e); err != nil {
		s.d.Log.Warn("MCP audit row not written", "tool", tool, "error", err)
	}
}

// addTool registers a tool: its calls can be cancelled by a notification (running), and a
// refusal is a tool error in the API's shape.
func addTool[In, Out any](srv *Server, s *sdk.Server, t *sdk.Tool, h func(context.Context, *sdk.CallToolRequest, In) (Out, error)) {
	sdk.AddTool(s, t, func(ctx context.Context, req *sdk.CallToolRequest, in In) (*sdk.CallToolResult, Out, error) {
		ctx, done := srv.calls.track(ctx)
		defer done()
		out, err := h(ctx, req, in)
		if err != nil {
			err = srv.refusal(ctx, err)
		}
		return nil, out, err
	})
}
