package usersql

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"
)

// arrayJSON is a PostgreSQL array's text output ({1,2}, {"a,b",NULL}, {{1,2},{3,4}}) as the
// JSON array the record API writes for it: each element its type's JSON value (elem is the
// element type's name: int8, numeric, bool, timestamptz, ...). ok is false for text that is
// not an array literal this reads (one with explicit bounds, [0:1]={...}).
func arrayJSON(elem string, s []byte) (json.RawMessage, bool) {
	p := arrayParser{s: string(s), elem: elem}
	v, ok := p.array()
	if !ok || p.i != len(p.s) {
		return nil, false
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // as PostgreSQL's to_json writes text
	if enc.Encode(v) != nil {
		return nil, false
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), true
}

type arrayParser struct {
	s    string
	i    int
	elem string
}

// array reads {element,...} at i: elements, NULLs and nested arrays.
func (p *arrayParser) array() ([]any, bool) {
	if p.i >= len(p.s) || p.s[p.i] != '{' {
		return nil, false
	}
	p.i++
	out := []any{}
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return out, true
	}
	for {
		if p.i >= len(p.s) {
			return nil, false
		}
		switch p.s[p.i] {
		case '{':
			sub, ok := p.array()
			if !ok {
				return nil, false
			}
			out = append(out, sub)
		case '"':
			var b strings.Builder
			p.i++
			for p.i < len(p.s) && p.s[p.i] != '"' {
				if p.s[p.i] == '\\' && p.i+1 < len(p.s) {
					p.i++
				}
				b.WriteByte(p.s[p.i])
				p.i++
			}
			if p.i >= len(p.s) {
				return nil, false
			}
			p.i++
			out = append(out, p.value(b.String()))
		default:
			j := p.i
			for j < len(p.s) && p.s[j] != ',' && p.s[j] != '}' {
				j++
			}
			text := p.s[p.i:j]
			p.i = j
			if strings.EqualFold(text, "NULL") {
				out = append(out, nil)
			} else {
				out = append(out, p.value(text))
			}
		}
		if p.i >= len(p.s) {
			return nil, false
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return out, true
		default:
			return nil, false
		}
	}
}

// pgTimeLayouts are timestamptz's text output in DateStyle ISO: the zone as +hh, +hh:mm or
// +hh:mm:ss.
var pgTimeLayouts = []string{"2006-01-02 15:04:05.999999999-07", "2006-01-02 15:04:05.999999999-07:00", "2006-01-02 15:04:05.999999999-07:00:00"}

// value is an element's text as its JSON value, as jsonValue makes the scalar of its type.
func (p *arrayParser) value(text string) any {
	switch p.elem {
	case "int2", "int4", "int8", "oid", "numeric", "float4", "float8":
		if json.Valid([]byte(text)) && text != "" && (text[0] == '-' || text[0] >= '0' && text[0] <= '9') {
			return json.Number(text)
		}
	case "bool":
		return text == "t"
	case "json", "jsonb":
		if json.Valid([]byte(text)) {
			return json.RawMessage(text)
		}
	case "timestamptz":
		for _, l := range pgTimeLayouts {
			if t, err := time.Parse(l, text); err == nil {
				return t.UTC().Format(time.RFC3339Nano)
			}
		}
	case "timestamp":
		if t, err := time.Parse("2006-01-02 15:04:05.999999999", text); err == nil {
			return t.UTC().Format(time.RFC3339Nano)
		}
	}
	return text
}
