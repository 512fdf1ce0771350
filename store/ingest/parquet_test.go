package ingest

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
)

// writeParquet writes rows with parquet-go's struct-tag schema.
func writeParquet[T any](t testing.TB, rows []T, opts ...parquet.WriterOption) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := parquet.NewGenericWriter[T](f, opts...)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

type pqAddress struct {
	City string  `parquet:"city"`
	Zip  *string `parquet:"zip,optional"`
}

type pqItem struct {
	SKU string `parquet:"sku"`
	Qty int32  `parquet:"qty"`
}

type pqRecord struct {
	ID      int64            `parquet:"id"`
	Small   int32            `parquet:"small"`
	Name    string           `parquet:"Name"`
	Nick    *string          `parquet:"nick,optional"`
	Score   float64          `parquet:"score"`
	Ratio   float32          `parquet:"ratio"`
	Active  bool             `parquet:"active"`
	Day     int32            `parquet:"day,date"` // days since 1970 (parquet-go v0.32 writes time.Time dates wrong)
	At      time.Time        `parquet:"at,timestamp(microsecond)"`
	AtMs    int64            `parquet:"at_ms,timestamp(millisecond)"`
	AtNs    int64            `parquet:"at_ns,timestamp(nanosecond:local)"`
	Price   int64            `parquet:"price,decimal(2:18)"`
	BigDec  []byte           `parquet:"big_dec,decimal(4:38)"`
	UID     [16]byte         `parquet:"uid,uuid"`
	Tags    []string         `parquet:"tags,list"`
	Nums    []int64          `parquet:"nums,list"`
	Attrs   map[string]int64 `parquet:"attrs"`
	Address pqAddress        `parquet:"address"`
	OptAddr *pqAddress       `parquet:"opt_addr,optional"`
	Items   []pqItem         `parquet:"items,list"`
	Doc     string           `parquet:"doc,json"`
	Bare    []string         `parquet:"bare"`
	U64     uint64           `parquet:"u64"`
}

func TestParquet(t *testing.T) {
	zip := "75001"
	nick := "annie"
	at := time.Date(2024, 2, 29, 12, 34, 56, 123456000, time.UTC)
	rows := []pqRecord{{
		ID: 1, Small: 7, Name: "Ann", Nick: &nick, Score: 1.25, Ratio: 0.1, Active: true,
		Day: 19782, At: at, AtMs: at.UnixMilli(), AtNs: at.UnixNano(),
		Price: 12345, BigDec: be16(-1), UID: [16]byte{0x6f, 0x1c, 0x2a, 0x9e, 0x8e, 0x4b, 0x4c, 0x1a, 0x9d, 0x5e, 0x1f, 0x2a, 0x3b, 0x4c, 0x5d, 0x6e},
		Tags: []string{"a", `b "c"`}, Nums: []int64{1, 2}, Attrs: map[string]int64{"x": 1},
		Address: pqAddress{City: "Paris", Zip: &zip}, OptAddr: &pqAddress{City: "Lyon"},
		Items: []pqItem{{"A", 2}}, Doc: `{"k": [1, 2]}`, Bare: []string{"p", "q"}, U64: math.MaxUint64,
	}, {
		ID: 2, Name: "Bob", Price: -5, BigDec: be16(256), Day: -1,
		Address: pqAddress{City: "Rome"}, Doc: `null`,
	}}
	path := writeParquet(t, rows)
	s := infer(t, path, Parquet)
	want := []string{"src_id:bigint?", "small:integer?", "name:text?", "nick:text?", "score:numeric?", "ratio:numeric?", "active:boolean?",
		"day:date?", "at:timestamptz?", "at_ms:timestamptz?", "at_ns:timestamptz?", "price:numeric?", "big_dec:numeric?", "uid:uuid?",
		"tags:text[]?", "nums:bigint[]?", "attrs:jsonb?", "address:jsonb?", "opt_addr:jsonb?", "items:jsonb?", "doc:jsonb?",
		"bare:text[]?", "u64:numeric?"}
	if got := types(s.Columns); !reflect.DeepEqual(got, want) || s.Rows != 2 {
		t.Fatalf("types %v rows %d\nwant %v", got, s.Rows, want)
	}
	if c := s.Columns[2]; c.Original != "Name" || c.MaxLength != 3 {
		t.Errorf("name column %+v", c)
	}
	r, err := OpenSchema(path, s)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got [][]string
	for {
		row, err := r.Next()
		if err != nil {
			break
		}
		var texts []string
		for i, c := range s.Columns {
			v, null, err := c.Text(row[i])
			if err != nil {
				t.Fatalf("line %d: %v", r.Line(), err)
			}
			if null {
				v = "NULL"
			}
			texts = append(texts, v)
		}
		got = append(got, texts)
	}
	wantRows := [][]string{{
		"1", "7", "Ann", "annie", "1.25", "0.1", "true", "2024-02-29", "2024-02-29T12:34:56.123456Z", "2024-02-29T12:34:56.123Z",
		"2024-02-29T12:34:56.123456Z", "123.45", "-0.0001", "6f1c2a9e-8e4b-4c1a-9d5e-1f2a3b4c5d6e", `{"a","b \"c\""}`, `{"1","2"}`,
		`{"x":1}`, `{"city":"Paris","zip":"75001"}`, `{"city":"Lyon","zip":null}`, `[{"qty":2,"sku":"A"}]`, `{"k": [1, 2]}`,
		`{"p","q"}`, "18446744073709551615",
	}, {
		"2", "0", "Bob", "NULL", "0", "0", "false", "1969-12-31", "0001-01-01T00:00:00Z", "1970-01-01T00:00:00Z",
		"1970-01-01T00:00:00Z", "-0.05", "0.0256", "00000000-0000-0000-0000-000000000000", "{}", "{}",
		"{}", `{"city":"Rome","zip":null}`, "NULL", "[]", "null", "{}", "0",
	}}
	for i := range wantRows {
		for j := range wantRows[i] {
			if i >= len(got) || got[i][j] != wantRows[i][j] {
				t.Errorf("row %d %s = %q, want %q", i+1, s.Columns[j].Name, got[i][j], wantRows[i][j])
			}
		}
	}
	if r.Line() != 2 {
		t.Errorf("line %d", r.Line())
	}
}

// Values survive across pages and row groups (they are decoded a batch at a time).
func TestParquetManyPages(t *testing.T) {
	type rec struct {
		N    int64    `parquet:"n"`
		S    string   `parquet:"s"`
		Tags []string `parquet:"tags,list"`
		Opt  *int32   `parquet:"opt,optional"`
	}
	var rows []rec
	for i := range 20000 {
		r := rec{N: int64(i), S: fmt.Sprintf("value-%d", i), Tags: []string{fmt.Sprint(i), "t"}}
		if i%3 == 0 {
			v := int32(i)
			r.Opt = &v
		}
		rows = append(rows, r)
	}
	path := writeParquet(t, rows, parquet.PageBufferSize(2048), parquet.MaxRowsPerRowGroup(3000))
	cols, got := readAll(t, path, Parquet)
	if len(got) != len(rows) || types(cols)[3] != "opt:integer?" {
		t.Fatalf("%d rows, columns %v", len(got), types(cols))
	}
	for i, r := range got {
		if r[0] != int64(i) || r[1] != fmt.Sprintf("value-%d", i) || !reflect.DeepEqual(r[2], []any{fmt.Sprint(i), "t"}) ||
			(i%3 == 0) != (r[3] != nil) {
			t.Fatalf("row %d = %v", i, r)
		}
	}
	s := infer(t, path, Parquet)
	if c := s.Columns[3]; c.NullCount != 13333 || !c.Nullable || !s.Columns[1].Nullable || s.Columns[1].NullCount != 0 {
		t.Fatalf("columns %+v", s.Columns)
	}
}

func TestParquetErrors(t *testing.T) {
	path := writeTemp(t, "f.parquet", "PAR1 this is not really parquet PAR1")
	if _, err := Infer(path, Parquet); err == nil {
		t.Fatal("a broken file was read")
	}
	good := writeParquet(t, []struct {
		A int64 `parquet:"a"`
	}{{1}})
	if _, err := OpenSchema(good, &Schema{Format: Parquet, Columns: []Column{{Name: "b", Original: "b"}}}); err == nil ||
		err.Error() != `the file has no column "b"` {
		t.Fatalf("got %v", err)
	}
}

// be16 is n as a 16-byte big-endian two's complement, as DECIMAL(38) stores it.
func be16(n int64) []byte {
	b := make([]byte, 16)
	for i := 15; i >= 0; i-- {
		b[i] = byte(n)
		n >>= 8
	}
	return b
}
