package ingest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// Value is one field of a record as the file holds it:
//   - nil: NULL (an empty CSV field, a JSON null or missing key, a Parquet null)
//   - string: a CSV field, a JSON string, a Parquet string, date (YYYY-MM-DD), UUID or time
//   - json.Number: a JSON number, a Parquet float or decimal (exact text)
//   - int64, bool: Parquet integers and JSON or Parquet booleans
//   - float64: only a Parquet NaN or ±Inf (they have no JSON number form)
//   - time.Time: a Parquet timestamp (UTC)
//   - json.RawMessage: a Parquet JSON column
//   - []any, map[string]any: JSON arrays and objects, Parquet lists, maps and groups
type Value = any

// RowError is a problem with one record of a file: its shape (Column empty) or one of its
// values (Column is the name in the file, Value the offending value, shortened).
type RowError struct {
	Line   int // 1-based line of the record; the row number for Parquet; 0 when unknown
	Column string
	Value  string
	Reason string
}

func (e *RowError) Error() string {
	s := ""
	if e.Line > 0 {
		s = fmt.Sprintf("line %d", e.Line)
	}
	if e.Column != "" {
		s += fmt.Sprintf(", column %q", e.Column)
		s = fmt.Sprintf("%s: %q %s", s, e.Value, e.Reason)
	} else {
		s += ": " + e.Reason
	}
	if e.Line == 0 { // no "line 0, ": start at the column or the reason
		s = s[2:]
	}
	return s
}

// source is one file format's record stream.
type source interface {
	read(row []Value) error // fills row (one slot per column), or io.EOF
	line() int              // where the last record read starts
	Close() error
}

// Reader streams the records of a file as Values, one slot per column.
type Reader struct {
	cols []Column
	row  []Value
	src  source
	fill []*string // per column: the COPY text of its declared default, put for a missing value
}

// OpenSchema opens a file for reading with the columns of s, as Infer returned them or as a
// declared schema gives them (Original is the name in the file). CSV columns go by position
// and must be as many as the file's fields; JSON keys and Parquet fields go by name, and a
// JSON key that is not a column is an error rather than silently dropped data.
func OpenSchema(path string, s *Schema) (*Reader, error) {
	cols := append([]Column(nil), s.Columns...)
	switch s.Format {
	case CSV:
		src, err := openCSVSource(path, s.Dialect)
		if err != nil {
			return nil, err
		}
		if len(src.names) != len(cols) {
			_ = src.Close()
			return nil, &RowError{Line: 1, Reason: fmt.Sprintf("the file has %d columns, the schema %d", len(src.names), len(cols))}
		}
		return newReader(cols, src), nil
	case JSON, NDJSON:
		src, err := openJSONSource(path, s.Format, cols)
		if err != nil {
			return nil, err
		}
		return newReader(cols, src), nil
	case Parquet:
		src, _, err := openParquetSource(path, cols)
		if err != nil {
			return nil, err
		}
		return newReader(cols, src), nil
	}
	return nil, &FormatError{Provided: string(s.Format)}
}

func newReader(cols []Column, src source) *Reader {
	r := &Reader{cols: cols, row: make([]Value, len(cols)), src: src, fill: make([]*string, len(cols))}
	for i, c := range cols {
		if v := c.DefaultValue(); v != nil {
			if s, null, err := c.Text(v); err == nil && !null {
				r.fill[i] = &s
			}
		}
	}
	return r
}

// MaxColumns bounds the columns of a file: PostgreSQL's tables hold at most 1,600, counting
// the five system columns and columns dropped by later schema changes.
const MaxColumns = 1500

// tooManyColumns refuses a file of more than MaxColumns columns; what says how many it has.
func tooManyColumns(what string, line int) error {
	return &RowError{Line: line, Reason: fmt.Sprintf("%s; a dataset has at most %d columns", what, MaxColumns)}
}

// columns names columns after the file's names.
func columns(names []string) []Column {
	ids := Identifiers(names)
	cols := make([]Column, len(names))
	for i := range cols {
		cols[i] = Column{Name: ids[i], Original: names[i]}
	}
	return cols
}

// Next returns the next record, one Value per column, or io.EOF after the last. The slice is
// reused by the next call; the values in it are not.
func (r *Reader) Next() ([]Value, error) {
	if err := r.src.read(r.row); err != nil {
		return nil, err
	}
	return r.row, nil
}

// Line is where the last record read starts: its 1-based line for CSV and JSON, its row
// number for Parquet.
func (r *Reader) Line() int { return r.src.line() }

// Close closes the file.
func (r *Reader) Close() error { return r.src.Close() }

// maxLine bounds one line (NDJSON) or record (CSV), so that a file with an unclosed quote or
// no newlines fails instead of being read whole into memory.
const maxLine = 16 << 20

var errLineTooLong = errors.New("longer than 16 MiB")

// lineReader reads lines of any length up to maxLine, counting them.
type lineReader struct {
	br  *bufio.Reader
	buf []byte // holds lines longer than br's buffer
	n   int    // lines read
}

// next returns the next line with its terminator; it is valid until the next call.
func (l *lineReader) next() ([]byte, error) {
	line, err := l.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		l.buf = append(l.buf[:0], line...)
		for err == bufio.ErrBufferFull {
			if len(l.buf) > maxLine {
				return nil, &RowError{Line: l.n + 1, Reason: "the line is " + errLineTooLong.Error()}
			}
			line, err = l.br.ReadSlice('\n')
			l.buf = append(l.buf, line...)
		}
		line = l.buf
	}
	if err != nil && err != io.EOF {
		return nil, err
	}
	if len(line) == 0 {
		return nil, io.EOF
	}
	l.n++
	return line, nil
}

// eol is the length of line without its terminator (\n or \r\n).
func eol(line []byte) int {
	n := len(line)
	if n > 0 && line[n-1] == '\n' {
		n--
		if n > 0 && line[n-1] == '\r' {
			n--
		}
	}
	return n
}
