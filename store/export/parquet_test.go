package export

import (
	"bytes"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// TestParquetRowGroups: a Parquet export ends a row group every parquetGroupBytes of values
// (parquet-go's default is one row group, the whole file buffered in memory).
func TestParquetRowGroups(t *testing.T) {
	parquetGroupBytes = 1 << 20
	defer func() { parquetGroupBytes = 64 << 20 }()
	var buf bytes.Buffer
	w, err := New(&buf, "parquet", []Column{{Name: "v", Kind: Text}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 256<<10)
	for i := 0; i < 20; i++ {
		if err := w.Row([]any{big}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(f.RowGroups()); n < 4 || f.NumRows() != 20 {
		t.Fatalf("%d row groups, %d rows", n, f.NumRows())
	}
}
