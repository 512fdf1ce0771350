package tests

import (
	"fmt"
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
