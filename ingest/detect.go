// Package ingest reads the files datasets are made from: it decides their format by content
// and (later) streams their rows.
package ingest

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// Format is a supported file format.
type Format string

const (
	CSV     Format = "csv"
	JSON    Format = "json"   // a top-level array of objects
	NDJSON  Format = "ndjson" // one object per line
	Parquet Format = "parquet"
)

// FormatError says what an unsupported file is (the API's provided_format).
type FormatError struct{ Provided string }

func (e *FormatError) Error() string { return "unsupported file format: " + e.Provided }

// magics are signatures of common files that are not datasets.
var magics = []struct {
	prefix, name string
}{
	{"PK\x03\x04", "zip"}, {"%PDF", "pdf"}, {"\x89PNG", "png"}, {"\xff\xd8\xff", "jpeg"}, {"GIF8", "gif"},
	{"\x1f\x8b", "gzip"}, {"BZh", "bzip2"}, {"\xfd7zXZ", "xz"}, {"7z\xbc\xaf", "7z"}, {"\xd0\xcf\x11\xe0", "xls"},
	{"SQLite format 3", "sqlite"}, {"\x7fELF", "elf"}, {"ORC", "orc"}, {"Obj\x01", "avro"},
}

// Detect decides the format of a file from its first bytes (up to 64 KiB; fewer when the file
// is shorter) and its name. The content decides: a .csv that is an image is refused, and a
// delimited text file is CSV whatever it is called.
func Detect(head []byte, filename string) (Format, error) {
	ext := strings.ToLower(strings.TrimPrefix(filepath.Ext(filename), "."))
	if len(head) == 0 {
		return "", &FormatError{Provided: "empty"}
	}
	if bytes.HasPrefix(head, []byte("PAR1")) {
		return Parquet, nil
	}
	for _, m := range magics {
		if bytes.HasPrefix(head, []byte(m.prefix)) {
			if m.name == "zip" && (ext == "xlsx" || ext == "docx" || ext == "pptx") {
				return "", &FormatError{Provided: ext}
			}
			return "", &FormatError{Provided: m.name}
		}
	}
	head = bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	if !validUTF8Prefix(head) || bytes.IndexByte(head, 0) >= 0 {
		return "", &FormatError{Provided: "binary"}
	}
	trimmed := bytes.TrimLeft(head, " \t\r\n")
	switch {
	case len(trimmed) == 0:
		return "", &FormatError{Provided: "empty"}
	case trimmed[0] == '[':
		return detectJSONArray(trimmed)
	case trimmed[0] == '{':
		return detectNDJSON(trimmed)
	}
	if delimited(head) || ext == "csv" || ext == "tsv" {
		return CSV, nil
	}
	if ext != "" {
		return "", &FormatError{Provided: ext}
	}
	return "", &FormatError{Provided: "text"}
}

// validUTF8Prefix is utf8.Valid, forgiving only a rune cut by the end of the sample.
func validUTF8Prefix(b []byte) bool {
	if utf8.Valid(b) {
		return true
	}
	i := len(b) - 1
	for i > 0 && len(b)-i < utf8.UTFMax && b[i]&0xC0 == 0x80 { // continuation bytes
		i--
	}
	return i >= 0 && !utf8.FullRune(b[i:]) && utf8.Valid(b[:i])
}

// detectJSONArray accepts an array whose first element is an object (or an empty array).
func detectJSONArray(b []byte) (Format, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil { // [
		return "", &FormatError{Provided: "text"}
	}
	if !dec.More() {
		return JSON, nil
	}
	tok, err := dec.Token()
	if err != nil {
		return "", &FormatError{Provided: "text"}
	}
	if d, ok := tok.(json.Delim); ok && d == '{' {
		return JSON, nil
	}
	return "", &FormatError{Provided: "json-scalar-array"}
}

// detectNDJSON accepts lines that are each one JSON object; a single object spread over
// several lines is JSON but not a dataset.
func detectNDJSON(b []byte) (Format, error) {
	lines := bytes.Split(bytes.TrimRight(b, "\r\n"), []byte("\n"))
	if len(lines) == 1 {
		return NDJSON, nil // one object, or one long line cut by the sample
	}
	var first map[string]any
	if json.Unmarshal(bytes.TrimSpace(lines[0]), &first) == nil {
		return NDJSON, nil
	}
	if json.Valid(b) {
		return "", &FormatError{Provided: "json-object"}
	}
	return "", &FormatError{Provided: "text"}
}

// delimited reports whether the sample reads as CSV with more than one column and the same
// number of fields on every complete line, for one of the usual delimiters.
func delimited(b []byte) bool {
	if i := bytes.LastIndexByte(b, '\n'); i > 0 && i < len(b)-1 {
		b = b[:i+1] // drop a line cut by the sample
	}
	for _, d := range []rune{',', ';', '\t', '|'} {
		r := csv.NewReader(bytes.NewReader(b))
		r.Comma = d
		r.FieldsPerRecord = 0 // all records like the first
		r.ReuseRecord = true
		n, fields := 0, 0
		for {
			rec, err := r.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				n = 0
				break
			}
			fields = len(rec)
			n++
		}
		if n > 0 && fields > 1 {
			return true
		}
	}
	return false
}
