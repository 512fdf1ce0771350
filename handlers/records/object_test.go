package records

import (
	"reflect"
	"testing"
)

// A record's members come apart and back together byte for byte, in the order asked, with
// _links and _embedded last; values are never decoded (numbers keep their zeros, JSON its
// spacing, text its escapes).
func TestObject(t *testing.T) {
	raw := `{"id":1,"amount":4412.80,"meta":{"a": [1, 2.50], "s": "}],\"{"},"tags":["x","y,z"],"n":null,"ok":true,` +
		`"at":"2024-05-06T17:30:00Z","q\"k":"<&>\n","e":{},"l":[]}`
	o, err := parseObject([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"id", "amount", "meta", "tags", "n", "ok", "at", `q"k`, "e", "l"}; !reflect.DeepEqual(o.names, want) {
		t.Fatalf("names %q, want %q", o.names, want)
	}
	if got := string(o.record(o.names)); got != raw {
		t.Fatalf("round trip:\n%s\nwant\n%s", got, raw)
	}
	o.set("_links", members([]string{"self", "customer"}, [][]byte{quote("/a/1"), quote("/b?x=1&y=2")}))
	if got, want := string(o.record([]string{"at", "amount", "_links", "meta", "nope"})),
		`{"at":"2024-05-06T17:30:00Z","amount":4412.80,"meta":{"a": [1, 2.50], "s": "}],\"{"},"_links":{"self":"/a/1","customer":"/b?x=1&y=2"}}`; got != want {
		t.Fatalf("narrowed:\n%s\nwant\n%s", got, want)
	}
	for name, want := range map[string]string{"id": "1", "amount": "4412.80", "n": "", "ok": "true", `q"k`: "<&>\n", "missing": ""} {
		if got := o.text(name); got != want {
			t.Errorf("text(%s) = %q, want %q", name, got, want)
		}
	}
	// jsonb's spacing, an empty object.
	if o, err := parseObject([]byte(`{"a": 1, "b": {"c": [1, {"d": "x"}]}}`)); err != nil || string(o.vals[1]) != `{"c": [1, {"d": "x"}]}` {
		t.Fatalf("spaced: %v %q", err, o.vals)
	}
	if o, err := parseObject([]byte(`{}`)); err != nil || len(o.names) != 0 || string(o.record(nil)) != `{}` {
		t.Fatalf("empty: %v", err)
	}
	for _, bad := range []string{``, `[]`, `{"a"}`, `{"a":1`, `{"a":"x}`, `{"a":[1}`, `{"a":1 "b":2}`} {
		if _, err := parseObject([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
