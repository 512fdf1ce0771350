package tests

import (
	"fmt"
	"strings"
	"testing"
)

// TestErrorDetailTypes: a details field has one JSON type across errors: details.id is the
// record's id as a string in RECORD_NOT_FOUND and in OPTIMISTIC_LOCK_ERROR alike.
func TestErrorDetailTypes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	id := e.uploadAndCreate(e.ownerToken, "Notes", "n.csv", "id,text\n7,hello\n")
	e.waitDataset(e.ownerToken, id)
	rec := "/api/v1/datasets/" + id + "/data/"
	types := map[string]string{}
	for _, r := range []*resp{
		e.do("GET", rec+"99", nil, own).apiError(404, "RECORD_NOT_FOUND"),
		e.do("PATCH", rec+"7", map[string]any{"text": "x", "version": 5}, own).apiError(409, "OPTIMISTIC_LOCK_ERROR"),
		e.do("PUT", rec+"7", map[string]any{"text": "x"}, own, header{"If-Match": `"stale"`}).apiError(409, "OPTIMISTIC_LOCK_ERROR"),
		e.do("DELETE", rec+"8", nil, own).apiError(404, "RECORD_NOT_FOUND"),
	} {
		v := r.get("error.details.id")
		got := fmt.Sprintf("%T", v)
		if v != "7" && v != "99" && v != "8" {
			t.Fatalf("details.id %v (%T) in %s", v, v, r.Body)
		}
		types[got] = r.str("error.code")
	}
	if len(types) != 1 {
		t.Fatalf("details.id has several types: %v", types)
	}
}

// TestRecordSocketHandshakeErrors: a request to the WebSocket endpoint that is not a WebSocket
// handshake is answered in the JSON error shape the dataset's description declares (426
// UPGRADE_REQUIRED with Upgrade: websocket; 400 for a bad handshake; 403 for another origin),
// not with the WebSocket library's text.
func TestRecordSocketHandshakeErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	id := e.uploadAndCreate(e.ownerToken, "Notes", "n.csv", "id,text\n7,hello\n")
	e.waitDataset(e.ownerToken, id)
	ws := "/api/v1/datasets/" + id + "/data/ws"
	r := e.do("GET", ws, nil, own).apiError(426, "UPGRADE_REQUIRED")
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("426 headers: %v", r.Header)
	}
	e.do("GET", ws, nil, own, header{"Connection": "keep-alive", "Upgrade": "h2c"}).apiError(426, "UPGRADE_REQUIRED")
	hs := header{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
	bad := func(k, v string) header {
		h := header{}
		for a, b := range hs {
			h[a] = b
		}
		h[k] = v
		return h
	}
	e.do("GET", ws, nil, own, bad("Sec-WebSocket-Version", "8")).apiError(400, "VALIDATION_ERROR", "header.Sec-WebSocket-Version", "enum")
	e.do("GET", ws, nil, own, bad("Sec-WebSocket-Key", "short")).apiError(400, "VALIDATION_ERROR", "header.Sec-WebSocket-Key", "format")
	e.do("GET", ws, nil, own, bad("Origin", "https://elsewhere.example")).authError(403, "PERMISSION_DENIED")
}
