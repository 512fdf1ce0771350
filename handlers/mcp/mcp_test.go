package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"dataplatform/handlers/apierr"
)

func TestRedact(t *testing.T) {
	got := redact(map[string]any{"sql": "SELECT 1", "password": "p", "nested": []any{map[string]any{"api_key": "dpk_x", "Token": "t"}},
		"long": strings.Repeat("x", 3000)})
	b, _ := json.Marshal(got)
	s := string(b)
	for _, secret := range []string{`"p"`, "dpk_x", `"t"`} {
		if strings.Contains(s, secret) {
			t.Fatalf("secret %s kept: %s", secret, s)
		}
	}
	if !strings.Contains(s, "SELECT 1") || strings.Count(s, "x") > 2100 {
		t.Fatalf("redacted: %s", s)
	}
}

func TestFilterValue(t *testing.T) {
	for _, c := range []struct {
		in   any
		want string
	}{{nil, "null"}, {"a", "a"}, {float64(2.5), "2.5"}, {float64(3), "3"}, {true, "true"},
		{[]any{"south", float64(1)}, "south,1"}, {json.Number("12345678901234567890"), "12345678901234567890"}} {
		if got := filterValue(c.in); got != c.want {
			t.Errorf("filterValue(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestCapped(t *testing.T) {
	e := &executed{QueryID: "q_1"}
	e.Results = &struct {
		Columns   []map[string]any `json:"columns"`
		Rows      [][]any          `json:"rows"`
		Truncated bool             `json:"truncated"`
	}{Columns: []map[string]any{{"name": "x"}}}
	for i := 0; i < 10; i++ {
		e.Results.Rows = append(e.Results.Rows, []any{strings.Repeat("y", 200)})
	}
	if out := capped(e, capIn{}); out.RowCount != 10 || out.Truncated {
		t.Fatalf("uncapped: %+v", out)
	}
	if out := capped(e, capIn{MaxRows: 3}); out.RowCount != 3 || !out.Truncated || out.TruncatedBy != "max_rows" {
		t.Fatalf("max_rows: %+v", out)
	}
	if out := capped(e, capIn{MaxBytes: 1024}); out.RowCount != 4 || !out.Truncated || out.TruncatedBy != "max_bytes" {
		t.Fatalf("max_bytes: %d %+v", out.RowCount, out.TruncatedBy)
	}
	e.Results.Truncated = true // the API had more rows than it returned
	if out := capped(e, capIn{}); !out.Truncated || out.RowCount != 10 {
		t.Fatalf("the API's truncation: %+v", out)
	}
}

func TestToolErrorShape(t *testing.T) {
	err := toolError{apierr.Field("query.limit", "maximum", "at most 100")}
	var env struct {
		Error struct {
			Status  int    `json:"status"`
			Code    string `json:"code"`
			Details []struct {
				Field string `json:"field"`
			} `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(err.Error()), &env) != nil || env.Error.Status != 400 || env.Error.Code != "VALIDATION_ERROR" ||
		env.Error.Details[0].Field != "query.limit" {
		t.Fatalf("tool error: %s", err.Error())
	}
}

func TestRunningCancel(t *testing.T) {
	var r running
	ctx := context.WithValue(context.Background(), callKey{}, "key_1 7")
	a, doneA := r.track(ctx)
	b, doneB := r.track(context.WithValue(context.Background(), callKey{}, "key_1 8"))
	defer doneB()
	r.cancel("key_1 7")
	if a.Err() == nil || b.Err() != nil {
		t.Fatalf("cancel: %v %v", a.Err(), b.Err())
	}
	doneA()
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.m["key_1 7"]; ok || len(r.m["key_1 8"]) != 1 {
		t.Fatalf("registry after done: %v", r.m)
	}
}
