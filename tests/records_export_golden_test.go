package tests

import (
	"dataplatform/cmd/dataplatform/config"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update", false, "write the golden files of TestExportGolden")

// goldenRows are the sample records of TestExportGolden: NULLs, an empty string, unicode,
// quotes, delimiters and line breaks in text, large and negative numbers, booleans, dates,
// timestamps with fractions, JSON objects and arrays, text arrays.
const goldenRows = `[
 {"n": 1, "big": 9007199254740993, "amount": 12.5, "ok": true, "day": "2024-01-02", "at": "2024-01-02T03:04:05.123456Z",
  "name": "Ann", "note": "hello, \"world\"", "meta": {"a": [1, 2.5, null], "s": "x,y", "html": "<&>"}, "tags": ["a", "b,c"]},
 {"n": null, "big": null, "amount": null, "ok": null, "day": null, "at": null,
  "name": "", "note": "multi\nline\r\nend", "meta": null, "tags": null},
 {"n": -3, "big": -42, "amount": -0.001, "ok": false, "day": "1999-12-31", "at": "2023-06-30T23:59:59Z",
  "name": "Zoë ünïcödé 日本語 😀", "note": "semi;colon|pipe\ttab 'single' \"double\"", "meta": [1, "two", {"three": true}], "tags": []},
 {"n": 2147483647, "big": 1, "amount": 100000000000000000000.25, "ok": true, "day": "2024-02-29", "at": "2024-02-29T12:00:00.5+02:00",
  "name": "   spaced   ", "note": "\"", "meta": {"unicode": "é\u00e9\t"}, "tags": ["日本", ""]}
]`

// TestExportGolden runs every export format, with its options, through the record API's
// export and the query export job on the same records, and compares each answer's body
// and headers with the files in testdata/export-golden (go test -run TestExportGolden
// -update writes them).
func TestExportGolden(t *testing.T) {
	// More exports of one dataset than the 10 a minute a caller gets.
	e := newEnv(t, func(c *config.Config) { c.RateLimits = "records_export=1000-M" })
	own := bearer(e.ownerToken)
	id := e.uploadAndCreate(e.ownerToken, "Golden Rows", "golden.json", goldenRows)
	if d := e.waitDataset(e.ownerToken, id); d.str("status") != "active" {
		t.Fatalf("dataset: %s", d.Body)
	}
	fields := "n,big,amount,ok,day,at,name,note,meta,tags"
	got := map[string]string{}
	describe := func(r *resp, keys ...string) string {
		var b strings.Builder
		for _, k := range keys {
			fmt.Fprintf(&b, "%s: %s\n", k, r.Header.Get(k))
		}
		return b.String()
	}
	raw := header{"Accept-Encoding": "gzip"} // the body as sent, gzip undone by no one
	base := "/api/v1/datasets/" + id + "/data/export?fields=" + fields
	for _, c := range []struct{ name, query string }{
		{"csv", ""},
		{"csv-semicolon-noheader", "&delimiter=%3B&header=false"},
		{"csv-tab", "&delimiter=tab"},
		{"csv-pipe", "&delimiter=%7C"},
		{"csv-filtered", "&filter[ok]=true"},
		{"json", "&format=json"},
		{"json-stream", "&format=json&stream=true"},
		{"ndjson", "&format=ndjson"},
		{"parquet", "&format=parquet"},
		{"excel", "&format=excel"},
		{"excel-noheader", "&format=excel&header=false"},
		{"csv-gzip", "&compress=true"},
		{"json-gzip", "&format=json&compress=true"},
		{"parquet-gzip", "&format=parquet&compress=true"},
		{"excel-gzip", "&format=excel&compress=true"},
	} {
		hs := []header{own, raw}
		if strings.Contains(c.query, "format=json") {
			hs = hs[:1] // the harness reads JSON bodies: the client undoes gzip
		}
		r := e.do("GET", base+c.query, nil, hs...).status(200)
		if !strings.HasPrefix(r.Header.Get("X-Export-Id"), "exp_") {
			t.Fatalf("%s: %v", c.name, r.Header)
		}
		got["records-"+c.name] = string(r.Body)
		got["records-"+c.name+".headers"] = describe(r, "Content-Type", "Content-Disposition", "Content-Encoding", "X-Total-Records")
	}

	q := e.execute(map[string]any{"query": `SELECT n, big, amount, ok, day, at, name, note, meta, tags, (n % 1000)::int2 AS small, amount::float8 AS f,
		amount::float4 AS r, 'NaN'::numeric AS nan, 'Infinity'::numeric AS inf, n AS n, big::text AS big, 'x' AS "has ""quote"", comma"
		FROM golden_rows ORDER BY coalesce(n, 0)`}, e.ownerToken).status(200)
	qbase := "/api/v1/projects/" + e.projectID + "/queries/" + q.str("query_id")
	disposition := regexp.MustCompile(`query-q_[0-9a-zA-Z]+`)
	for _, c := range []struct {
		name string
		body map[string]any
	}{
		{"csv", map[string]any{"format": "csv"}},
		{"csv-tab-noheader", map[string]any{"format": "csv", "options": map[string]any{"include_headers": false, "delimiter": "tab"}}},
		{"csv-semicolon-singlequote", map[string]any{"format": "csv", "options": map[string]any{"delimiter": ";", "quote_char": "'"}}},
		{"csv-pipe", map[string]any{"format": "csv", "options": map[string]any{"delimiter": "|"}}},
		{"json", map[string]any{"format": "json"}},
		{"excel", map[string]any{"format": "excel"}},
		{"excel-noheader", map[string]any{"format": "excel", "options": map[string]any{"include_headers": false}}},
		{"parquet", map[string]any{"format": "parquet"}},
	} {
		x := e.do("POST", qbase+"/export", c.body, own).status(202)
		e.waitJob(e.ownerToken, x.str("job_id"))
		x = e.do("GET", qbase+"/exports/"+x.str("export_id"), nil, own).status(200)
		if x.str("status") != "completed" {
			t.Fatalf("%s: %s", c.name, x.Body)
		}
		d := e.do("GET", strings.TrimPrefix(x.str("download_url"), baseURL), nil, raw).status(200)
		got["query-"+c.name] = string(d.Body)
		got["query-"+c.name+".headers"] = disposition.ReplaceAllString(describe(d, "Content-Type", "Content-Disposition", "Content-Encoding", "Content-Length", "Cache-Control"), "query-ID") +
			fmt.Sprintf("row_count: %v\nsize_bytes: %v\n", x.get("row_count"), x.get("size_bytes"))
	}

	dir := filepath.Join("testdata", "export-golden")
	if *updateGolden {
		os.RemoveAll(dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range got {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(b), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	files, _ := os.ReadDir(dir)
	if len(files) != len(got) {
		t.Errorf("%d golden files, %d outputs: run with -update", len(files), len(got))
	}
	for name, b := range got {
		want, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
		} else if string(want) != b {
			t.Errorf("%s differs from its golden file:\n%q\nwant\n%q", name, trim(b), trim(string(want)))
		}
	}
}

func trim(s string) string {
	if len(s) > 600 {
		return s[:600] + "..."
	}
	return s
}
