package ingest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
)

// Dialect is how a CSV file is written.
type Dialect struct {
	Delimiter string `json:"delimiter"` // one of , ; TAB |
	Quote     string `json:"quote"`     // " or '
	Header    bool   `json:"header"`    // the first record names the columns
}

// sniffDialect tries each delimiter and quote on the sample and keeps the one that splits
// every record into the same, largest number of fields; ok is false when none gives more
// than one field (a single-column file, or not CSV at all). A truncated sample may end in
// the middle of a record, which is not held against a candidate.
func sniffDialect(head []byte, truncated bool) (d Dialect, ok bool) {
	sample := head
	if truncated {
		if i := bytes.LastIndexByte(sample, '\n'); i > 0 {
			sample = sample[:i+1]
		}
	}
	// Single quotes are a rare convention: only tried first when no double quote appears
	// and a field starts with one.
	quotes := []byte{'"'}
	if bytes.IndexByte(sample, '"') < 0 && (bytes.HasPrefix(sample, []byte("'")) || bytes.Contains(sample, []byte("\n'")) || bytes.Contains(sample, []byte(",'")) ||
		bytes.Contains(sample, []byte(";'")) || bytes.Contains(sample, []byte("\t'")) || bytes.Contains(sample, []byte("|'"))) {
		quotes = []byte{'\'', '"'}
	}
	best := 1
	d = Dialect{Delimiter: ",", Quote: `"`}
	for _, q := range quotes {
		for _, delim := range []byte{',', ';', '\t', '|'} {
			if n := consistentFields(sample, delim, q, truncated); n > best {
				best, d, ok = n, Dialect{Delimiter: string(delim), Quote: string(q)}, true
			}
		}
		if ok {
			break
		}
	}
	p := csvParser{lr: lineReader{br: bufio.NewReader(bytes.NewReader(sample))}, delim: d.Delimiter[0], quote: d.Quote[0]}
	if first, err := p.read(); err == nil {
		d.Header = isHeader(first)
	}
	return d, ok
}

// consistentFields is the number of fields of every record of the sample, 0 when they differ
// or the sample does not parse.
func consistentFields(sample []byte, delim, quote byte, truncated bool) int {
	p := csvParser{lr: lineReader{br: bufio.NewReader(bytes.NewReader(sample))}, delim: delim, quote: quote}
	n := 0
	for {
		rec, err := p.read()
		if err == io.EOF || (err != nil && truncated && p.unclosed) {
			return n
		}
		if err != nil || (n > 0 && len(rec) != n) {
			return 0
		}
		n = len(rec)
	}
}

// isHeader decides whether the first record names the columns: it does when it has a name
// and all its fields are text (empty fields allowed: pandas leaves the index column
// unnamed). A first record of numbers, dates, booleans or UUIDs is data. A file whose every
// value is text is read as having a header, as almost all such files do.
func isHeader(rec []string) bool {
	named := false
	for _, f := range rec {
		if f == "" {
			continue
		}
		if Kind(f) != Text {
			return false
		}
		named = true
	}
	return named
}

// csvParser reads RFC 4180 records with a given delimiter and quote. Fields may be quoted
// (doubled quotes inside) and span lines; a quote inside an unquoted field is kept as is
// (5" screen). Text after a closing quote and a quote that is never closed are errors.
type csvParser struct {
	lr           lineReader
	delim, quote byte
	start        int      // line where the last record starts
	unclosed     bool     // the last error was a quote never closed
	rec          []byte   // the unquoted bytes of the record's fields
	ends         []int    // where each field ends in rec
	fields       []string // reused between records
}

func newCSVParser(r io.Reader, d Dialect) *csvParser {
	p := &csvParser{lr: lineReader{br: bufio.NewReaderSize(r, 1<<20)}, delim: ',', quote: '"'}
	if d.Delimiter != "" {
		p.delim = d.Delimiter[0]
	}
	if d.Quote != "" {
		p.quote = d.Quote[0]
	}
	return p
}

// read returns the fields of the next record, skipping blank lines, or io.EOF. The strings
// share one allocation per record; the slice is reused by the next call.
func (p *csvParser) read() ([]string, error) {
	var line []byte
	var err error
	for {
		if line, err = p.lr.next(); err != nil {
			return nil, err
		}
		if eol(line) > 0 {
			break
		}
	}
	p.start, p.unclosed = p.lr.n, false
	p.rec, p.ends = p.rec[:0], p.ends[:0]
	pos, end := 0, eol(line)
	for {
		if pos < end && line[pos] == p.quote {
			pos++
			for {
				i := bytes.IndexByte(line[pos:end], p.quote)
				if i >= 0 {
					p.rec = append(p.rec, line[pos:pos+i]...)
					pos += i + 1
					if pos < end && line[pos] == p.quote { // "" is a quote
						p.rec = append(p.rec, p.quote)
						pos++
						continue
					}
					break
				}
				// The field goes on on the next line (a \r\n inside it becomes \n).
				p.rec = append(append(p.rec, line[pos:end]...), '\n')
				if line, err = p.lr.next(); err == io.EOF || len(p.rec) > maxLine {
					p.unclosed = true
					return nil, &RowError{Line: p.start, Reason: "a quoted field starting on this line is never closed"}
				} else if err != nil {
					return nil, err
				}
				pos, end = 0, eol(line)
			}
			p.ends = append(p.ends, len(p.rec))
			switch {
			case pos == end:
				return p.finish(), nil
			case line[pos] == p.delim:
				pos++
			default:
				return nil, &RowError{Line: p.lr.n, Reason: fmt.Sprintf("unexpected %q after a closing quote (quotes inside a quoted field must be doubled)", line[pos])}
			}
			continue
		}
		i := bytes.IndexByte(line[pos:end], p.delim)
		if i < 0 {
			p.rec = append(p.rec, line[pos:end]...)
			p.ends = append(p.ends, len(p.rec))
			return p.finish(), nil
		}
		p.rec = append(p.rec, line[pos:pos+i]...)
		p.ends = append(p.ends, len(p.rec))
		pos += i + 1
	}
}

func (p *csvParser) finish() []string {
	s := string(p.rec)
	p.fields = p.fields[:0]
	prev := 0
	for _, e := range p.ends {
		p.fields = append(p.fields, s[prev:e])
		prev = e
	}
	return p.fields
}

// csvSource streams a CSV file's records, checking that each has as many fields as the first.
type csvSource struct {
	f       *os.File
	p       *csvParser
	dialect Dialect
	names   []string // the header, or column_1..n
	first   []string // the first record when the file has no header
	cur     int      // line of the last record returned
}

// openCSVSource opens a CSV file with the given dialect, or the detected one when d is nil,
// and reads its first record. A UTF-8 byte order mark is skipped.
func openCSVSource(path string, d *Dialect) (*csvSource, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(f, 1<<20)
	head, peekErr := br.Peek(HeadSize)
	if bytes.HasPrefix(head, bom) {
		_, _ = br.Discard(len(bom)) // Peek has the bytes: Discard cannot fail
		head = head[len(bom):]
	}
	s := &csvSource{f: f}
	if d != nil {
		s.dialect = *d
	} else {
		s.dialect, _ = sniffDialect(head, peekErr == nil)
	}
	s.p = newCSVParser(br, s.dialect)
	rec, err := s.p.read()
	if err == io.EOF {
		err = &RowError{Reason: "the file has no records"}
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	if len(rec) > MaxColumns {
		_ = f.Close()
		return nil, tooManyColumns(fmt.Sprintf("the file has %d columns", len(rec)), s.p.start)
	}
	rec = append([]string(nil), rec...)
	if s.dialect.Header {
		s.names = rec
	} else {
		s.first = rec
		for i := range rec {
			s.names = append(s.names, "column_"+strconv.Itoa(i+1))
		}
	}
	return s, nil
}

// next returns the next record (reused by the following call), or io.EOF.
func (s *csvSource) next() ([]string, error) {
	if s.first != nil {
		rec := s.first
		s.first, s.cur = nil, s.p.start
		return rec, nil
	}
	rec, err := s.p.read()
	if err != nil {
		return nil, err
	}
	s.cur = s.p.start
	if len(rec) != len(s.names) {
		what := "the header has"
		if !s.dialect.Header {
			what = "the first line has"
		}
		return nil, &RowError{Line: s.cur, Reason: fmt.Sprintf("%d fields where %s %d", len(rec), what, len(s.names))}
	}
	return rec, nil
}

func (s *csvSource) read(row []Value) error {
	rec, err := s.next()
	if err != nil {
		return err
	}
	for i, v := range rec {
		if v == "" {
			row[i] = nil
		} else {
			row[i] = v
		}
	}
	return nil
}

func (s *csvSource) line() int    { return s.cur }
func (s *csvSource) Close() error { return s.f.Close() }
