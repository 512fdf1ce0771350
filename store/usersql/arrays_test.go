package usersql

import (
	"encoding/json"
	"testing"
)

// PostgreSQL's array text becomes the JSON array the record API writes: elements as their
// type's JSON values, quoting and escapes undone, NULLs, nested arrays; text that is not an
// array literal this reads is left as text.
func TestArrayJSON(t *testing.T) {
	for _, c := range []struct{ elem, in, want string }{
		{"text", `{a,"b,c","",NULL,"NULL","q\"uote","back\\slash","{x}"}`, `["a","b,c","",null,"NULL","q\"uote","back\\slash","{x}"]`},
		{"text", `{}`, `[]`},
		{"text", `{"<&>"}`, `["<&>"]`},
		{"int8", `{1,-2,NULL,9007199254740993}`, `[1,-2,null,9007199254740993]`},
		{"numeric", `{1.50,NaN,-0.001,Infinity}`, `[1.50,"NaN",-0.001,"Infinity"]`},
		{"bool", `{t,f,NULL}`, `[true,false,null]`},
		{"date", `{2024-05-06,infinity}`, `["2024-05-06","infinity"]`},
		{"timestamptz", `{"2024-05-06 19:30:00.25+02","2024-05-06 23:00:00+05:30",NULL}`, `["2024-05-06T17:30:00.25Z","2024-05-06T17:30:00Z",null]`},
		{"timestamp", `{"2024-05-06 17:30:00"}`, `["2024-05-06T17:30:00Z"]`},
		{"jsonb", `{"{\"a\": 1}","[1, 2]",NULL}`, `[{"a":1},[1,2],null]`}, // compacted by the encoder
		{"int4", `{{1,2},{3,4}}`, `[[1,2],[3,4]]`},
		{"uuid", `{6f1c2a9e-8e4b-4c1a-9d5e-1f2a3b4c5d6e}`, `["6f1c2a9e-8e4b-4c1a-9d5e-1f2a3b4c5d6e"]`},
	} {
		got, ok := arrayJSON(c.elem, []byte(c.in))
		if !ok || string(got) != c.want {
			t.Errorf("%s %s: %s %v, want %s", c.elem, c.in, got, ok, c.want)
		}
	}
	for _, bad := range []string{`[0:1]={1,2}`, `{1,2`, `{"a}`, `{1}x`} {
		if got, ok := arrayJSON("int4", []byte(bad)); ok {
			t.Errorf("%s: %s, want no array", bad, got)
		}
	}
	if v, ok := jsonValue("_int8", []byte(`{1,2}`)).(json.RawMessage); !ok || string(v) != `[1,2]` {
		t.Errorf("jsonValue: %v", v)
	}
}
