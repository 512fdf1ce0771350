package ingest

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
)

const benchRows = 1_000_000

// The benchmark file is generated once per test binary and removed by TestMain.
var bench struct {
	once sync.Once
	dir  string
	path string
	size int64
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if bench.dir != "" {
		os.RemoveAll(bench.dir)
	}
	os.Exit(code)
}

// benchCSV writes 1,000,000 rows of 10 mixed columns: int, bigint, decimal, bool, date,
// timestamp, uuid, short text, long text (a tenth quoted, with commas and quotes), and an
// int that is empty one time in five. About 190 MB.
func benchCSV(b *testing.B) (string, int64) {
	bench.once.Do(func() {
		if bench.dir, bench.err = os.MkdirTemp("", "ingest-bench-"); bench.err != nil {
			return
		}
		bench.path = filepath.Join(bench.dir, "bench.csv")
		f, err := os.Create(bench.path)
		if err != nil {
			bench.err = err
			return
		}
		defer f.Close()
		w := bufio.NewWriterSize(f, 1<<20)
		rnd := rand.New(rand.NewPCG(1, 2))
		words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"}
		fmt.Fprintln(w, "id,account,amount,active,day,created_at,uuid,code,description,quantity")
		for i := range benchRows {
			note := ""
			for len(note) < 80 {
				note += words[rnd.IntN(len(words))] + " "
			}
			if i%10 == 0 {
				note = `"` + note + `, with ""quotes"""`
			}
			qty := ""
			if i%5 != 0 {
				qty = fmt.Sprint(rnd.IntN(1000))
			}
			fmt.Fprintf(w, "%d,%d,%d.%02d,%t,2024-%02d-%02d,2024-%02d-%02dT%02d:%02d:%02dZ,%08x-%04x-4%03x-a%03x-%012x,C-%d,%s,%s\n",
				i+1, 3_000_000_000+int64(i)*7, rnd.IntN(100000), rnd.IntN(100), rnd.IntN(2) == 1,
				1+i%12, 1+i%28, 1+i%12, 1+i%28, i%24, i%60, (i*7)%60,
				rnd.Uint32(), rnd.IntN(1<<16), rnd.IntN(1<<12), rnd.IntN(1<<12), rnd.Uint64()&(1<<48-1),
				rnd.IntN(500), note, qty)
		}
		if bench.err = w.Flush(); bench.err != nil {
			return
		}
		st, err := f.Stat()
		bench.size, bench.err = st.Size(), err
	})
	if bench.err != nil {
		b.Fatal(bench.err)
	}
	return bench.path, bench.size
}

// BenchmarkInferCSV1M is one ingest's file work: infer the types over the whole file, then
// read it again converting every value with Column.Text into its COPY text line. The heap
// is sampled every 100,000 rows: it stays flat whatever the file size.
func BenchmarkInferCSV1M(b *testing.B) {
	path, size := benchCSV(b)
	var peak uint64
	var inferTime time.Duration
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		s := inferBench(b, path)
		inferTime += time.Since(start)
		r, err := OpenSchema(path, s)
		if err != nil {
			b.Fatal(err)
		}
		line := make([]byte, 0, 1024)
		for n := 1; ; n++ {
			row, err := r.Next()
			if err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
			if line, err = AppendCopyLine(line[:0], s.Columns, row, r.Line()); err != nil {
				b.Fatal(err)
			}
			if n%100_000 == 0 {
				peak = max(peak, heapInUse())
			}
		}
		r.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchRows, "ns/row")
	b.ReportMetric(float64(inferTime.Nanoseconds())/float64(b.N)/benchRows, "infer-ns/row")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
}

// BenchmarkCopyLinesCSV1M is the loading pass alone through Reader.AppendCopyLine, which
// converts CSV fields without making Values of them.
func BenchmarkCopyLinesCSV1M(b *testing.B) {
	path, size := benchCSV(b)
	s := inferBench(b, path)
	var peak uint64
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		r, err := OpenSchema(path, s)
		if err != nil {
			b.Fatal(err)
		}
		line := make([]byte, 0, 1024)
		for n := 1; ; n++ {
			if line, err = r.AppendCopyLine(line[:0]); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
			if n%100_000 == 0 {
				peak = max(peak, heapInUse())
			}
		}
		r.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchRows, "ns/row")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
}

func inferBench(b *testing.B, path string) *Schema {
	s, err := Infer(path, CSV)
	if err != nil {
		b.Fatal(err)
	}
	want := []string{"src_id:integer", "account:bigint", "amount:numeric", "active:boolean", "day:date", "src_created_at:timestamptz",
		"uuid:uuid", "code:text", "description:text", "quantity:integer?"}
	if got := types(s.Columns); !reflect.DeepEqual(got, want) || s.Rows != benchRows {
		b.Fatalf("types %v, %d rows", got, s.Rows)
	}
	return s
}

func heapInUse() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// BenchmarkParquetBomb opens a 256 MiB page packed by zstd in a few kilobytes, as an ingest
// does (Infer). It is refused from its page header: the file's size, not the page's, is read.
func BenchmarkParquetBomb(b *testing.B) {
	path := bombParquet(b, 256<<20, 256<<20+4)
	var peak uint64
	b.ReportAllocs()
	for b.Loop() {
		Infer(path, Parquet)
		peak = max(peak, heapInUse())
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
}

// BenchmarkParquetRead200K is one ingest's file work on an ordinary zstd file of 200,000 rows
// in 1 MiB pages: infer, then read every record; the page checks read each page once more.
func BenchmarkParquetRead200K(b *testing.B) {
	path := writeParquet(b, wideRows(200_000, 40), parquet.Compression(&parquet.Zstd), parquet.PageBufferSize(1<<20))
	st, _ := os.Stat(path)
	b.SetBytes(st.Size())
	b.ReportAllocs()
	for b.Loop() {
		_, r, err := openInferred(path, Parquet, 0)
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := r.Next(); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
		r.Close()
	}
}
