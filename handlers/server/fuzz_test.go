package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

// FuzzCheckJSON feeds arbitrary bodies to the JSON body checker and compares its verdict with
// a separate, recursive reading of the same body: the checker accepts exactly the JSON texts
// that are well formed, have no duplicate key, no NUL in a string or a key (PostgreSQL's text
// and jsonb refuse it) and stay inside the bounds;
// "invalid_json" is only said of text encoding/json does not accept either.
func FuzzCheckJSON(f *testing.F) {
	for _, s := range []string{
		`{"name": "Ada", "tags": ["a", "b"], "meta": {"x": 1.5e3, "y": null}}`,
		`[1, 2, {"a": true}]`,
		`"x"`,
		`{"a": 1, "a": 2}`,
		`{"a": "\u0000"}`,
		`{"meta": {"a\u0000": 1}}`,
		`{"a": }`,
		`{"a": 1} {"b": 2}`,
		`{"\u00e9": 1, "é": 2}`,
		"{\"\xff\": 1, \"\xfe\": 2}",
		strings.Repeat("[", maxJSONDepth+1) + strings.Repeat("]", maxJSONDepth+1),
		`{"` + strings.Repeat("k", maxJSONKeyLen+1) + `": 1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<16 {
			t.Skip()
		}
		got := checkJSON(b)
		want := referenceCheck(b)
		switch {
		case got == nil && want != "":
			t.Fatalf("checkJSON accepted %q; the reference says %s", b, want)
		case got != nil && want == "":
			t.Fatalf("checkJSON refused %q (%s: %s); the reference accepts it", b, got.Code, got.Message)
		case got != nil && got.Code == "invalid_json" && json.Valid(b):
			t.Fatalf("checkJSON calls valid JSON %q malformed: %s", b, got.Message)
		case got == nil && !json.Valid(b):
			t.Fatalf("checkJSON accepted malformed %q", b)
		}
	})
}

// referenceCheck is what checkJSON should say about b, "" for nothing, read recursively with
// encoding/json's decoder: "invalid_json", "duplicate", "invalid_character", "max_depth",
// "max_length" or "max_properties".
func referenceCheck(b []byte) string {
	if !json.Valid(b) {
		return "invalid_json"
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	problem := ""
	var value func(depth int) error
	value = func(depth int) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			if depth >= maxJSONDepth && problem == "" {
				problem = "max_depth"
			}
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return err
				}
				k := kt.(string)
				switch {
				case problem != "":
				case len(k) > maxJSONKeyLen:
					problem = "max_length"
				case strings.IndexByte(k, 0) >= 0: // a jsonb key is text too
					problem = "invalid_character"
				case len(seen) >= maxJSONKeys:
					problem = "max_properties"
				case seen[k]:
					problem = "duplicate"
				}
				seen[k] = true
				if err := value(depth + 1); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		case json.Delim('['):
			if depth >= maxJSONDepth && problem == "" {
				problem = "max_depth"
			}
			for dec.More() {
				if err := value(depth + 1); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		}
		if s, ok := tok.(string); ok && strings.IndexByte(s, 0) >= 0 && problem == "" {
			problem = "invalid_character"
		}
		return nil
	}
	if err := value(0); err != nil {
		return "invalid_json"
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return "invalid_json"
	}
	return problem
}
