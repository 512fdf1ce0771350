package ingest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
	"github.com/pierrec/lz4/v4"
)

// What reading a Parquet file may hold in memory. A few kilobytes of a file can declare (or
// decompress to) gigabytes, and parquet-go allocates what a page header says before
// decoding it, so every page header of a row group is checked, and every compressed page
// measured, before any value of the row group is decoded. Variables so that tests can lower
// them.
var (
	// MaxParquetPageBytes bounds one page, compressed or decoded. Writers default to pages of
	// 1 MiB (parquet-mr, Arrow) or less (parquet-go: 256 KiB).
	MaxParquetPageBytes int64 = 64 << 20
	// MaxParquetColumnChunkBytes bounds one column of a row group, uncompressed: as its footer
	// declares it and as its pages add up. Writers aim at row groups of 128 MiB to 1 GiB in all.
	MaxParquetColumnChunkBytes int64 = 1 << 30
	// MaxParquetRowGroupBytes bounds what reading one row group holds at once: for each column,
	// its dictionary and its largest page.
	MaxParquetRowGroupBytes int64 = 256 << 20
	// MaxParquetRecordValues bounds the values of one record (list elements count one each):
	// a record is assembled whole, at about 200 bytes a value. Records are read in batches of at
	// most this many values too.
	MaxParquetRecordValues int64 = 1 << 20
)

// leafColumns lists the file's leaf columns by their index.
func leafColumns(pf *parquet.File) []*parquet.Column {
	var leaves []*parquet.Column
	var walk func(c *parquet.Column)
	walk = func(c *parquet.Column) {
		if c.Leaf() {
			leaves = append(leaves, c)
		}
		for _, ch := range c.Columns() {
			walk(ch)
		}
	}
	walk(pf.Root())
	return leaves
}

// recordValues returns the most values a record of row group g may hold, refusing it over
// MaxParquetRecordValues. Only lists make a record of more values than columns; they are
// counted from the repetition levels of their pages, decoded one page at a time (after
// checkRowGroup has bounded them).
func recordValues(rg parquet.RowGroup, g int, leaves []*parquet.Column) (int64, error) {
	n := int64(0) // the sum of each column's largest: a bound for any one record
	for _, cc := range rg.ColumnChunks() {
		if c := cc.Column(); c < 0 || c >= len(leaves) || leaves[c].MaxRepetitionLevel() == 0 {
			n++
			continue
		}
		largest, err := largestRecord(cc.Pages())
		if err != nil {
			return 0, &RowError{Reason: fmt.Sprintf("cannot read the Parquet file: row group %d: %v", g+1, err)}
		}
		n += largest
	}
	if n > MaxParquetRecordValues {
		return 0, &RowError{Reason: fmt.Sprintf("row group %d has records of up to %d values (list elements count one each), over the limit of %d; write long lists as several records",
			g+1, n, MaxParquetRecordValues)}
	}
	return n, nil
}

// largestRecord is the most values one record has in a repeated column.
func largestRecord(pages parquet.Pages) (int64, error) {
	defer func() { _ = pages.Close() }()
	var run, largest int64
	for {
		p, err := pages.ReadPage()
		if err == io.EOF {
			return max(largest, run), nil
		} else if err != nil {
			return 0, err
		}
		for _, r := range p.RepetitionLevels() {
			if r == 0 { // a new record
				largest, run = max(largest, run), 0
			}
			run++
		}
		parquet.Release(p)
		if largest > MaxParquetRecordValues || run > MaxParquetRecordValues {
			return max(largest, run), nil
		}
	}
}

// valueBytes is what a value costs decoded, besides its bytes in the page: its levels, its
// dictionary index or offset. Run-length and dictionary encodings pack a value in less.
const valueBytes = 16

const parquetFix = "; write the file with smaller row groups and pages (most writers take a row group size and a page size)"

// checkRowGroup walks every page header of row group g and refuses it when a page, a column
// chunk or the row group is over its limit, or when a page decompresses to more than its
// header says. It reads each page once, holding at most one compressed page of a block codec.
func (s *chunkScanner) checkRowGroup(r io.ReaderAt, md *format.FileMetaData, g int) error {
	var held int64
	for c := range md.RowGroups[g].Columns {
		m := &md.RowGroups[g].Columns[c].MetaData
		s.where = fmt.Sprintf("column %q of row group %d", strings.Join(m.PathInSchema, "."), g+1)
		if m.TotalUncompressedSize > MaxParquetColumnChunkBytes {
			return s.tooLarge("is", m.TotalUncompressedSize, "uncompressed", MaxParquetColumnChunkBytes)
		}
		if c >= len(s.leaves) {
			return &RowError{Reason: fmt.Sprintf("not a readable Parquet file: %s is not in its schema", s.where)}
		}
		n, err := s.scan(r, m, s.leaves[c])
		if err != nil {
			return err
		}
		held += n
	}
	if cap(s.page) > 4<<20 { // not held while the row group is read
		s.page = nil
	}
	if held > MaxParquetRowGroupBytes {
		return &RowError{Reason: fmt.Sprintf("row group %d needs %s of memory to read (its dictionaries and largest pages), over the limit of %s%s",
			g+1, mib(held), mib(MaxParquetRowGroupBytes), parquetFix)}
	}
	return nil
}

func (s *chunkScanner) close() {
	if s.zstd != nil {
		s.zstd.Close()
	}
}

type chunkScanner struct {
	leaves         []*parquet.Column // the file's leaf columns, by index
	where          string
	zstd           *zstd.Decoder
	br             *bufio.Reader
	buf            []byte // a compressed page of a block codec
	hdr            []byte
	levels, page   []byte // a page decompressed: a v2 page's levels, the rest
	prefix, suffix []int32
}

// scan reads the page headers of one column chunk as parquet-go will read them, and every
// page's content, and returns what reading the chunk holds at once: its dictionary and its
// largest data page, decoded.
func (s *chunkScanner) scan(r io.ReaderAt, m *format.ColumnMetaData, leaf *parquet.Column) (int64, error) {
	start := m.DataPageOffset
	if m.DictionaryPageOffset != 0 {
		start = m.DictionaryPageOffset
	}
	sec := io.NewSectionReader(r, start, m.TotalCompressedSize)
	if s.br == nil {
		s.br = bufio.NewReaderSize(sec, 4096)
	} else {
		s.br.Reset(sec)
	}
	var dict, page, total int64
	for k := 1; ; k++ {
		pos, _ := sec.Seek(0, io.SeekCurrent)
		left := m.TotalCompressedSize - (pos - int64(s.br.Buffered()))
		if left <= 0 {
			break
		}
		// The header is read as bytes first: parquet-go trusts its lengths and counts.
		w := thriftWalker{r: s.br, max: min(left, maxPageHeader), rec: s.hdr[:0], record: true}
		err := w.walkStruct(0)
		s.hdr = w.rec
		if err != nil && w.max == maxPageHeader && w.n == maxPageHeader {
			return 0, s.unreadable(k, fmt.Errorf("%w: a page header over %s", errThrift, mib(maxPageHeader)))
		} else if err == nil && w.cost > MaxParquetPageBytes {
			err = fmt.Errorf("%w: its lists decode to %s", errThrift, mib(w.cost))
		}
		if err != nil {
			return 0, s.unreadable(k, err)
		}
		var h format.PageHeader
		if err := thrift.Unmarshal(new(thrift.CompactProtocol), s.hdr, &h); err != nil {
			return 0, s.unreadable(k, err)
		}
		if h.CompressedPageSize < 0 || h.UncompressedPageSize < 0 {
			return 0, s.unreadable(k, errors.New("negative page size"))
		}
		size := int64(h.UncompressedPageSize)
		var values int64
		switch {
		case h.DataPageHeader.Valid:
			values = int64(h.DataPageHeader.V.NumValues)
		case h.DataPageHeaderV2.Valid:
			values = int64(h.DataPageHeaderV2.V.NumValues)
		case h.DictionaryPageHeader.Valid:
			values = int64(h.DictionaryPageHeader.V.NumValues)
		}
		decoded := size + valueBytes*max(values, 0)
		switch {
		case int64(h.CompressedPageSize) > MaxParquetPageBytes:
			return 0, s.tooLarge(fmt.Sprintf("has a page (%d) of", k), int64(h.CompressedPageSize), "compressed", MaxParquetPageBytes)
		case decoded > MaxParquetPageBytes:
			return 0, s.tooLarge(fmt.Sprintf("has a page (%d) that decodes to", k), decoded, "", MaxParquetPageBytes)
		}
		total += size
		if total > MaxParquetColumnChunkBytes {
			return 0, s.tooLarge("is at least", total, "uncompressed", MaxParquetColumnChunkBytes)
		}
		if h.Type == format.DictionaryPage {
			dict = max(dict, decoded)
		} else {
			page = max(page, decoded)
		}
		if err := s.read(m.Codec, &h, k); err != nil {
			return 0, err
		}
		if err := s.checkPage(leaf, &h, s.levels, s.page, k); err != nil {
			return 0, err
		}
	}
	return dict + page, nil
}

// read reads the page's body into s.levels (a v2 page's levels, stored apart) and s.page (the
// rest, decompressed), and fails when it decompresses to more than its header says (parquet-go
// would grow its buffer to whatever the data makes). It holds at most the header's size.
func (s *chunkScanner) read(codec format.CompressionCodec, h *format.PageHeader, k int) error {
	body := io.LimitReader(s.br, int64(h.CompressedPageSize))
	defer func() { _, _ = io.Copy(io.Discard, body) }() // skips what is left of the page; a read error shows at the next read
	s.levels, s.page = s.levels[:0], s.page[:0]
	if v2 := h.DataPageHeaderV2; v2.Valid { // levels come first, uncompressed
		if v2.V.IsCompressed.Valid && !v2.V.IsCompressed.V {
			codec = format.Uncompressed
		}
		levels := int64(v2.V.RepetitionLevelsByteLength) + int64(v2.V.DefinitionLevelsByteLength)
		if levels < 0 || levels > int64(h.CompressedPageSize) {
			return s.unreadable(k, fmt.Errorf("levels of %d bytes in a page of %d", levels, h.CompressedPageSize))
		}
		s.levels = slices.Grow(s.levels, int(levels))[:levels]
		if _, err := io.ReadFull(body, s.levels); err != nil {
			return s.unreadable(k, io.ErrUnexpectedEOF)
		}
	}
	limit := int64(h.UncompressedPageSize)
	out := bytes.NewBuffer(s.page)
	out.Grow(int(limit) + 1 + bytes.MinRead) // once: the header's size was checked, and ReadFrom grows by doubling
	defer func() { s.page = out.Bytes() }()
	var n int64
	var err error
	switch codec {
	case format.Snappy, format.Lz4Raw: // block formats: the whole block (after a v2 page's levels), at most a page
		size := int(h.CompressedPageSize) - len(s.levels)
		if cap(s.buf) < size {
			s.buf = make([]byte, size)
		}
		s.buf = s.buf[:size]
		var m int
		if m, err = io.ReadFull(body, s.buf); err == nil {
			if codec == format.Snappy {
				var l int
				l, err = snappy.DecodedLen(s.buf[:m])
				n = int64(l)
			} else {
				n, err = lz4BlockLen(s.buf[:m])
			}
		}
		if err == nil && n <= limit {
			out.Grow(int(n))
			dst := out.AvailableBuffer()[:n]
			if codec == format.Snappy {
				_, err = snappy.Decode(dst, s.buf[:m])
			} else {
				_, err = lz4.UncompressBlock(s.buf[:m], dst)
			}
			out.Write(dst)
		}
	case format.Gzip:
		var zr *gzip.Reader
		if zr, err = gzip.NewReader(body); err == nil {
			n, err = io.Copy(out, io.LimitReader(zr, limit+1))
		}
	case format.Zstd:
		if s.zstd == nil {
			s.zstd, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
				zstd.WithDecoderMaxWindow(uint64(max(MaxParquetPageBytes, 8<<20))))
			if err != nil {
				return err
			}
		}
		if err = s.zstd.Reset(body); err == nil {
			n, err = io.Copy(out, io.LimitReader(s.zstd, limit+1))
		}
	case format.Brotli:
		n, err = io.Copy(out, io.LimitReader(brotli.NewReader(body), limit+1))
	case format.Uncompressed:
		_, err = io.Copy(out, body)
	default: // a codec parquet-go refuses
		return nil
	}
	if n > limit {
		return &RowError{Reason: fmt.Sprintf("%s has a page (%d) that decompresses to more than the %s its header declares: the file is corrupt or hostile",
			s.where, k, mib(limit))}
	}
	if err != nil {
		return s.unreadable(k, err)
	}
	return nil
}

// lz4BlockLen is the length an LZ4 block decompresses to, counted from its sequences.
func lz4BlockLen(b []byte) (int64, error) {
	var n int64
	length := func(i int, l int64) (int, int64, bool) {
		if l != 15 {
			return i, l, true
		}
		for i < len(b) {
			l += int64(b[i])
			i++
			if b[i-1] != 255 {
				return i, l, true
			}
		}
		return i, l, false
	}
	for i := 0; i < len(b); {
		tok := b[i]
		i++
		var lit int64
		var ok bool
		if i, lit, ok = length(i, int64(tok>>4)); !ok || int64(len(b)-i) < lit {
			return n, errors.New("corrupt LZ4 block")
		}
		i += int(lit)
		n += lit
		if i == len(b) { // the last sequence has only literals
			return n, nil
		}
		if i+2 > len(b) {
			return n, errors.New("corrupt LZ4 block")
		}
		i += 2
		var match int64
		if i, match, ok = length(i, int64(tok&15)); !ok {
			return n, errors.New("corrupt LZ4 block")
		}
		n += match + 4
	}
	return n, nil
}

func (s *chunkScanner) tooLarge(what string, n int64, kind string, limit int64) error {
	if kind != "" {
		kind = " " + kind
	}
	return &RowError{Reason: fmt.Sprintf("%s %s %s%s, over the limit of %s%s", s.where, what, mib(n), kind, mib(limit), parquetFix)}
}

func (s *chunkScanner) unreadable(k int, err error) error {
	return &RowError{Reason: fmt.Sprintf("not a readable Parquet file: %s, page %d: %v", s.where, k, err)}
}

// mib writes a size in MiB, KiB or bytes.
func mib(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
