// Package ingest is the file layer of datasets: it decides what an uploaded file is by its
// content, streams its rows (CSV, JSON array, NDJSON, Parquet), infers PostgreSQL column
// types over the whole file, names columns safely and turns values into COPY input. It
// never holds a whole file in memory and needs no database.
package ingest

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// HeadSize is how much of a file Detect and dialect detection look at.
const HeadSize = 64 << 10

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
	{"PK\x03\x04", "zip"}, {"PK\x05\x06", "zip"}, {"%PDF", "pdf"}, {"\x89PNG", "png"}, {"\xff\xd8\xff", "jpeg"},
	{"GIF8", "gif"}, {"\x1f\x8b", "gzip"}, {"BZh", "bzip2"}, {"\xfd7zXZ", "xz"}, {"7z\xbc\xaf", "7z"},
	{"\x28\xb5\x2f\xfd", "zstd"}, {"\xd0\xcf\x11\xe0", "xls"}, {"SQLite format 3", "sqlite"}, {"\x7fELF", "elf"},
	{"ORC", "orc"}, {"Obj\x01", "avro"}, {"ARROW1", "arrow"}, {"RIFF", "riff"}, {"II*\x00", "tiff"}, {"MM\x00*", "tiff"},
}

// Detect decides the format of a file from its first bytes (up to HeadSize; fewer when the
// file is shorter) and its name. The content decides: a .csv that is an image is refused, and
// a delimited UTF-8 text file is CSV whatever it is called. The name only matters for
// single-column CSV (no delimiter to see) and to name what an unsupported text file is.
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
			if m.name == "zip" && (ext == "xlsx" || ext == "docx" || ext == "pptx" || ext == "ods") {
				return "", &FormatError{Provided: ext} // office documents are zip files
			}
			return "", &FormatError{Provided: m.name}
		}
	}
	truncated := len(head) >= HeadSize
	head = bytes.TrimPrefix(head, bom)
	if !validUTF8Prefix(head) || bytes.IndexByte(head, 0) >= 0 {
		return "", &FormatError{Provided: "binary"} // UTF-16, Latin-1 and other binaries
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
	jsonExt := ext == "json" || ext == "ndjson" || ext == "jsonl"
	if jsonExt && json.Valid(trimmed) {
		return "", &FormatError{Provided: "json-scalar"} // e.g. a bare number or string
	}
	if _, ok := sniffDialect(head, truncated); ok || ext == "csv" || ext == "tsv" {
		return CSV, nil
	}
	if ext != "" {
		return "", &FormatError{Provided: ext}
	}
	return "", &FormatError{Provided: "text"}
}

var bom = []byte("\xef\xbb\xbf")

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
