package ingest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// parquet-go sizes its buffers from counts inside a page's encodings before it decodes them:
// the runs of an RLE stream (levels, dictionary indexes, booleans), the total of a
// DELTA_BINARY_PACKED header, the prefix lengths of a DELTA_BYTE_ARRAY, a FIXED_LEN_BYTE_ARRAY's
// declared length times the values. A page of a hundred bytes could make it allocate tens of
// gigabytes (TestParquetEncodingBombs). So every data page's streams are read here first: none
// may declare more values than the page (plus the padding of a bit-packed run), and what the
// page decodes to is bounded by MaxParquetPageBytes.

// checkPage checks a page's decompressed content: levels holds a v2 page's level streams
// (stored apart from its values), data the rest.
func (s *chunkScanner) checkPage(leaf *parquet.Column, h *format.PageHeader, levels, data []byte, k int) error {
	kind := leaf.Type().Kind()
	var values int64
	var enc format.Encoding
	switch {
	case h.DictionaryPageHeader.Valid:
		return s.checkFixed(leaf, int64(h.DictionaryPageHeader.V.NumValues), k)
	case h.DataPageHeader.Valid:
		v := h.DataPageHeader.V
		values, enc = int64(v.NumValues), v.Encoding
		// v1: each level stream is its length (4 bytes, little endian), then the stream
		for _, l := range [...]struct {
			max  int
			enc  format.Encoding
			what string
		}{{leaf.MaxRepetitionLevel(), v.RepetitionLevelEncoding, "repetition"}, {leaf.MaxDefinitionLevel(), v.DefinitionLevelEncoding, "definition"}} {
			if l.max == 0 {
				continue
			}
			if len(data) < 4 || int64(binary.LittleEndian.Uint32(data)) > int64(len(data)-4) {
				return nil // parquet-go says the page is short
			}
			n := 4 + int(binary.LittleEndian.Uint32(data))
			if err := levelCount(data[4:n], l.enc, bits.Len(uint(l.max)), values); err != nil {
				return s.unreadable(k, fmt.Errorf("its %s levels: %w", l.what, err))
			}
			data = data[n:]
		}
	case h.DataPageHeaderV2.Valid:
		v := h.DataPageHeaderV2.V
		values, enc = int64(v.NumValues), v.Encoding
		rep := levels[:min(max(int(v.RepetitionLevelsByteLength), 0), len(levels))]
		for _, l := range [...]struct {
			max    int
			stream []byte
			what   string
		}{{leaf.MaxRepetitionLevel(), rep, "repetition"}, {leaf.MaxDefinitionLevel(), levels[len(rep):], "definition"}} {
			if l.max == 0 {
				continue
			}
			if err := levelCount(l.stream, format.RLE, bits.Len(uint(l.max)), values); err != nil {
				return s.unreadable(k, fmt.Errorf("its %s levels: %w", l.what, err))
			}
		}
	default:
		return nil
	}
	if err := s.checkFixed(leaf, values, k); err != nil {
		return err
	}
	var err error
	switch enc {
	case format.PlainDictionary, format.RLEDictionary: //nolint:staticcheck // SA1019: deprecated for writers, older files still have it; the indexes' bit width, then their runs
		if len(data) > 0 && data[0] <= 32 {
			_, err = rleCount(data[1:], int(data[0]), values)
		}
	case format.RLE: // booleans: the stream's length, then the stream
		if kind == parquet.Boolean && len(data) >= 4 && int64(binary.LittleEndian.Uint32(data)) <= int64(len(data)-4) {
			_, err = rleCount(data[4:4+binary.LittleEndian.Uint32(data)], 1, values)
		}
	case format.DeltaBinaryPacked, format.DeltaLengthByteArray: // the values' (or lengths') header
		_, err = readDeltaHeader(data, values)
	case format.DeltaByteArray:
		var n int64
		if n, err = s.deltaByteArraySize(data, values); err == nil && n > MaxParquetPageBytes {
			return s.tooLarge(fmt.Sprintf("has a page (%d) that decodes to", k), n, "", MaxParquetPageBytes)
		}
	}
	if err != nil {
		return s.unreadable(k, fmt.Errorf("its %s values: %w", enc, err))
	}
	return nil
}

// checkFixed bounds what values of a FIXED_LEN_BYTE_ARRAY column decode to: the schema says
// the length of each, and parquet-go allocates the product before decoding.
func (s *chunkScanner) checkFixed(leaf *parquet.Column, values int64, k int) error {
	t := leaf.Type()
	if t.Kind() != parquet.FixedLenByteArray || values <= 0 {
		return nil
	}
	if n := values * int64(max(t.Length(), 0)); n > MaxParquetPageBytes || n < 0 {
		return s.tooLarge(fmt.Sprintf("has a page (%d) of %d values of %d bytes, which decodes to", k, values, t.Length()), n, "", MaxParquetPageBytes)
	}
	return nil
}

// errTooManyValues says a stream of a page declares more values than the page.
var errTooManyValues = errors.New("more values than the page holds")

// levelCount checks a level stream of bit width w (RLE, or the deprecated BIT_PACKED) for a
// page of values values.
func levelCount(b []byte, enc format.Encoding, w int, values int64) error {
	if enc == format.BitPacked {
		if int64(len(b))*8/int64(w) > values+8 {
			return fmt.Errorf("%w: %d levels for %d values", errTooManyValues, int64(len(b))*8/int64(w), values)
		}
		return nil
	}
	_, err := rleCount(b, w, values)
	return err
}

// rleCount counts the values of an RLE/bit-packed hybrid stream of bit width w, failing as
// soon as they are more than values (plus the padding of the last bit-packed group).
func rleCount(b []byte, w int, values int64) (int64, error) {
	var n int64
	for i := 0; i < len(b); {
		u, k := binary.Uvarint(b[i:])
		if k <= 0 {
			return n, nil // parquet-go says the stream is corrupt
		}
		i += k
		count := u >> 1
		if count > uint64(values)+8 {
			return n, fmt.Errorf("%w: a run of %d values in a page of %d", errTooManyValues, count, values)
		}
		if u&1 != 0 { // bit-packed: count groups of 8 values, w bytes each
			n += int64(count) * 8
			i += int(count) * w
		} else {
			n += int64(count)
			i += (w + 7) / 8
		}
		if n > values+8 {
			return n, fmt.Errorf("%w: at least %d values in a page of %d", errTooManyValues, n, values)
		}
	}
	return n, nil
}

// deltaHeader is the header of a DELTA_BINARY_PACKED stream.
type deltaHeader struct {
	block, mini, total int
	first              int64
	rest               []byte
}

// readDeltaHeader reads and checks a DELTA_BINARY_PACKED header as parquet-go does, and refuses
// one of more than values values.
func readDeltaHeader(b []byte, values int64) (deltaHeader, error) {
	var h deltaHeader
	var u [3]uint64
	for j := range u {
		v, k := binary.Uvarint(b)
		if k <= 0 {
			return h, errors.New("a corrupt DELTA_BINARY_PACKED header")
		}
		u[j], b = v, b[k:]
	}
	first, k := binary.Varint(b)
	if k <= 0 {
		return h, errors.New("a corrupt DELTA_BINARY_PACKED header")
	}
	switch {
	case u[2] > uint64(values):
		return h, fmt.Errorf("%w: %d values in a page of %d", errTooManyValues, u[2], values)
	case u[0] == 0 || u[0]%128 != 0 || u[0] > 1<<16 || u[1] == 0 || (u[0]/u[1])%32 != 0:
		return h, fmt.Errorf("a DELTA_BINARY_PACKED header of blocks of %d values in %d mini-blocks", u[0], u[1])
	}
	return deltaHeader{block: int(u[0]), mini: int(u[1]), total: int(u[2]), first: first, rest: b[k:]}, nil
}

// deltaInt32s decodes a DELTA_BINARY_PACKED stream of 32-bit integers as parquet-go does (it
// reads the mini-blocks it needs and no further), appending to dst, and returns the bytes after
// the stream.
func deltaInt32s(dst []int32, b []byte, values int64) ([]int32, []byte, error) {
	h, err := readDeltaHeader(b, values)
	if err != nil || h.total == 0 {
		return dst, h.rest, err
	}
	if h.first < math.MinInt32 || h.first > math.MaxInt32 {
		return dst, h.rest, fmt.Errorf("a first value out of range: %d", h.first)
	}
	last := int32(h.first)
	dst = append(dst, last)
	left, per, b := h.total-1, h.block/h.mini, h.rest
	for left > 0 && len(b) > 0 {
		minDelta, k := binary.Varint(b)
		if k <= 0 {
			return dst, b, errors.New("a corrupt DELTA_BINARY_PACKED block")
		}
		b = b[k:]
		widths := b[:min(h.mini, len(b))]
		b = b[len(widths):]
		for _, w := range widths {
			if w > 32 {
				return dst, b, fmt.Errorf("a mini-block of bit width %d", w)
			}
			n := min(per, left)
			data := b[:min(per*int(w)/8, len(b))]
			b = b[len(data):]
			for j := range n {
				last += int32(minDelta) + int32(unpackBits(data, j, int(w)))
				dst = append(dst, last)
			}
			if left -= n; left == 0 {
				break
			}
		}
	}
	if left > 0 {
		return dst, b, fmt.Errorf("%d values missing", left)
	}
	return dst, b, nil
}

// unpackBits is the j-th value of width w (at most 32) of little-endian packed bits, zeros past
// the end of b.
func unpackBits(b []byte, j, w int) uint32 {
	if w == 0 {
		return 0
	}
	bit := j * w
	var word [8]byte
	if at := bit / 8; at < len(b) {
		copy(word[:], b[at:])
	}
	return uint32(binary.LittleEndian.Uint64(word[:])>>(bit%8)) & uint32(1<<w-1)
}

// deltaByteArraySize is what a DELTA_BYTE_ARRAY stream decodes to: each value is a prefix of
// the one before it and a suffix, their lengths in two DELTA_BINARY_PACKED streams. parquet-go
// allocates the sum of all prefix and suffix lengths before decoding.
func (s *chunkScanner) deltaByteArraySize(b []byte, values int64) (int64, error) {
	var err error
	if s.prefix, b, err = deltaInt32s(s.prefix[:0], b, values); err != nil {
		return 0, fmt.Errorf("its prefix lengths: %w", err)
	}
	if s.suffix, _, err = deltaInt32s(s.suffix[:0], b, values); err != nil {
		return 0, fmt.Errorf("its suffix lengths: %w", err)
	}
	if len(s.prefix) != len(s.suffix) {
		return 0, fmt.Errorf("%d prefix lengths and %d suffix lengths", len(s.prefix), len(s.suffix))
	}
	var total, last int64
	for i, p := range s.prefix {
		if p < 0 || s.suffix[i] < 0 || int64(p) > last {
			return 0, fmt.Errorf("value %d: a prefix of %d bytes of a value of %d, and a suffix of %d", i+1, p, last, s.suffix[i])
		}
		last = int64(p) + int64(s.suffix[i])
		total += last
	}
	return total, nil
}
