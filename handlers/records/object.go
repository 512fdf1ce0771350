package records

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// object is a record's JSON object as PostgreSQL wrote it: its members in order, each key and
// value kept byte for byte. The handler adds _links and _embedded and narrows a record to
// fields through it, so that a record it shapes reads exactly as one PostgreSQL shaped (a
// list's records whose _links are made in SQL), in the order the fields were asked for.
// Reading one splits the text at its top-level members and decodes nothing else: a record is
// shaped on every read.
type object struct {
	names []string // the keys, decoded
	keys  [][]byte // the keys as written, quoted
	vals  [][]byte // the values as written
	// room for a record of up to 16 members (and its _links) in the object's own allocation:
	// the slices above start in it, and grow out of it only for larger records.
	nameRoom [17]string
	keyRoom  [17][]byte
	valRoom  [17][]byte
}

var errNotObject = errors.New("a record is a JSON object")

// parseObject splits raw, a JSON object (PostgreSQL's to_json of a record), into its members.
func parseObject(raw []byte) (*object, error) {
	o := &object{}
	o.names, o.keys, o.vals = o.nameRoom[:0], o.keyRoom[:0], o.valRoom[:0]
	text := string(raw) // the names are cut from one copy, not copied one by one
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, errNotObject
	}
	if i = skipSpace(raw, i+1); i < len(raw) && raw[i] == '}' {
		return o, nil
	}
	for {
		if i >= len(raw) || raw[i] != '"' {
			return nil, errNotObject
		}
		end := stringEnd(raw, i)
		if end < 0 {
			return nil, errNotObject
		}
		key := raw[i:end]
		name := text[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			if err := json.Unmarshal(key, &name); err != nil {
				return nil, err
			}
		}
		if i = skipSpace(raw, end); i >= len(raw) || raw[i] != ':' {
			return nil, errNotObject
		}
		i = skipSpace(raw, i+1)
		vend := valueEnd(raw, i)
		if vend <= i {
			return nil, errNotObject
		}
		o.names, o.keys, o.vals = append(o.names, name), append(o.keys, key), append(o.vals, raw[i:vend])
		switch i = skipSpace(raw, vend); {
		case i < len(raw) && raw[i] == ',':
			i = skipSpace(raw, i+1)
		case i < len(raw) && raw[i] == '}':
			return o, nil
		default:
			return nil, errNotObject
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd is the index after the JSON string starting at b[i] (a quote), or -1.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// valueEnd is the index after the JSON value starting at b[i], or -1.
func valueEnd(b []byte, i int) int {
	depth := 0
	for j := i; j < len(b); j++ {
		switch b[j] {
		case '"':
			e := stringEnd(b, j)
			if e < 0 || depth == 0 {
				return e
			}
			j = e - 1
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return j
			}
			if depth--; depth == 0 {
				return j + 1
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return j
			}
		}
	}
	if depth == 0 {
		return len(b)
	}
	return -1
}

// get is the value of member name.
func (o *object) get(name string) ([]byte, bool) {
	for i, n := range o.names {
		if n == name {
			return o.vals[i], true
		}
	}
	return nil, false
}

// set gives member name the value v, appending it when the object has none.
func (o *object) set(name string, v []byte) {
	for i, n := range o.names {
		if n == name {
			o.vals[i] = v
			return
		}
	}
	o.names, o.keys, o.vals = append(o.names, name), append(o.keys, quote(name)), append(o.vals, v)
}

// text is member name's value as a path or query holds it: a string's text, a number or a
// boolean as written; "" for null or a missing member.
func (o *object) text(name string) string {
	v, _ := o.get(name)
	switch {
	case len(v) == 0 || string(v) == "null":
		return ""
	case v[0] == '"':
		var s string
		if bytes.IndexByte(v, '\\') < 0 {
			return string(v[1 : len(v)-1])
		}
		_ = json.Unmarshal(v, &s)
		return s
	}
	return string(v)
}

// record writes the members named by fields, in that order (those the object has), then its
// _links and _embedded: a record as answered.
func (o *object) record(fields []string) json.RawMessage {
	n := 2
	for i, v := range o.vals {
		n += len(o.keys[i]) + len(v) + 2
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	add := func(name string) {
		for i, x := range o.names {
			if x == name {
				if len(b) > 1 {
					b = append(b, ',')
				}
				b = append(append(append(b, o.keys[i]...), ':'), o.vals[i]...)
				return
			}
		}
	}
	for _, f := range fields {
		if f != "_links" && f != "_embedded" {
			add(f)
		}
	}
	add("_links")
	add("_embedded")
	return append(b, '}')
}

// members is a JSON object of the given names and values, in that order.
func members(names []string, vals [][]byte) []byte {
	b := []byte{'{'}
	for i, n := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(append(b, quote(n)...), ':'), vals[i]...)
	}
	return append(b, '}')
}

// quote is s as a JSON string, written as PostgreSQL writes text in JSON (no HTML escapes).
func quote(s string) []byte {
	if !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == '"' || r == '\\' || r == '\u2028' || r == '\u2029' }) {
		return append(append(append(make([]byte, 0, len(s)+2), '"'), s...), '"')
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
