package ingest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// member is one key and value of a JSON object, in file order (a map would lose the order
// the columns are named in).
type member struct {
	key string
	val any
}

// jsonSource streams the objects of a JSON array (token by token, one element decoded at a
// time) or of an NDJSON file (line by line). Numbers stay json.Number: exact, and integers
// are told from decimals.
type jsonSource struct {
	f      *os.File
	ndjson bool
	lc     *lineCounter // JSON array: the decoder reads through it
	dec    *json.Decoder
	lr     lineReader // NDJSON
	state  int        // JSON array: 0 before '[', 1 inside, 2 after ']'
	cur    int
	kvs    []member
	index  map[string]int // column of each key (by original name)
}

func openJSONSource(path string, f Format, cols []Column) (*jsonSource, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(fh, 1<<20)
	if b, _ := br.Peek(len(bom)); bytes.Equal(b, bom) {
		_, _ = br.Discard(len(bom)) // Peek has the bytes: Discard cannot fail
	}
	s := &jsonSource{f: fh, ndjson: f == NDJSON, index: map[string]int{}}
	if s.ndjson {
		s.lr = lineReader{br: br}
	} else {
		s.lc = &lineCounter{r: br}
		s.dec = json.NewDecoder(s.lc)
		s.dec.UseNumber()
	}
	for i, c := range cols {
		s.index[c.Original] = i
	}
	return s, nil
}

func (s *jsonSource) read(row []Value) error {
	obj, err := s.object()
	if err != nil {
		return err
	}
	clear(row) // a missing key is NULL
	for _, m := range obj {
		i, ok := s.index[m.key]
		if !ok {
			return &RowError{Line: s.cur, Reason: fmt.Sprintf("key %q is not a column of the dataset", m.key)}
		}
		row[i] = m.val
	}
	return nil
}

// object returns the members of the next object (reused by the next call), or io.EOF.
func (s *jsonSource) object() ([]member, error) {
	if s.ndjson {
		return s.nextLine()
	}
	switch s.state {
	case 0:
		tok, err := s.dec.Token()
		if err != nil {
			return nil, s.fail(err)
		}
		if d, ok := tok.(json.Delim); !ok || d != '[' {
			return nil, &RowError{Line: 1, Reason: "the file is not a JSON array of objects"}
		}
		s.state = 1
	case 2:
		return nil, io.EOF
	}
	if !s.dec.More() {
		if _, err := s.dec.Token(); err != nil { // ]
			return nil, s.fail(err)
		}
		s.state = 2
		if _, err := s.dec.Token(); err != io.EOF {
			return nil, &RowError{Line: s.lc.lineAt(s.dec.InputOffset()), Reason: "unexpected data after the array"}
		}
		return nil, io.EOF
	}
	// One element is at most maxLine bytes, as an NDJSON line is: it is decoded whole, at up to
	// 30 times its size (a 100 MB element of small numbers held 2.9 GB).
	s.lc.limit = s.dec.InputOffset() + maxLine + lineCounterRead
	defer func() { s.lc.limit = 0 }()
	tok, err := s.dec.Token()
	if err != nil {
		return nil, s.fail(err)
	}
	s.cur = s.lc.lineAt(s.dec.InputOffset() - 1)
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, &RowError{Line: s.cur, Reason: "an element of the array is not an object"}
	}
	return s.members(s.dec)
}

// nextLine reads the next non-blank NDJSON line as one object.
func (s *jsonSource) nextLine() ([]member, error) {
	for {
		line, err := s.lr.next()
		if err != nil {
			return nil, err
		}
		b := bytes.TrimSpace(line)
		if len(b) == 0 {
			continue
		}
		s.cur = s.lr.n
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if tok, err := dec.Token(); err != nil {
			return nil, s.fail(err)
		} else if d, ok := tok.(json.Delim); !ok || d != '{' {
			return nil, &RowError{Line: s.cur, Reason: "the line is not a JSON object"}
		}
		obj, err := s.members(dec)
		if err != nil {
			return nil, err
		}
		if _, err := dec.Token(); err != io.EOF {
			return nil, &RowError{Line: s.cur, Reason: "the line holds more than one JSON value"}
		}
		return obj, nil
	}
}

// members reads an object's members after its '{', and its '}'.
func (s *jsonSource) members(dec *json.Decoder) ([]member, error) {
	s.kvs = s.kvs[:0]
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, s.fail(err)
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, s.fail(err)
		}
		s.kvs = append(s.kvs, member{tok.(string), v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, s.fail(err)
	}
	return s.kvs, nil
}

// fail turns decoding errors into RowErrors at the best line known.
func (s *jsonSource) fail(err error) error {
	line := s.cur
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		if !s.ndjson {
			line = s.lc.lineAt(se.Offset)
		}
		return &RowError{Line: line, Reason: "invalid JSON: " + se.Error()}
	case errors.Is(err, errLineTooLong):
		return &RowError{Line: line, Reason: "the record is " + errLineTooLong.Error()}
	case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
		if !s.ndjson {
			line = s.lc.lineAt(s.lc.off)
		}
		return &RowError{Line: line, Reason: "the JSON ends unexpectedly"}
	}
	return err
}

func (s *jsonSource) line() int    { return s.cur }
func (s *jsonSource) Close() error { return s.f.Close() }

// lineCounter passes a reader through, noting where its newlines are, so that the line of
// a byte offset the JSON decoder reports can be found without keeping the file.
type lineCounter struct {
	r     io.Reader
	off   int64   // bytes passed through
	limit int64   // when not 0, the offset past which reading fails with errLineTooLong
	nl    []int64 // offsets of newlines not yet counted into base
	head  int     // nl[:head] are counted
	base  int
}

// lineCounterRead bounds one read, so that the decoder holds at most that much past what it
// decodes.
const lineCounterRead = 64 << 10

func (c *lineCounter) Read(p []byte) (int, error) {
	if c.limit != 0 && c.off >= c.limit {
		return 0, errLineTooLong
	}
	n, err := c.r.Read(p[:min(len(p), lineCounterRead)])
	for i := 0; i < n; {
		j := bytes.IndexByte(p[i:n], '\n')
		if j < 0 {
			break
		}
		c.nl = append(c.nl, c.off+int64(i+j))
		i += j + 1
	}
	c.off += int64(n)
	return n, err
}

// lineAt is the 1-based line of byte offset off; offsets must not decrease between calls.
func (c *lineCounter) lineAt(off int64) int {
	for c.head < len(c.nl) && c.nl[c.head] < off {
		c.head++
		c.base++
	}
	if c.head > 4096 && c.head > len(c.nl)/2 { // forget counted newlines
		c.nl = c.nl[:copy(c.nl, c.nl[c.head:])]
		c.head = 0
	}
	return c.base + 1
}
