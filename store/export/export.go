// Package export writes rows as a file: csv, json, ndjson, parquet or excel, gzip-compressed
// when asked. The record API's export (store/records) and the query export job
// (store/queries) both write through it, each with the options that shape its files.
//
// Rows come either as values (Row: one per column, as the query sandbox reads them or as
// database/sql scans them) or straight from the database (Copy), where the record API's
// SELECT has already made csv text and JSON objects, so that the hot path copies bytes.
package export

import (
	"bytes"
	"compress/gzip"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Kind is how parquet (and, for numbers and dates, excel) stores a column.
type Kind uint8

const (
	Text      Kind = iota // a string
	Int32                 // a 32-bit integer
	Int64                 // a 64-bit integer
	Double                // a double (numerics too)
	Bool                  // a boolean
	Date                  // a date (parquet DATE; an excel date shown YYYY-MM-DD)
	Timestamp             // a timestamp (parquet TIMESTAMP in microseconds; an excel date and time, UTC)
	JSON                  // a JSON document (parquet JSON)
)

// Column is a column of a file.
type Column struct {
	Name string
	Kind Kind
	// Plain: the column's text never needs CSV quoting (numbers, dates, times, booleans,
	// uuids). For Copy, a row holds one value per run of adjacent plain columns, joined
	// with the delimiter already, and one per other column.
	Plain bool
}

// Options shape a file.
type Options struct {
	Header bool // csv and excel: a first row of column names

	Delimiter  string // csv: the field separator
	Quote      string // csv: the quote character
	QuoteEmpty bool   // csv: an empty string as two quotes, so that it differs from NULL (as COPY ... CSV writes it)

	BracketLines bool // json: the array's brackets on lines of their own

	Schema string // parquet: the schema's (root's) name

	Gzip bool // compress the file with gzip (fastest level)

	// EscapeFormulas: csv and excel: a text cell (and a column name) that a spreadsheet would
	// read as a formula, one starting with = + - @, a tab or a carriage return, gets a leading
	// single quote (OWASP's advice against CSV injection). Numbers, dates, booleans and JSON
	// are never changed: -1 in a numeric column stays -1.
	EscapeFormulas bool
}

// MaxExcelRows is what one Excel sheet holds (with its header row).
const MaxExcelRows = 1_048_575

// Rows are what Copy reads: *sql.Rows.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// Writer writes one file.
type Writer struct {
	format string
	cols   []Column
	o      Options
	n      int          // rows written
	gz     *gzip.Writer // when o.Gzip
	out    *flusher     // csv, json, ndjson
	keys   [][]byte     // json, ndjson: the column names as JSON strings
	tmp    []byte
	esc    []byte        // csv: an escaped field
	jbuf   bytes.Buffer  // json, ndjson: a value being encoded
	jenc   *json.Encoder // json, ndjson: encodes into jbuf, as PostgreSQL writes JSON (no HTML escapes)
	pq     *parquetWriter
	xl     *excelWriter
}

// New starts a file of format (csv, json, ndjson, parquet or excel) with cols on w.
func New(w io.Writer, format string, cols []Column, o Options) (*Writer, error) {
	x := &Writer{format: format, cols: cols, o: o}
	switch format {
	case "csv", "json", "ndjson", "parquet", "excel":
	default:
		return nil, fmt.Errorf("unknown export format %q", format)
	}
	if o.Gzip {
		x.gz, _ = gzip.NewWriterLevel(w, gzip.BestSpeed)
		w = x.gz
	}
	switch format {
	case "csv":
		x.out = newFlusher(w)
		if o.Header {
			for i, c := range cols {
				if i > 0 {
					x.out.buf = append(x.out.buf, o.Delimiter...)
				}
				x.out.buf = x.textField(x.out.buf, []byte(c.Name), o.EscapeFormulas)
			}
			x.out.buf = append(x.out.buf, '\n')
		}
	case "json", "ndjson":
		x.out = newFlusher(w)
		x.jenc = json.NewEncoder(&x.jbuf)
		x.jenc.SetEscapeHTML(false)
		x.keys = make([][]byte, len(cols))
		for i, c := range cols {
			x.keys[i], _ = x.json(c.Name)
			x.keys[i] = bytes.Clone(x.keys[i])
		}
		if format == "json" {
			x.out.buf = append(x.out.buf, '[')
		}
	case "parquet":
		x.pq = newParquetWriter(w, cols, o.Schema)
	case "excel":
		var err error
		if x.xl, err = newExcelWriter(w, cols, o.Header, o.EscapeFormulas); err != nil {
			return nil, err
		}
	}
	return x, nil
}

// Row writes a row of values, one per column: nil (NULL), string, []byte (text), int64,
// float64, bool, time.Time, json.Number or json.RawMessage.
func (x *Writer) Row(vals []any) error {
	switch x.format {
	case "csv":
		b := x.out.buf
		for i, v := range vals {
			if i > 0 {
				b = append(b, x.o.Delimiter...)
			}
			if v != nil {
				x.tmp = append(x.tmp[:0], text(v)...)
				b = x.textField(b, x.tmp, x.escapes(i, v))
			}
		}
		x.out.buf = append(b, '\n')
		x.out.maybe()
	case "json", "ndjson":
		start := len(x.out.buf)
		x.beginObject()
		x.out.buf = append(x.out.buf, '{')
		for i, v := range vals {
			if i > 0 {
				x.out.buf = append(x.out.buf, ',')
			}
			x.out.buf = append(append(x.out.buf, x.keys[i]...), ':')
			j, err := x.json(v)
			if err != nil {
				x.out.buf = x.out.buf[:start]
				return err
			}
			x.out.buf = append(x.out.buf, j...)
		}
		x.out.buf = append(x.out.buf, '}')
		x.endObject()
	case "parquet":
		if err := x.pq.row(vals); err != nil {
			return err
		}
	case "excel":
		if err := x.xl.row(vals); err != nil {
			return err
		}
	}
	x.n++
	return nil
}

// Copy writes every row of rows and finishes the file (Close); on an error the file is left
// unfinished (Abort). For csv a row holds the text of each field, or of a run of plain
// fields joined already (see Column.Plain); for json and ndjson one JSON object; for parquet
// and excel a value per column.
func (x *Writer) Copy(rows Rows) error {
	if err := x.copy(rows); err != nil {
		x.Abort()
		return err
	}
	return x.Close()
}

func (x *Writer) copy(rows Rows) error {
	switch x.format {
	case "csv":
		var quoted []bool  // per value: one field to quote as needed, else a run written as is
		var escaped []bool // per value: a text field to escape formulas in
		for i, c := range x.cols {
			if !c.Plain || i == 0 || !x.cols[i-1].Plain {
				quoted = append(quoted, !c.Plain)
				escaped = append(escaped, !c.Plain && c.Kind == Text && x.o.EscapeFormulas)
			}
		}
		vals := make([]field, len(quoted))
		ptrs := make([]any, len(quoted))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				return err
			}
			b := x.out.buf
			for i, v := range vals {
				if i > 0 {
					b = append(b, x.o.Delimiter...)
				}
				switch {
				case !quoted[i]:
					b = append(b, v.b...)
				case !v.null:
					b = x.textField(b, v.b, escaped[i])
				}
			}
			x.out.buf = append(b, '\n')
			x.out.maybe()
			x.n++
		}
	case "json", "ndjson":
		var obj sql.RawBytes
		for rows.Next() {
			if err := rows.Scan(&obj); err != nil {
				return err
			}
			x.beginObject()
			x.out.buf = append(x.out.buf, obj...)
			x.endObject()
			x.n++
		}
	default:
		vals := make([]any, len(x.cols))
		ptrs := make([]any, len(x.cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				return err
			}
			if err := x.Row(vals); err != nil {
				return err
			}
		}
	}
	return rows.Err()
}

// Raw writes a file whose rows the database has made already (COPY ... TO STDOUT) and
// finishes it (Close); on an error the file is left unfinished (Abort). fill writes the rows
// to the writer it is given: for csv the file's lines as they are (the header, when asked, is
// this writer's), for json and ndjson one JSON object per line (no object holds a line
// break), framed here as Copy frames them.
func (x *Writer) Raw(fill func(w io.Writer) error) error {
	var err error
	switch x.format {
	case "csv", "ndjson":
		err = fill(rawLines{x})
	case "json":
		err = fill(&jsonLines{x: x})
	default:
		err = fmt.Errorf("a %s file is not written from raw lines", x.format)
	}
	if err != nil {
		x.Abort()
		return err
	}
	return x.Close()
}

// rawLines appends what it is given to the output as it is.
type rawLines struct{ x *Writer }

func (r rawLines) Write(p []byte) (int, error) {
	r.x.out.buf = append(r.x.out.buf, p...)
	r.x.out.maybe()
	return len(p), nil
}

// jsonLines makes lines of JSON objects the elements of the json file's array: each line
// break between two objects becomes ",\n" (as Copy separates them), the last one is dropped.
type jsonLines struct {
	x    *Writer
	open bool // a line was begun and its break not written yet
	n    int
}

func (j *jsonLines) Write(p []byte) (int, error) {
	x := j.x
	for rest := p; len(rest) > 0; {
		if !j.open {
			if j.n > 0 {
				x.out.buf = append(x.out.buf, ',', '\n')
			} else if x.o.BracketLines {
				x.out.buf = append(x.out.buf, '\n')
			}
			j.open, j.n = true, j.n+1
		}
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			x.out.buf = append(x.out.buf, rest...)
			break
		}
		x.out.buf = append(x.out.buf, rest[:i]...)
		j.open, rest = false, rest[i+1:]
	}
	x.out.maybe()
	return len(p), nil
}

// field is a text value Copy scans: its bytes, or NULL. (A sql.RawBytes cannot tell an
// empty string from NULL once it has held a NULL: both scan as nil.)
type field struct {
	b    []byte
	null bool
}

func (f *field) Scan(src any) error {
	f.b, f.null = f.b[:0], src == nil
	switch v := src.(type) {
	case nil:
	case []byte:
		f.b = append(f.b, v...)
	case string:
		f.b = append(f.b, v...)
	default:
		return fmt.Errorf("export: a %T where text was expected", src)
	}
	return nil
}

// json is v as JSON, as the record API writes it: a JSON document (json.RawMessage, from the
// database) as it is, text without HTML escapes. The bytes are good until the next call.
func (x *Writer) json(v any) ([]byte, error) {
	if raw, ok := v.(json.RawMessage); ok && json.Valid(raw) {
		return raw, nil
	}
	x.jbuf.Reset()
	if err := x.jenc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(x.jbuf.Bytes(), []byte{'\n'}), nil
}

// Close finishes the file: the format's end, and gzip's.
func (x *Writer) Close() error {
	var err error
	switch x.format {
	case "csv", "ndjson":
		err = x.out.close()
	case "json":
		if x.o.BracketLines {
			x.out.buf = append(x.out.buf, '\n')
		}
		x.out.buf = append(x.out.buf, ']', '\n')
		err = x.out.close()
	case "parquet":
		err = x.pq.close()
	case "excel":
		err = x.xl.close()
	}
	if x.gz != nil {
		if gerr := x.gz.Close(); err == nil {
			err = gerr
		}
	}
	return err
}

// Abort stops writing after a failure: what is buffered is written (and gzip's end), the
// format's end is not, so the file is incomplete.
func (x *Writer) Abort() {
	switch {
	case x.out != nil:
		_ = x.out.close() // aborting: the output is incomplete anyway
	case x.xl != nil:
		_ = x.xl.f.Close() // aborting: the output is incomplete anyway
	}
	if x.gz != nil {
		_ = x.gz.Close() // aborting: the output is incomplete anyway
	}
}

// escapes reports whether the value v of column i is text to escape formulas in: a string
// (not a number or JSON) of a text column.
func (x *Writer) escapes(i int, v any) bool {
	return x.o.EscapeFormulas && x.cols[i].Kind == Text && isText(v)
}

// isText reports whether v is text (JSON and numbers handed over as such are not).
func isText(v any) bool {
	switch v.(type) {
	case string, []byte:
		return true
	}
	return false
}

// formula reports whether a spreadsheet would read text as a formula (OWASP: a cell starting
// with = + - @, a tab or a carriage return).
func formula(s string) bool {
	return s != "" && strings.IndexByte("=+-@\t\r", s[0]) >= 0
}

// textField appends s as a CSV field, with a leading single quote when esc and it reads as a
// formula. Escaped text holding a separator other than ours (a spreadsheet may split at , ;
// or tab whatever the file's delimiter, and "x;=1+1" would start a cell with a formula) is
// quoted so that it stays one cell.
func (x *Writer) textField(dst, s []byte, esc bool) []byte {
	if !esc {
		return x.csvField(dst, s, false)
	}
	if len(s) > 0 && formula(string(s[:1])) {
		x.esc = append(append(x.esc[:0], '\''), s...)
		s = x.esc
	}
	return x.csvField(dst, s, bytes.ContainsAny(s, ",;\t"))
}

// csvField appends s as a CSV field: quoted when it holds the delimiter, the quote or a line
// break (or is empty, with QuoteEmpty, or when force), its quotes doubled.
func (x *Writer) csvField(dst, s []byte, force bool) []byte {
	d, q := x.o.Delimiter, x.o.Quote
	quote := force
	switch {
	case quote:
	case len(d) == 1 && len(q) == 1:
		quote = bytes.IndexByte(s, d[0]) >= 0 || bytes.IndexByte(s, q[0]) >= 0
	default:
		quote = bytes.Contains(s, []byte(d)) || bytes.Contains(s, []byte(q))
	}
	if !quote && !(len(s) == 0 && x.o.QuoteEmpty) && bytes.IndexByte(s, '\n') < 0 && bytes.IndexByte(s, '\r') < 0 {
		return append(dst, s...)
	}
	dst = append(dst, q...)
	for len(q) > 0 {
		i := bytes.Index(s, []byte(q))
		if i < 0 {
			break
		}
		dst = append(append(dst, s[:i+len(q)]...), q...)
		s = s[i+len(q):]
	}
	dst = append(dst, s...)
	return append(dst, q...)
}

// beginObject and endObject frame a JSON object: elements of an array, or lines.
func (x *Writer) beginObject() {
	if x.format != "json" {
		return
	}
	if x.n > 0 {
		x.out.buf = append(x.out.buf, ',', '\n')
	} else if x.o.BracketLines {
		x.out.buf = append(x.out.buf, '\n')
	}
}

func (x *Writer) endObject() {
	if x.format == "ndjson" {
		x.out.buf = append(x.out.buf, '\n')
	}
	x.out.maybe()
}

// parseTime reads a date (YYYY-MM-DD) or an RFC 3339 time: how a query's rows carry them.
func parseTime(s string) (time.Time, error) {
	if len(s) == len(time.DateOnly) {
		return time.Parse(time.DateOnly, s)
	}
	return time.Parse(time.RFC3339Nano, s)
}

// text is a value as text: NULL empty, numbers and JSON as written.
func text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case []byte:
		return string(x)
	case json.Number:
		return string(x)
	case json.RawMessage:
		return string(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	return fmt.Sprint(v)
}
