package tests

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/xuri/excelize/v2"
)

// oneRecordCSV is one record of every kind of value a file holds: a numeric with trailing
// zeros, an integer past 2^53, a boolean, a date, timestamps with an offset and with a
// fraction, a text that looks like a number, an empty cell, and texts holding JSON (quotes,
// characters HTML escapes). oneRecordJSON is the same record from a JSON file, where the
// JSON texts are a document (jsonb) and an array (text[]).
const (
	oneRecordCSV = "amount,big,active,day,seen_at,precise_at,zip,note,meta,tags\n" +
		`4412.80,9007199254740993,true,2024-05-06,2024-05-06T19:30:00+02:00,2024-05-06 17:30:00.250Z,02134,,` +
		`"{""b"": 1, ""a"": [1, 2.50], ""h"": ""<&>""}","[""x"", ""y,z""]"` + "\n"
	oneRecordJSON = `[{"amount": 4412.80, "big": 9007199254740993, "active": true, "day": "2024-05-06", "seen_at": "2024-05-06T19:30:00+02:00",
		"precise_at": "2024-05-06 17:30:00.250Z", "zip": "02134", "note": null, "meta": {"b": 1, "a": [1, 2.50], "h": "<&>"}, "tags": ["x", "y,z"]}]`
)

// wantField is a field of the record as JSON says it (worked out by hand from the file:
// numbers as written, trailing zeros kept; times in RFC 3339 UTC with their fraction; NULL as
// null) and as a csv cell holds it.
type wantField struct{ name, json, csv string }

func oneRecordWant(docs bool) []wantField {
	w := []wantField{
		{"amount", `4412.80`, "4412.80"},
		{"big", `9007199254740993`, "9007199254740993"},
		{"active", `true`, "true"},
		{"day", `"2024-05-06"`, "2024-05-06"},
		{"seen_at", `"2024-05-06T17:30:00Z"`, "2024-05-06T17:30:00Z"},
		{"precise_at", `"2024-05-06T17:30:00.25Z"`, "2024-05-06T17:30:00.25Z"},
		{"zip", `"02134"`, "02134"},
		{"note", `null`, ""},
		{"meta", `"{\"b\": 1, \"a\": [1, 2.50], \"h\": \"<&>\"}"`, `{"b": 1, "a": [1, 2.50], "h": "<&>"}`},
		{"tags", `"[\"x\", \"y,z\"]"`, `["x", "y,z"]`},
	}
	if docs { // a jsonb document (keys in jsonb's order) and an array, as JSON
		w[8] = wantField{"meta", `{"a": [1, 2.50], "b": 1, "h": "<&>"}`, `{"a": [1, 2.50], "b": 1, "h": "<&>"}`}
		w[9] = wantField{"tags", `["x", "y,z"]`, `["x","y,z"]`}
	}
	return w
}

// TestOneRecordEverywhere reads one record through every path that shows it (preview, list,
// list with fields, single read, record SQL query, project SQL query, every export format of
// the record export and of the query export) and holds each to the same values: from a CSV
// file, and from a JSON file (with a JSON document and an array).
func TestOneRecordEverywhere(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, src := range []struct{ name, file, table, content string }{
		{"One Record", "one.csv", "one_record", oneRecordCSV},
		{"One Document", "one.json", "one_document", oneRecordJSON},
	} {
		t.Run(src.file, func(t *testing.T) {
			oneRecordEverywhere(t, e, src.name, src.file, src.table, src.content, oneRecordWant(src.file == "one.json"))
		})
	}
}

func oneRecordEverywhere(t *testing.T, e *env, name, file, table, content string, want []wantField) {
	own := bearer(e.ownerToken)
	id := e.uploadAndCreate(e.ownerToken, name, file, content)
	if d := e.waitDataset(e.ownerToken, id); d.str("status") != "active" {
		t.Fatalf("dataset: %s", d.Body)
	}
	names := make([]string, len(want))
	for i, w := range want {
		names[i] = w.name
	}
	// check holds an object's (or a row's) values to the wanted ones, as JSON values: numbers
	// by their text, objects by their members.
	check := func(t *testing.T, path string, got map[string]json.RawMessage) {
		t.Helper()
		for _, w := range want {
			v, ok := got[w.name]
			if !ok {
				t.Errorf("%s: no %s in %v", path, w.name, got)
			} else if !sameJSON(string(v), w.json) {
				t.Errorf("%s: %s is %s, want %s", path, w.name, v, w.json)
			}
		}
	}

	// Preview: the values a record read gives, as JSON values.
	pv := e.do("GET", "/api/v1/projects/"+e.projectID+"/datasets/"+id+"/preview", nil, own).status(200)
	var preview struct {
		Columns []string            `json:"columns"`
		Rows    [][]json.RawMessage `json:"rows"`
	}
	if err := json.Unmarshal(pv.Body, &preview); err != nil || len(preview.Rows) != 1 {
		t.Fatalf("preview: %v %s", err, pv.Body)
	}
	row := map[string]json.RawMessage{}
	for i, c := range preview.Columns {
		row[c] = preview.Rows[0][i]
	}
	check(t, "preview", row)
	recID := string(row["id"])

	// List and single read: the same bytes, fields in the table's order, _links last.
	base := "/api/v1/datasets/" + id + "/data"

	// The change stream: a record created with these values is announced with them.
	stream, stop := e.openStream(base+"/stream", own)
	body := map[string]json.RawMessage{}
	for _, w := range want {
		body[w.name] = json.RawMessage(w.json)
	}
	e.do("POST", base, body, own).status(201)
	ev := next(t, stream, true)
	stop()
	var announced map[string]json.RawMessage
	if err := json.Unmarshal([]byte(ev.raw), &announced); err != nil || ev.name != "record.created" {
		t.Fatalf("stream event %s: %s %v", ev.name, ev.raw, err)
	}
	check(t, "stream", announced)
	e.do("DELETE", base+"/"+string(announced["id"])+"?soft=false", nil, own).status(200)
	list := e.do("GET", base, nil, own).status(200)
	listed := firstRecord(t, list.Body)
	rec, order := objectOf(t, listed)
	check(t, "list", rec)
	wantOrder := append(append([]string{"id"}, names...), "created_at", "updated_at", "version", "_links")
	if !reflect.DeepEqual(order, wantOrder) {
		t.Errorf("list: fields in the order %v, want %v", order, wantOrder)
	}
	for _, f := range []string{"created_at", "updated_at"} {
		var s string
		if json.Unmarshal(rec[f], &s) != nil || !strings.HasSuffix(s, "Z") {
			t.Errorf("list: %s is %s, want RFC 3339 in UTC", f, rec[f])
		}
	}
	one := e.do("GET", base+"/"+recID, nil, own).status(200)
	if !bytes.Equal(one.Body, listed) {
		t.Errorf("single read differs from the list:\n%s\n%s", one.Body, listed)
	}

	// fields= answers in the order asked, on both paths, with the same bytes; the key comes
	// first, always.
	asked := []string{"zip", "amount", "meta", "day", "active"}
	q := "?fields=" + strings.Join(asked, ",")
	answered := append(append([]string{"id"}, asked...), "_links")
	narrowList := firstRecord(t, e.do("GET", base+q, nil, own).status(200).Body)
	if _, order := objectOf(t, narrowList); !reflect.DeepEqual(order, answered) {
		t.Errorf("list with fields: %v, want %v", order, asked)
	}
	narrowOne := e.do("GET", base+"/"+recID+q, nil, own).status(200).Body
	if _, order := objectOf(t, narrowOne); !reflect.DeepEqual(order, answered) {
		t.Errorf("single read with fields: %v, want %v", order, asked)
	}
	if !bytes.Equal(narrowList, narrowOne) {
		t.Errorf("with fields, single read differs from the list:\n%s\n%s", narrowOne, narrowList)
	}
	// Sorted by a field not asked for: the sort key does not show, the order holds.
	sorted := firstRecord(t, e.do("GET", base+q+"&sort=-seen_at", nil, own).status(200).Body)
	if !bytes.Equal(sorted, narrowOne) {
		t.Errorf("sorted by another field:\n%s\nwant\n%s", sorted, narrowOne)
	}

	// Aggregates write their values the same way (a time bucket is a time).
	agg := e.do("GET", base+"/aggregate?group_by=date_trunc(day,seen_at)&agg=max(amount),min(precise_at)", nil, own).status(200)
	var aggBody struct {
		Data         []map[string]json.RawMessage `json:"data"`
		Aggregations map[string]json.RawMessage   `json:"aggregations"`
	}
	if err := json.Unmarshal(agg.Body, &aggBody); err != nil || len(aggBody.Data) != 1 ||
		string(aggBody.Data[0]["seen_at_day"]) != `"2024-05-06T00:00:00Z"` || string(aggBody.Data[0]["max_amount"]) != `4412.80` ||
		string(aggBody.Aggregations["min_precise_at"]) != `"2024-05-06T17:30:00.25Z"` {
		t.Errorf("aggregate: %v %s", err, agg.Body)
	}

	// The record SQL query and the project SQL query.
	rq := e.do("POST", base+"/query", map[string]any{"sql": "SELECT " + strings.Join(names, ", ") + " FROM ${table}"}, own).status(200)
	var rqBody struct {
		Data []map[string]json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(rq.Body, &rqBody); err != nil || len(rqBody.Data) != 1 {
		t.Fatalf("record query: %v %s", err, rq.Body)
	}
	check(t, "record query", rqBody.Data[0])
	pq := e.execute(map[string]any{"query": "SELECT " + strings.Join(names, ", ") + " FROM " + table}, e.ownerToken).status(200)
	var pqBody struct {
		Results struct {
			Columns []struct {
				Name string `json:"name"`
			} `json:"columns"`
			Rows [][]json.RawMessage `json:"rows"`
		} `json:"results"`
	}
	if err := json.Unmarshal(pq.Body, &pqBody); err != nil || len(pqBody.Results.Rows) != 1 {
		t.Fatalf("project query: %v %s", err, pq.Body)
	}
	row = map[string]json.RawMessage{}
	for i, c := range pqBody.Results.Columns {
		row[c.Name] = pqBody.Results.Rows[0][i]
	}
	check(t, "project query", row)

	// Exports: the record export and the query export, in every format.
	fields := strings.Join(names, ",")
	recordExport := func(format string) []byte {
		return e.do("GET", base+"/export?fields="+fields+"&format="+format, nil, own).status(200).Body
	}
	qbase := "/api/v1/projects/" + e.projectID + "/queries/" + pq.str("query_id")
	queryExport := func(format string) []byte {
		t.Helper()
		x := e.do("POST", qbase+"/export", map[string]any{"format": format}, own).status(202)
		e.waitJob(e.ownerToken, x.str("job_id"))
		x = e.do("GET", qbase+"/exports/"+x.str("export_id"), nil, own).status(200)
		if x.str("status") != "completed" {
			t.Fatalf("%s export: %s", format, x.Body)
		}
		return e.do("GET", strings.TrimPrefix(x.str("download_url"), baseURL), nil).status(200).Body
	}
	for _, x := range []struct {
		name string
		get  func(string) []byte
	}{{"record export", recordExport}, {"query export", queryExport}} {
		t.Run(x.name, func(t *testing.T) {
			checkCSV(t, x.get("csv"), want)
			var arr []map[string]json.RawMessage
			if b := x.get("json"); json.Unmarshal(b, &arr) != nil || len(arr) != 1 {
				t.Errorf("json: %s", b)
			} else {
				check(t, "json", arr[0])
			}
			checkExcel(t, x.get("excel"), want)
			checkParquet(t, x.get("parquet"), want)
		})
	}
	nd := recordExport("ndjson")
	var obj map[string]json.RawMessage
	if json.Unmarshal(nd, &obj) != nil || bytes.Count(nd, []byte("\n")) != 1 {
		t.Errorf("ndjson: %s", nd)
	} else {
		check(t, "ndjson", obj)
	}
}

// checkCSV holds a csv export to the wanted text of each value: JSON documents and arrays as
// JSON text, NULL as nothing (not "").
func checkCSV(t *testing.T, b []byte, want []wantField) {
	t.Helper()
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil || len(recs) != 2 || len(recs[0]) != len(want) {
		t.Fatalf("csv: %v\n%s", err, b)
	}
	for i, w := range want {
		got := recs[1][i]
		doc := strings.HasPrefix(w.json, "{") || strings.HasPrefix(w.json, "[") // JSON's own text, compared as JSON
		if recs[0][i] != w.name || doc && !sameJSON(got, w.csv) || !doc && got != w.csv {
			t.Errorf("csv: %s is %q, want %q", recs[0][i], got, w.csv)
		}
	}
	if !bytes.Contains(b, []byte(",02134,,")) {
		t.Errorf("csv: NULL is not an empty field:\n%s", b)
	}
}

// checkExcel holds an Excel export to native cells: numbers as numbers, the boolean as a
// boolean, the date and the times as dates (UTC), text and JSON as text.
func checkExcel(t *testing.T, b []byte, want []wantField) {
	t.Helper()
	f, err := excelize.OpenReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := f.GetRows("Sheet1")
	if err != nil || len(rows) != 2 || len(rows[0]) != len(want) {
		t.Fatalf("excel: %v %q", err, rows)
	}
	day := time.Date(2024, 5, 6, 0, 0, 0, 0, time.UTC).Sub(time.Date(1899, 12, 30, 0, 0, 0, 0, time.UTC)).Hours() / 24
	for i, w := range want {
		cell, _ := excelize.CoordinatesToCellName(i+1, 2)
		ty, _ := f.GetCellType("Sheet1", cell)
		raw, _ := f.GetCellValue("Sheet1", cell, excelize.Options{RawCellValue: true})
		shown, _ := f.GetCellValue("Sheet1", cell)
		number := func(want float64) {
			t.Helper()
			n, err := strconv.ParseFloat(raw, 64)
			if ty != excelize.CellTypeNumber && ty != excelize.CellTypeUnset || err != nil || math.Abs(n-want) > 1e-9 {
				t.Errorf("excel: %s is %v %q, want the number %v", w.name, ty, raw, want)
			}
		}
		text := func(want string) {
			t.Helper()
			if ty != excelize.CellTypeInlineString && ty != excelize.CellTypeSharedString || raw != want {
				t.Errorf("excel: %s is %v %q, want the text %q", w.name, ty, raw, want)
			}
		}
		if rows[0][i] != w.name {
			t.Errorf("excel: column %d is %s, want %s", i, rows[0][i], w.name)
		}
		switch w.name {
		case "amount":
			number(4412.8)
		case "big":
			number(9007199254740993)
		case "active":
			if ty != excelize.CellTypeBool || raw != "1" {
				t.Errorf("excel: active is %v %q, want the boolean true", ty, raw)
			}
		case "day":
			number(day)
			if shown != "2024-05-06" {
				t.Errorf("excel: day shows %q", shown)
			}
		case "seen_at", "precise_at":
			frac := (17*3600 + 30*60) / 86400.0
			if w.name == "precise_at" {
				frac += 0.25 / 86400
			}
			number(day + frac)
			if shown != "2024-05-06 17:30:00" {
				t.Errorf("excel: %s shows %q", w.name, shown)
			}
		case "note":
			if raw != "" {
				t.Errorf("excel: note is %q, want an empty cell", raw)
			}
		case "zip":
			text("02134")
		default: // text, and JSON as its text
			if strings.HasPrefix(w.json, `"`) {
				text(w.csv)
			} else if !sameJSON(raw, w.json) {
				t.Errorf("excel: %s is %q, want %s", w.name, raw, w.json)
			}
		}
	}
}

// checkParquet holds a Parquet export to typed values: doubles, integers, the boolean, the
// date in days and the times in microseconds since 1970 (UTC), text and JSON as strings.
func checkParquet(t *testing.T, b []byte, want []wantField) {
	t.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	r := parquet.NewReader(f)
	rows := make([]parquet.Row, 2)
	n, err := r.ReadRows(rows)
	if n != 1 || err != nil && err != io.EOF {
		t.Fatalf("parquet: %d rows, %v", n, err)
	}
	at := time.Date(2024, 5, 6, 17, 30, 0, 0, time.UTC)
	for _, w := range want {
		leaf, ok := f.Schema().Lookup(w.name)
		if !ok {
			t.Errorf("parquet: no column %s", w.name)
			continue
		}
		v := rows[0][leaf.ColumnIndex]
		var good bool
		switch w.name {
		case "amount":
			good = v.Kind() == parquet.Double && v.Double() == 4412.8
		case "big":
			good = v.Kind() == parquet.Int64 && v.Int64() == 9007199254740993
		case "active":
			good = v.Kind() == parquet.Boolean && v.Boolean()
		case "day":
			good = v.Kind() == parquet.Int32 && v.Int32() == int32(at.Unix()/86400)
		case "seen_at":
			good = v.Kind() == parquet.Int64 && v.Int64() == at.UnixMicro()
		case "precise_at":
			good = v.Kind() == parquet.Int64 && v.Int64() == at.Add(250*time.Millisecond).UnixMicro()
		case "note":
			good = v.IsNull()
		default: // text, and JSON as its text
			good = v.Kind() == parquet.ByteArray && (string(v.ByteArray()) == w.csv || sameJSON(string(v.ByteArray()), w.csv))
		}
		if !good {
			t.Errorf("parquet: %s is %v (%v)", w.name, v, v.Kind())
		}
	}
}

// rawCell is a preview's value of column in row i as JSON text (a number as written).
func (r *resp) rawCell(i int, column string) string {
	r.t.Helper()
	var p struct {
		Columns []string            `json:"columns"`
		Rows    [][]json.RawMessage `json:"rows"`
	}
	if err := json.Unmarshal(r.Body, &p); err != nil || i >= len(p.Rows) {
		r.t.Fatalf("preview: %v %s", err, r.Body)
	}
	for j, c := range p.Columns {
		if c == column {
			return string(p.Rows[i][j])
		}
	}
	r.t.Fatalf("no column %s in %s", column, r.Body)
	return ""
}

// firstRecord is the first element of a list's data, as sent.
func firstRecord(t *testing.T, body []byte) []byte {
	t.Helper()
	var l struct {
		Data []json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &l); err != nil || len(l.Data) == 0 {
		t.Fatalf("list: %v %s", err, body)
	}
	return l.Data[0]
}

// objectOf is a JSON object's members and the order of its keys.
func objectOf(t *testing.T, b []byte) (map[string]json.RawMessage, []string) {
	t.Helper()
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var order []string
	dec.Token()
	for dec.More() {
		k, _ := dec.Token()
		order = append(order, k.(string))
		var skip json.RawMessage
		dec.Decode(&skip)
	}
	return m, order
}

// sameJSON reports whether two JSON texts are the same value, numbers compared by their text.
func sameJSON(a, b string) bool {
	decode := func(s string) (any, bool) {
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		var v any
		return v, dec.Decode(&v) == nil
	}
	x, ok1 := decode(a)
	y, ok2 := decode(b)
	return ok1 && ok2 && reflect.DeepEqual(x, y)
}
