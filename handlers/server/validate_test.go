package server

import (
	"runtime"
	"strings"
	"testing"
)

func TestCheckJSON(t *testing.T) {
	deep := func(n int) string { return strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n) }
	wide := func(n int) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`"k` + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + `_` + itoa(i) + `":1`)
		}
		return b.String() + "}"
	}
	for _, c := range []struct {
		name, body, field, code string
	}{
		{"object", `{"a": 1, "b": [1, {"c": "x"}], "d": {"e": null}}`, "", ""},
		{"array at the top", `[1, 2, {"a": true}]`, "", ""},
		{"scalar at the top", `"x"`, "", ""},
		{"duplicate key", `{"name": "a", "name": "b"}`, "body.name", "duplicate"},
		{"duplicate key deep", `{"a": {"b": 1, "b": 2}}`, "body.a.b", "duplicate"},
		{"duplicate key in an array", `{"items": [{"x": 1}, {"x": 1}, {"x": 1, "x": 2}]}`, "body.items[2].x", "duplicate"},
		{"the same key in sibling objects", `{"a": {"x": 1}, "b": {"x": 1}}`, "", ""},
		{"NUL in a string", `{"a": ["ok", "x\u0000y"]}`, "body.a[1]", "invalid_character"},
		{"malformed", `{"a": }`, "body", "invalid_json"},
		{"truncated", `{"a": [1, 2`, "body", "invalid_json"},
		{"trailing data", `{"a": 1} {"b": 2}`, "body", "invalid_json"},
		{"nested to the limit", deep(maxJSONDepth), "", ""},
		{"nested past the limit", deep(maxJSONDepth + 1), "body" + strings.Repeat(".a", maxJSONDepth), "max_depth"},
		{"arrays past the limit", strings.Repeat("[", maxJSONDepth+1) + strings.Repeat("]", maxJSONDepth+1), "body" + strings.Repeat("[0]", maxJSONDepth), "max_depth"},
		{"a key at the limit", `{"` + strings.Repeat("k", maxJSONKeyLen) + `": 1}`, "", ""},
		{"a key past the limit", `{"a": {"` + strings.Repeat("k", maxJSONKeyLen+1) + `": 1}}`, "body.a", "max_length"},
		{"keys at the limit", wide(maxJSONKeys), "", ""},
		{"keys past the limit", wide(maxJSONKeys + 1), "body", "max_properties"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fe := checkJSON([]byte(c.body))
			switch {
			case c.code == "" && fe != nil:
				t.Fatalf("refused: %+v", *fe)
			case c.code != "" && fe == nil:
				t.Fatal("accepted")
			case c.code != "" && (fe.Field != c.field || fe.Code != c.code):
				t.Fatalf("got %s %s (%s), want %s %s", fe.Field, fe.Code, fe.Message, c.field, c.code)
			}
		})
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

// attackBody is the audit's login body: 9,900 nested objects keyed by 95-character names
// (990 KB), which made the old check build every level's full path (quadratic: gigabytes).
func attackBody() []byte {
	key := `"` + strings.Repeat("k", 95) + `":`
	return []byte(strings.Repeat("{"+key, 9900) + "1" + strings.Repeat("}", 9900))
}

// TestCheckJSONBoundedWork: the audit's body is refused at the depth limit, having allocated a
// small multiple of the body's size (the old check allocated gigabytes on it).
func TestCheckJSONBoundedWork(t *testing.T) {
	body := attackBody()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fe := checkJSON(body)
	runtime.ReadMemStats(&after)
	if fe == nil || fe.Code != "max_depth" {
		t.Fatalf("got %+v, want max_depth", fe)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
		t.Fatalf("checking a %d-byte body allocated %d bytes", len(body), alloc)
	}
}

func BenchmarkCheckJSONAttack(b *testing.B) {
	body := attackBody()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		checkJSON(body)
	}
}
