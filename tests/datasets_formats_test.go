package tests

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"dataplatform/store/ingest/parquettest"
)

type pqLine struct {
	SKU string  `parquet:"sku"`
	Qty int32   `parquet:"qty"`
	Tag *string `parquet:"tag,optional"`
}

type pqAddr struct {
	City string `parquet:"city"`
	Zip  string `parquet:"zip"`
}

type pqOrder struct {
	ID     int64            `parquet:"order_id"`
	Placed time.Time        `parquet:"placed,timestamp(millisecond)"`
	Total  int64            `parquet:"total,decimal(2:18)"`
	Ship   pqAddr           `parquet:"ship_to"`
	Lines  []pqLine         `parquet:"lines,list"`
	Labels []string         `parquet:"labels,list"`
	Extra  map[string]int64 `parquet:"extra"`
	Note   *string          `parquet:"note,optional"`
}

// A Parquet file with nested columns: groups and maps become jsonb, lists of scalars arrays,
// lists of groups jsonb; decimals and timestamps keep their values.
func TestDatasetFromParquetWithNestedColumns(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[pqOrder](&buf)
	note, tag := "fragile", "gift"
	at := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	if _, err := w.Write([]pqOrder{
		{ID: 1, Placed: at, Total: 1999, Ship: pqAddr{"Oslo", "0150"}, Lines: []pqLine{{"A", 2, &tag}, {"B", 1, nil}},
			Labels: []string{"new", "vip"}, Extra: map[string]int64{"points": 20}, Note: &note},
		{ID: 2, Placed: at.Add(time.Hour), Total: -50, Ship: pqAddr{"Bergen", "5003"}},
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	id := e.uploadAndCreate(e.ownerToken, "Orders", "orders.parquet", buf.String())
	d := e.waitDataset(e.ownerToken, id)
	if d.str("status") != "active" || d.str("source.type") != "parquet" || d.num("source.row_count") != 2 {
		t.Fatalf("dataset: %s", d.Body)
	}
	want := map[string]string{"order_id": "bigint", "placed": "timestamptz", "total": "numeric", "ship_to": "jsonb", "lines": "jsonb",
		"labels": "text[]", "extra": "jsonb", "note": "text"}
	for i := 0; i < d.len("schema.tables.0.columns"); i++ {
		c := fmt.Sprintf("schema.tables.0.columns.%d.", i)
		if want[d.str(c+"name")] != d.str(c+"type") {
			t.Fatalf("column %s: %s, want %s", d.str(c+"name"), d.str(c+"type"), want[d.str(c+"name")])
		}
	}
	p := e.do("GET", "/api/v1/projects/"+e.projectID+"/datasets/"+id+"/preview", nil, bearer(e.ownerToken)).status(200)
	if p.rawCell(0, "total") != "19.99" || p.rawCell(1, "total") != "-0.50" || p.row(0, "placed") != "2024-05-06T07:08:09Z" {
		t.Fatalf("scalars: %s", p.Body)
	}
	ship := p.row(0, "ship_to").(map[string]any)
	lines := p.row(0, "lines").([]any)
	if ship["city"] != "Oslo" || ship["zip"] != "0150" || len(lines) != 2 || lines[0].(map[string]any)["tag"] != "gift" ||
		lines[1].(map[string]any)["tag"] != nil || p.row(0, "extra").(map[string]any)["points"] != 20.0 {
		t.Fatalf("nested: %s", p.Body)
	}
	if labels := p.row(0, "labels").([]any); len(labels) != 2 || labels[1] != "vip" || p.row(1, "note") != nil {
		t.Fatalf("lists: %s", p.Body)
	}
}

// A JSON file whose fields change type between records: the column widens to hold all of
// them (integer and decimal → numeric, number and text → text, object and array → jsonb).
func TestDatasetFromJSONWithMixedTypes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	js := `[{"n": 1, "v": 10, "x": {"a": 1}, "when": "2024-01-02"},
	        {"n": 2.5, "v": "ten", "x": [1, 2], "when": "2024-01-02T03:04:05Z"},
	        {"n": null, "v": true, "x": null}]`
	id := e.uploadAndCreate(e.ownerToken, "Mixed", "mixed.json", js)
	d := e.waitDataset(e.ownerToken, id)
	if d.str("status") != "active" {
		t.Fatalf("mixed: %s", d.Body)
	}
	want := map[string]string{"n": "numeric", "v": "text", "x": "jsonb", "when": "timestamptz"}
	for i := 0; i < d.len("schema.tables.0.columns"); i++ {
		c := fmt.Sprintf("schema.tables.0.columns.%d.", i)
		if want[d.str(c+"name")] != d.str(c+"type") {
			t.Fatalf("column %s: %s, want %s", d.str(c+"name"), d.str(c+"type"), want[d.str(c+"name")])
		}
	}
	p := e.do("GET", "/api/v1/projects/"+e.projectID+"/datasets/"+id+"/preview", nil, bearer(e.ownerToken)).status(200)
	if p.row(0, "v") != "10" || p.row(1, "v") != "ten" || p.row(2, "v") != "true" || p.rawCell(1, "n") != "2.5" {
		t.Fatalf("values: %s", p.Body)
	}
}

// A Parquet decompression bomb (one 256 MiB page packed in a few kilobytes) fails its dataset
// for good, with what to change, before the page is decompressed.
func TestDatasetFromParquetBombFails(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.uploadAndCreate(e.ownerToken, "Bomb", "bomb.parquet", string(parquettest.Bomb(256<<20, 256<<20+4)))
	d := e.waitDataset(e.ownerToken, id)
	if d.str("status") != "failed" || !strings.Contains(d.str("error"), "decodes to 256.0 MiB, over the limit of 64.0 MiB; write the file with smaller row groups and pages") {
		t.Fatalf("bomb: %s", d.Body)
	}
	job := e.do("GET", "/api/v1/jobs/"+d.str("job_id"), nil, bearer(e.ownerToken)).status(200)
	if job.str("status") != "failed" || job.num("attempts") != 1 {
		t.Fatalf("a bad file must not be retried: %s", job.Body)
	}
}

// A Parquet file of 21 bytes whose footer declares 2^31-1 row groups stopped the server
// ("fatal error: runtime: out of memory"): its dataset fails, the server goes on.
func TestDatasetFromParquetFooterCountFails(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	footer := append([]byte{0x15, 0x02, 0x39, 0xfc}, binary.AppendUvarint(nil, 1<<31-1)...)
	id := e.uploadAndCreate(e.ownerToken, "Footer", "footer.parquet", string(parquettest.WithFooter(footer)))
	d := e.waitDataset(e.ownerToken, id)
	if d.str("status") != "failed" || !strings.Contains(d.str("error"), "not a readable Parquet file: its footer: malformed Thrift structure") {
		t.Fatalf("footer: %s", d.Body)
	}
}
