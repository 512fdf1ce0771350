package ingest

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// parquet-go decodes the footer and page headers (Thrift compact protocol) trusting their
// counts: a list declared of 2^31 elements is allocated before its first element is read,
// and a 23-byte file stopped the process ("fatal error: runtime: out of memory"). thriftWalk
// reads such a structure first, element by element, and refuses counts and lengths larger
// than the bytes that remain, nesting deeper than thriftMaxDepth, and lists whose decoded
// elements would take more than the caller's budget.

const thriftMaxDepth = 64

var errThrift = errors.New("malformed Thrift structure")

// Go sizes of decoded list elements, as charged against the budget: a struct element as the
// largest of the footer's (format.ColumnChunk, 560 bytes), anything else as a slice header.
const thriftStructCost, thriftValueCost = 640, 24

type thriftWalker struct {
	r      io.ByteReader
	n, max int64  // bytes read, bytes there are
	cost   int64  // charged for list elements
	rec    []byte // the bytes read, when recording
	record bool
}

// maxPageHeader bounds a page header (its statistics hold a few values, cut short by writers).
const maxPageHeader = 1 << 20

func (w *thriftWalker) byte() (byte, error) {
	if w.n >= w.max {
		return 0, io.ErrUnexpectedEOF
	}
	b, err := w.r.ReadByte()
	if err != nil {
		return 0, err
	}
	w.n++
	if w.record {
		w.rec = append(w.rec, b)
	}
	return b, nil
}

func (w *thriftWalker) uvarint() (uint64, error) {
	var x uint64
	for s := 0; s < 64; s += 7 {
		b, err := w.byte()
		if err != nil {
			return 0, err
		}
		x |= uint64(b&0x7f) << s
		if b < 0x80 {
			return x, nil
		}
	}
	return 0, errThrift
}

// count reads a length or count and checks it against the bytes that remain: every element
// and every byte takes at least one.
func (w *thriftWalker) count() (int64, error) {
	n, err := w.uvarint()
	if err != nil {
		return 0, err
	}
	if n > uint64(w.max-w.n) {
		return 0, fmt.Errorf("%w: a count of %d with %d bytes left", errThrift, n, w.max-w.n)
	}
	return int64(n), nil
}

func (w *thriftWalker) skip(k int64) error {
	for range k {
		if _, err := w.byte(); err != nil {
			return err
		}
	}
	return nil
}

// walkStruct reads one struct, up to its stop field.
func (w *thriftWalker) walkStruct(depth int) error {
	if depth > thriftMaxDepth {
		return fmt.Errorf("%w: nested deeper than %d", errThrift, thriftMaxDepth)
	}
	for {
		b, err := w.byte()
		if err != nil {
			return err
		}
		if b == 0 {
			return nil
		}
		if b>>4 == 0 { // a field id of its own
			if _, err := w.uvarint(); err != nil {
				return err
			}
		}
		if t := b & 0x0f; t != 1 && t != 2 { // booleans are in the field's byte
			if err := w.walkValue(t, depth); err != nil {
				return err
			}
		}
	}
}

func (w *thriftWalker) walkValue(t byte, depth int) error {
	switch t {
	case 1, 2, 3: // a boolean in a list, a byte
		return w.skip(1)
	case 4, 5, 6: // integers: varints
		_, err := w.uvarint()
		return err
	case 7: // double
		return w.skip(8)
	case 8: // binary
		n, err := w.count()
		if err != nil {
			return err
		}
		return w.skip(n)
	case 9, 10: // list, set
		b, err := w.byte()
		if err != nil {
			return err
		}
		n := int64(b >> 4)
		if n == 15 {
			if n, err = w.count(); err != nil {
				return err
			}
		}
		return w.walkElements(n, []byte{b & 0x0f}, depth)
	case 11: // map
		n, err := w.count()
		if err != nil || n == 0 {
			return err
		}
		b, err := w.byte()
		if err != nil {
			return err
		}
		return w.walkElements(n, []byte{b >> 4, b & 0x0f}, depth)
	case 12:
		return w.walkStruct(depth + 1)
	case 13: // uuid
		return w.skip(16)
	}
	return fmt.Errorf("%w: unknown type %d", errThrift, t)
}

func (w *thriftWalker) walkElements(n int64, types []byte, depth int) error {
	for _, t := range types {
		if t == 12 {
			w.cost += n * thriftStructCost
		} else {
			w.cost += n * thriftValueCost
		}
	}
	for range n {
		for _, t := range types {
			if err := w.walkValue(t, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// MaxParquetFooterBytes bounds a Parquet file's footer (its schema and the places and
// statistics of its column chunks), as it is stored and as it is decoded. Footers are kilobytes;
// one of 1,000 columns in 100 row groups decodes to about 100 MiB.
var MaxParquetFooterBytes int64 = 256 << 20

// checkParquetFooter checks the footer before parquet-go decodes it.
func checkParquetFooter(r io.ReaderAt, size int64) error {
	var tail [8]byte
	if size < 12 { // parquet-go reads a footer length out of the magic bytes, and allocates it
		return &RowError{Reason: fmt.Sprintf("not a readable Parquet file: %d bytes is too short to be one", size)}
	}
	if _, err := r.ReadAt(tail[:], size-8); err != nil {
		return err
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	if string(tail[4:]) == "PARE" { // an encrypted footer: there is no key to read it with
		return &RowError{Reason: "encrypted Parquet files are not supported"}
	}
	if string(tail[4:]) != "PAR1" {
		return nil // parquet-go says what is wrong
	}
	if n > size-12 { // parquet-go would allocate it before reading (FuzzParquet: 3.5 GiB for a 271-byte file)
		return &RowError{Reason: fmt.Sprintf("not a readable Parquet file: its footer is said to be %s long, more than the file holds", mib(n))}
	}
	if n > MaxParquetFooterBytes {
		return &RowError{Reason: fmt.Sprintf("the Parquet footer is %s, over the limit of %s%s", mib(n), mib(MaxParquetFooterBytes), parquetFix)}
	}
	w := &thriftWalker{r: bufio.NewReaderSize(io.NewSectionReader(r, size-8-n, n), int(min(n, 64<<10))), max: n}
	if err := w.walkStruct(0); err != nil {
		return &RowError{Reason: "not a readable Parquet file: its footer: " + err.Error()}
	}
	if w.cost > MaxParquetFooterBytes {
		return &RowError{Reason: fmt.Sprintf("the Parquet footer decodes to more than %s, over the limit of %s%s", mib(w.cost), mib(MaxParquetFooterBytes), parquetFix)}
	}
	return nil
}
