package ingest

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
)

// RowError is a problem with one row of a file.
type RowError struct {
	Line   int
	Column string
	Reason string
}

func (e *RowError) Error() string {
	if e.Column != "" {
		return fmt.Sprintf("line %d, column %q: %s", e.Line, e.Column, e.Reason)
	}
	return fmt.Sprintf("line %d: %s", e.Line, e.Reason)
}

// CSVReader streams the records of a CSV file.
type CSVReader struct {
	f      *os.File
	r      *csv.Reader
	header []string // display names
	first  []string // the first data record when the file has no header
	line   int
}

// OpenCSV opens a CSV file, detecting its delimiter from the first 64 KiB and whether its
// first record is a header: it is when none of its fields is empty or a number, and they are
// all different.
func OpenCSV(path string) (*CSVReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(f, 1<<20)
	head, _ := br.Peek(64 << 10)
	if bytes.HasPrefix(head, []byte("\xef\xbb\xbf")) {
		br.Discard(3)
		head = head[3:]
	}
	r := csv.NewReader(br)
	r.Comma = delimiter(head)
	r.ReuseRecord = false
	c := &CSVReader{f: f, r: r}
	rec, err := r.Read()
	if err != nil {
		f.Close()
		return nil, c.wrap(err)
	}
	c.line = 1
	if isHeader(rec) {
		c.header = rec
	} else {
		c.first = rec
		for i := range rec {
			c.header = append(c.header, fmt.Sprintf("column_%d", i+1))
		}
	}
	return c, nil
}

// delimiter picks the delimiter that splits the sample into the same number (>1) of fields on
// every line; comma when none does.
func delimiter(head []byte) rune {
	for _, d := range []rune{',', ';', '\t', '|'} {
		sample := head
		if i := bytes.LastIndexByte(sample, '\n'); i > 0 && i < len(sample)-1 {
			sample = sample[:i+1]
		}
		r := csv.NewReader(bytes.NewReader(sample))
		r.Comma = d
		ok, n := true, 0
		for {
			rec, err := r.Read()
			if err == io.EOF {
				break
			}
			if err != nil || len(rec) < 2 {
				ok = false
				break
			}
			n++
		}
		if ok && n > 0 {
			return d
		}
	}
	return ','
}

func isHeader(rec []string) bool {
	seen := map[string]bool{}
	for _, f := range rec {
		k := Kind(f)
		if f == "" || seen[f] || k == Integer || k == BigInt || k == Numeric || k == Date || k == Timestamptz || k == Boolean {
			return false
		}
		seen[f] = true
	}
	return true
}

// Header returns the column names as the file has them.
func (c *CSVReader) Header() []string { return c.header }

// Line is the file line of the last record read.
func (c *CSVReader) Line() int { return c.line }

// Next returns the next record, or io.EOF.
func (c *CSVReader) Next() ([]string, error) {
	if c.first != nil {
		rec := c.first
		c.first = nil
		return rec, nil
	}
	rec, err := c.r.Read()
	if err != nil {
		return nil, c.wrap(err)
	}
	c.line, _ = c.r.FieldPos(0)
	return rec, nil
}

func (c *CSVReader) wrap(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		reason := pe.Err.Error()
		if errors.Is(pe.Err, csv.ErrFieldCount) {
			reason = fmt.Sprintf("wrong number of fields (the header has %d)", len(c.header))
		}
		return &RowError{Line: pe.StartLine, Reason: reason}
	}
	return err
}

// Close closes the file.
func (c *CSVReader) Close() error { return c.f.Close() }

// InferCSV reads the whole file once and returns its columns with their types.
func InferCSV(path string) ([]Column, error) {
	r, err := OpenCSV(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	names := Identifiers(r.Header())
	cols := make([]Column, len(names))
	for i := range cols {
		cols[i] = Column{Name: names[i], Original: r.Header()[i]}
	}
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		for i, v := range rec {
			cols[i].Observe(v)
		}
	}
	Finish(cols)
	return cols, nil
}
