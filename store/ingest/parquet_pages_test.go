package ingest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/format"

	"dataplatform/store/ingest/parquettest"
)

// deltaInts is a DELTA_BINARY_PACKED stream declaring total values, the first first, every
// delta delta (bit width 0: no bytes a value).
func deltaInts(total uint64, first, delta int64) []byte {
	b := binary.AppendUvarint(nil, 128) // block size
	b = binary.AppendUvarint(b, 4)      // mini-blocks
	b = binary.AppendUvarint(b, total)
	b = binary.AppendVarint(b, first)
	for n := uint64(1); n < total && len(b) < 4<<10; n += 128 {
		b = binary.AppendVarint(b, delta)
		b = append(b, 0, 0, 0, 0)
	}
	return b
}

// rleRun is one run of an RLE/bit-packed hybrid stream: n copies of a value of width bytes.
func rleRun(n uint64, width int) []byte {
	return append(binary.AppendUvarint(nil, n<<1), make([]byte, width)...)
}

// withLength is a stream after its length (4 bytes, little endian), as v1 levels are stored.
func withLength(b []byte) []byte {
	return append(binary.LittleEndian.AppendUint32(nil, uint32(len(b))), b...)
}

// Pages of about a hundred bytes whose encodings declare gigabytes. Before they were checked,
// reading them made parquet-go v0.32.0 allocate (in this order) 1.2, 16, 8 and 10 GiB, and
// the rest would have too had the pages been complete: each is now refused from its content
// before parquet-go decodes it.
func TestParquetEncodingBombs(t *testing.T) {
	for _, tc := range []struct {
		name string
		page parquettest.Page
		want string
	}{
		{"delta byte array prefixes", parquettest.Page{Type: format.ByteArray, Encoding: format.DeltaByteArray, Values: 5,
			Body: append(deltaInts(5, 1<<30, 0), deltaInts(5, 0, 0)...)},
			"its DELTA_BYTE_ARRAY values: value 1: a prefix of 1073741824 bytes of a value of 0, and a suffix of 0"},
		{"delta byte array growing", parquettest.Page{Type: format.ByteArray, Encoding: format.DeltaByteArray, Values: 1 << 15,
			// each value is the one before it and one more byte: 32 KiB of suffixes make 512 MiB
			Body: append(append(deltaInts(1<<15, 0, 1), deltaInts(1<<15, 1, 0)...), bytes.Repeat([]byte{'x'}, 1<<15)...)},
			`column "v" of row group 1 has a page (1) that decodes to 512.0 MiB, over the limit of 64.0 MiB`},
		{"delta total values", parquettest.Page{Type: format.Int64, Encoding: format.DeltaBinaryPacked, Values: 1, Body: deltaInts(1<<31-1, 0, 0)},
			"its DELTA_BINARY_PACKED values: more values than the page holds: 2147483647 values in a page of 1"},
		{"delta length byte array", parquettest.Page{Type: format.ByteArray, Encoding: format.DeltaLengthByteArray, Values: 1, Body: deltaInts(1<<31-1, 0, 0)},
			"its DELTA_LENGTH_BYTE_ARRAY values: more values than the page holds: 2147483647 values in a page of 1"},
		{"definition levels", parquettest.Page{Type: format.Int32, Repetition: format.Optional, Encoding: format.Plain, Values: 1,
			Body: append(withLength(append(rleRun(1<<31-1, 1), rleRun(1<<31-1, 1)...)), 0, 0, 0, 0)},
			"its definition levels: more values than the page holds: a run of 2147483647 values in a page of 1"},
		{"dictionary indexes", parquettest.Page{Type: format.Int32, Encoding: format.RLEDictionary, Values: 1,
			Dict: []byte{7, 0, 0, 0}, DictValues: 1, Body: append([]byte{1}, binary.AppendUvarint(nil, (1<<28)<<1|1)...)},
			"its RLE_DICTIONARY values: more values than the page holds: a run of 268435456 values in a page of 1"},
		{"booleans", parquettest.Page{Type: format.Boolean, Encoding: format.RLE, Values: 1, Body: withLength(rleRun(1<<31-1, 1))},
			"its RLE values: more values than the page holds: a run of 2147483647 values in a page of 1"},
		{"fixed length", parquettest.Page{Type: format.FixedLenByteArray, Length: 1 << 30, Encoding: format.PlainDictionary, Values: 1, //nolint:staticcheck // SA1019: older writers still emit it
			Dict: []byte{}, DictValues: 1000, Body: []byte{0}},
			`column "v" of row group 1 has a page (1) of 1000 values of 1073741824 bytes, which decodes to 1024000.0 MiB, over the limit of 64.0 MiB`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.parquet")
			file := tc.page.File()
			if err := os.WriteFile(path, file, 0o600); err != nil {
				t.Fatal(err)
			}
			var err error
			alloc := allocated(func() { _, err = Infer(path, Parquet) })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v", err)
			}
			if alloc > 4<<20 {
				t.Fatalf("refusing %d bytes allocated %d", len(file), alloc)
			}
		})
	}
}

type pqEncoded struct {
	ID     int64    `parquet:"id,delta"`
	Small  int32    `parquet:"small,delta"`
	URL    string   `parquet:"url,delta"` // DELTA_BYTE_ARRAY: shared prefixes
	Plain  string   `parquet:"plain,plain"`
	Dict   string   `parquet:"dict,dict"`
	Opt    *int64   `parquet:"opt,optional"`
	OptStr *string  `parquet:"opt_str,optional,dict"`
	Flag   bool     `parquet:"flag"`
	Ratio  float64  `parquet:"ratio,split"`
	Tags   []string `parquet:"tags,list,dict"`
	UID    [16]byte `parquet:"uid,uuid"`
}

// Files whose footer length parquet-go would allocate before reading it (found by FuzzParquet:
// 3.5 GiB for the first, 3.8 GB for the second, read out of its magic bytes).
func TestParquetFooterLength(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"PAR1\x15\xe3PAR1", "not a readable Parquet file: 10 bytes is too short to be one"},
		{"PAR1 twenty bytes!!\x00\x00\x00\xe0PAR1", "not a readable Parquet file: its footer is said to be 3584.0 MiB long, more than the file holds"},
	} {
		path := filepath.Join(t.TempDir(), "x.parquet")
		if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
			t.Fatal(err)
		}
		var err error
		if alloc := allocated(func() { _, err = Infer(path, Parquet) }); err == nil || err.Error() != tc.want || alloc > 1<<20 {
			t.Fatalf("%q: %v, %d bytes allocated", tc.file, err, alloc)
		}
	}
}

// Files of every encoding parquet-go writes, in pages of both versions and every codec, pass
// the checks of their pages and read back as written.
func TestParquetEncodings(t *testing.T) {
	rows := make([]pqEncoded, 3000)
	for i := range rows {
		r := &rows[i]
		r.ID, r.Small = int64(i)*1_000_003, int32(i%7-3)
		r.URL = fmt.Sprintf("https://example.com/items/%05d/detail", i/3)
		r.Plain, r.Dict = strings.Repeat("p", i%50), []string{"red", "green", "blue"}[i%3]
		if i%4 != 0 {
			v, s := int64(-i), fmt.Sprint("s", i%5)
			r.Opt, r.OptStr = &v, &s
		}
		r.Flag, r.Ratio = i%3 == 0, float64(i)/7
		r.Tags = []string{"a", "b", "c"}[:i%4]
		r.UID[0], r.UID[15] = byte(i), byte(i>>8)
	}
	for _, codec := range []compress.Codec{&parquet.Uncompressed, &parquet.Snappy, &parquet.Gzip, &parquet.Brotli, &parquet.Zstd, &parquet.Lz4Raw} {
		for _, v := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s-v%d", codec, v), func(t *testing.T) {
				path := writeParquet(t, rows, parquet.Compression(codec), parquet.DataPageVersion(v), parquet.PageBufferSize(4<<10))
				cols, got := readAll(t, path, Parquet)
				if len(got) != len(rows) {
					t.Fatalf("%d rows", len(got))
				}
				for _, i := range []int{0, 1, 1234, 2999} {
					r, g := rows[i], got[i]
					want := []Value{fmt.Sprint(r.ID), fmt.Sprint(r.Small), r.URL, r.Plain, r.Dict}
					for j, w := range want {
						if fmt.Sprint(g[j]) != w {
							t.Fatalf("row %d, %s: %v, want %v", i, cols[j].Name, g[j], w)
						}
					}
					if (r.Opt == nil) != (g[5] == nil) || (r.Opt != nil && fmt.Sprint(g[5]) != fmt.Sprint(*r.Opt)) || len(g[9].([]any)) != len(r.Tags) {
						t.Fatalf("row %d: %v", i, g)
					}
				}
			})
		}
	}
}
