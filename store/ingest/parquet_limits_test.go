package ingest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"

	"dataplatform/store/ingest/parquettest"

	"github.com/parquet-go/parquet-go/format"
)

// bombParquet writes parquettest.Bomb to a file.
func bombParquet(t testing.TB, n, declared int64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bomb.parquet")
	if err := os.WriteFile(path, parquettest.Bomb(n, declared), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// allocated runs f and returns the bytes it allocated.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A page of 256 MiB zeros that zstd packs in a few kilobytes (the audit's was 1 GB in a
// 30 MB file): refused from its header, before anything is decompressed.
func TestParquetPageBomb(t *testing.T) {
	const n = 256 << 20
	path := bombParquet(t, n, n+4)
	if st, _ := os.Stat(path); st.Size() > 64<<10 {
		t.Fatalf("the bomb is %d bytes", st.Size())
	}
	var err error
	alloc := allocated(func() { _, err = Infer(path, Parquet) })
	if err == nil || !strings.Contains(err.Error(), `column "v" of row group 1 has a page (1) that decodes to 256.0 MiB, over the limit of 64.0 MiB; write the file with smaller row groups and pages`) {
		t.Fatalf("got %v", err)
	}
	if alloc > n/32 {
		t.Fatalf("refusing the file allocated %d bytes", alloc)
	}
	if _, ok := err.(*RowError); !ok { // a problem of the file: the job fails for good
		t.Fatalf("%T", err)
	}
}

// A page whose header declares 1 KiB and that decompresses to 96 MiB: measured while
// streaming the page, nothing of it kept.
func TestParquetLyingPage(t *testing.T) {
	const n = 96 << 20
	path := bombParquet(t, n, 1024)
	var err error
	alloc := allocated(func() { _, err = Infer(path, Parquet) })
	if err == nil || !strings.Contains(err.Error(), `column "v" of row group 1 has a page (1) that decompresses to more than the 1.0 KiB its header declares`) {
		t.Fatalf("got %v", err)
	}
	if alloc > n/8 {
		t.Fatalf("refusing the file allocated %d bytes", alloc)
	}
}

// setLimits lowers the limits for one test.
func setLimits(t *testing.T, page, chunk, group int64) {
	p, c, g := MaxParquetPageBytes, MaxParquetColumnChunkBytes, MaxParquetRowGroupBytes
	MaxParquetPageBytes, MaxParquetColumnChunkBytes, MaxParquetRowGroupBytes = page, chunk, group
	t.Cleanup(func() { MaxParquetPageBytes, MaxParquetColumnChunkBytes, MaxParquetRowGroupBytes = p, c, g })
}

type pqList struct {
	ID int64   `parquet:"id"`
	L  []int32 `parquet:"l,list"`
}

// A record with a list of 2,000,000 elements (8 MB of int32, compressed to almost nothing)
// would be assembled whole, at about 100 bytes an element: it is refused from the repetition
// levels of its pages, decoded one page at a time.
func TestParquetHugeRecord(t *testing.T) {
	path := writeParquet(t, []pqList{{1, []int32{1}}, {2, make([]int32, 2_000_000)}, {3, nil}}, parquet.Compression(&parquet.Zstd))
	var err error
	alloc := allocated(func() { _, err = Infer(path, Parquet) })
	if err == nil || err.Error() != "row group 1 has records of up to 2000001 values (list elements count one each), over the limit of 1048576; write long lists as several records" {
		t.Fatalf("got %v", err)
	}
	if alloc > 40<<20 { // reading the record allocated 409 MB
		t.Fatalf("refusing the file allocated %d bytes", alloc)
	}
	// Under the limit, records as large are read one at a time.
	limit := MaxParquetRecordValues
	MaxParquetRecordValues = 3_000_000
	t.Cleanup(func() { MaxParquetRecordValues = limit })
	src, cols, err := openParquetSource(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = src.read(make([]Value, len(cols)))
	src.Close()
	if err != nil || src.batch != 1 {
		t.Fatalf("batches of %d records, %v", src.batch, err)
	}
	if _, rows := readAll(t, path, Parquet); len(rows) != 3 || len(rows[1][1].([]any)) != 2_000_000 {
		t.Fatalf("%d rows", len(rows))
	}
}

type pqWide struct {
	ID int64  `parquet:"id"`
	A  string `parquet:"a"`
	B  string `parquet:"b"`
}

func wideRows(n, size int) []pqWide {
	rows := make([]pqWide, n)
	for i := range rows {
		rows[i] = pqWide{int64(i), strings.Repeat("a", size) + fmt.Sprint(i), strings.Repeat("b", size) + fmt.Sprint(i)}
	}
	return rows
}

// Column chunks and row groups over their limits are refused; under them, the file is read
// whatever its codec and page version.
func TestParquetLimits(t *testing.T) {
	rows := wideRows(200, 10_000) // 2 MB a text column, compressible to almost nothing
	for _, tc := range []struct {
		name               string
		page, chunk, group int64
		opts               []parquet.WriterOption
		want               string
	}{
		{"page", 64 << 10, 1 << 30, 1 << 30, nil, `column "a" of row group 1 has a page (1) that decodes to 626.2 KiB, over the limit of 64.0 KiB`},
		{"chunk", 1 << 20, 1 << 20, 1 << 30, nil,
			`column "a" of row group 1 is 2.1 MiB uncompressed, over the limit of 1.0 MiB`},
		{"group", 1 << 20, 1 << 30, 512 << 10, []parquet.WriterOption{parquet.MaxRowsPerRowGroup(40)},
			`row group 1 needs 783.8 KiB of memory to read (its dictionaries and largest pages), over the limit of 512.0 KiB`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setLimits(t, tc.page, tc.chunk, tc.group)
			path := writeParquet(t, rows, append(tc.opts, parquet.Compression(&parquet.Zstd))...)
			_, err := Infer(path, Parquet)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasSuffix(err.Error(), parquetFix) {
				t.Fatalf("got %v\nwant %s", err, tc.want)
			}
		})
	}
	t.Run("chunk-understated", func(t *testing.T) { // its pages add up to more than its footer says
		setLimits(t, 1<<20, 1<<20, 1<<30)
		path := writeParquet(t, rows, parquet.Compression(&parquet.Zstd))
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		b = parquettest.EditFooter(b, func(md *format.FileMetaData) {
			for i := range md.RowGroups[0].Columns {
				md.RowGroups[0].Columns[i].MetaData.TotalUncompressedSize = 1000
			}
		})
		os.WriteFile(path, b, 0o600)
		if _, err := Infer(path, Parquet); err == nil || !strings.Contains(err.Error(), `column "a" of row group 1 is at least 1.2 MiB uncompressed, over the limit of 1.0 MiB`) {
			t.Fatalf("got %v", err)
		}
	})
	setLimits(t, 64<<10, 1<<20, 256<<10)
	small := wideRows(20, 1000)
	for _, codec := range []compress.Codec{&parquet.Uncompressed, &parquet.Snappy, &parquet.Gzip, &parquet.Brotli, &parquet.Zstd, &parquet.Lz4Raw} {
		for _, v := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s-v%d", codec, v), func(t *testing.T) {
				path := writeParquet(t, small, parquet.Compression(codec), parquet.DataPageVersion(v), parquet.PageBufferSize(8<<10))
				if _, got := readAll(t, path, Parquet); len(got) != len(small) || got[19][2] != small[19].B {
					t.Fatalf("%d rows", len(got))
				}
			})
		}
	}
}

// The lengths LZ4 blocks decompress to are counted without decompressing them.
func TestLZ4BlockLen(t *testing.T) {
	for _, n := range []int{0, 1, 15, 16, 300, 70_000} {
		src := bytes.Repeat([]byte("abcabcabd"), n/9+1)[:n]
		b, err := parquet.Lz4Raw.Encode(nil, src)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := lz4BlockLen(b); err != nil || got != int64(n) {
			t.Errorf("%d bytes: got %d, %v", n, got, err)
		}
	}
	if _, err := lz4BlockLen([]byte{0xf0}); err == nil {
		t.Error("a truncated block was counted")
	}
}

// Thrift counts and lengths are checked against the bytes there are before parquet-go, which
// allocates what they declare, decodes them.
func TestParquetThriftCounts(t *testing.T) {
	// A footer of 9 bytes (a file of 21) whose row_groups list declares 2^31-1 elements: parquet-go stopped
	// the process with "fatal error: runtime: out of memory".
	huge := append([]byte{0x15, 0x02, 0x39, 0xfc}, binary.AppendUvarint(nil, 1<<31-1)...)
	// A footer of 1 MB: one row group of 1,000,000 empty column chunks (560 bytes each decoded).
	wide := append([]byte{0x15, 0x02, 0x39, 0x1c, 0x19, 0xfc}, binary.AppendUvarint(nil, 1_000_000)...)
	wide = append(wide, make([]byte, 1_000_000+2)...)
	// A page header whose statistics' max declares 2^31-1 bytes.
	header := func(h []byte) []byte {
		i := bytes.Index(h, []byte("\x04MAXV"))
		return slices.Concat(h[:i], binary.AppendUvarint(nil, 1<<31-1), h[i+1:])
	}
	for _, tc := range []struct {
		name string
		file []byte
		want string
	}{
		{"footer-count", parquettest.WithFooter(huge), "not a readable Parquet file: its footer: malformed Thrift structure: a count of 2147483647 with 0 bytes left"},
		{"footer-wide", parquettest.WithFooter(wide), "the Parquet footer decodes to more than 610.4 MiB, over the limit of 256.0 MiB"},
		{"encrypted", append(parquettest.WithFooter(huge)[:len(huge)+8], "PARE"...), "encrypted Parquet files are not supported"},
		{"page-header", parquettest.BombWith(1000, 1004, header), `not a readable Parquet file: column "v" of row group 1, page 1: malformed Thrift structure: a count of 2147483647 with`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f.parquet")
			if err := os.WriteFile(path, tc.file, 0o600); err != nil {
				t.Fatal(err)
			}
			var err error
			alloc := allocated(func() { _, err = Infer(path, Parquet) })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v", err)
			}
			if alloc > 8<<20 {
				t.Fatalf("refusing the file allocated %d bytes", alloc)
			}
		})
	}
}

// Each row group is checked as reading reaches it: a sample of the first does not read the
// second, and the load, which reads all, fails there.
func TestParquetLimitsLaterRowGroup(t *testing.T) {
	setLimits(t, 64<<10, 1<<30, 1<<30)
	rows := append(wideRows(40, 500), wideRows(40, 10_000)...)
	path := writeParquet(t, rows, parquet.Compression(&parquet.Zstd), parquet.MaxRowsPerRowGroup(40))
	if _, err := InferSample(path, Parquet, 10); err != nil {
		t.Fatal(err)
	}
	if err := readErr(path, Parquet); err == nil || !strings.HasPrefix(err.Error(), `column "a" of row group 2 has a page (1) that decodes to`) {
		t.Fatalf("got %v", err)
	}
}
