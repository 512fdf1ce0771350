package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"dataplatform/store/ingest"

	"github.com/xuri/excelize/v2"
)

func TestRecordExport(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	id := e.uploadAndCreate(e.ownerToken, "Contacts", "c.csv", "name,note,score,day\n"+
		"Ann,\"hello, \"\"world\"\"\",1.5,2024-01-02\nBob,,2,\nCid,\"multi\nline\",3,2024-03-04\n")
	e.waitDataset(e.ownerToken, id)
	base := "/api/v1/datasets/" + id + "/data/export"

	r := e.do("GET", base+"?fields=name,note,score,day", nil, own).status(200)
	want := "name,note,score,day\nAnn,\"hello, \"\"world\"\"\",1.5,2024-01-02\nBob,,2,\nCid,\"multi\nline\",3,2024-03-04\n"
	if string(r.Body) != want || r.Header.Get("X-Total-Records") != "3" || !strings.HasPrefix(r.Header.Get("X-Export-Id"), "exp_") ||
		r.Header.Get("Content-Disposition") != `attachment; filename="contacts.csv"` {
		t.Fatalf("csv:\n%q\nwant\n%q\n%v", r.Body, want, r.Header)
	}
	r = e.do("GET", base+"?fields=name,score&delimiter=%3B&header=false&filter[score][gte]=2", nil, own).status(200)
	if string(r.Body) != "Bob;2\nCid;3\n" || r.Header.Get("X-Total-Records") != "2" {
		t.Fatalf("filtered csv: %q", r.Body)
	}
	// gzip: the client undoes it; the file name says it.
	r = e.do("GET", base+"?compress=true&fields=name", nil, own).status(200)
	if string(r.Body) != "name\nAnn\nBob\nCid\n" || !strings.HasSuffix(r.Header.Get("Content-Disposition"), `.csv.gz"`) {
		t.Fatalf("gzip: %q %v", r.Body, r.Header)
	}
	j := e.do("GET", base+"?format=json&fields=name,score", nil, own).status(200)
	if j.len("") != 3 || j.str("1.name") != "Bob" || j.num("2.score") != 3 {
		t.Fatalf("json: %s", j.Body)
	}
	nd := e.do("GET", base+"?format=json&stream=true", nil, own).status(200)
	lines := strings.Split(strings.TrimSpace(string(nd.Body)), "\n")
	var first map[string]any
	if nd.Header.Get("Content-Type") != "application/x-ndjson" || len(lines) != 3 || json.Unmarshal([]byte(lines[0]), &first) != nil || first["note"] != `hello, "world"` {
		t.Fatalf("ndjson: %s", nd.Body)
	}
	// Parquet and Excel, read back.
	pq := e.do("GET", base+"?format=parquet&fields=id,name,score,day", nil, own).status(200)
	path := filepath.Join(t.TempDir(), "x.parquet")
	os.WriteFile(path, pq.Body, 0o600)
	s, err := ingest.Infer(path, ingest.Parquet)
	if err != nil || s.Rows != 3 {
		t.Fatalf("parquet: %v %+v", err, s)
	}
	types := map[string]ingest.Type{}
	for _, c := range s.Columns {
		types[c.Name] = c.Type
	}
	if types["name"] != ingest.Text || types["score"] != ingest.Numeric || types["day"] != ingest.Date || types["src_id"] != ingest.BigInt {
		t.Fatalf("parquet types: %v", types)
	}
	x := e.do("GET", base+"?format=excel&fields=name,score", nil, own).status(200)
	f, err := excelize.OpenReader(bytes.NewReader(x.Body))
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := f.GetRows("Sheet1")
	if len(rows) != 4 || rows[0][0] != "name" || rows[3][0] != "Cid" || rows[2][1] != "2" {
		t.Fatalf("excel: %v", rows)
	}
	e.do("GET", base+"?format=xml", nil, own).apiError(400, "VALIDATION_ERROR", "query.format", "enum")
	e.do("GET", base+"?fields=nope", nil, own).apiError(400, "VALIDATION_ERROR", "query.fields", "unknown_field")
	_, viewer := e.member(e.orgID, "viewer")
	e.do("GET", base, nil, bearer(viewer)).authError(403, "PERMISSION_DENIED")
}

// Text a spreadsheet runs as a formula (OWASP CSV injection): escaped with a leading single
// quote in Excel by default and in csv when asked, in text cells only (-1 in a number column
// stays a number), for the record export and the query export.
func TestExportFormulaEscaping(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	id := e.uploadAndCreate(e.ownerToken, "Formulas", "f.csv", "label,n\n=1+1,1\n@SUM(1),-1\n+1,2\n-1,-3\n\"x;=1+1\",4\n")
	if d := e.waitDataset(e.ownerToken, id); d.str("status") != "active" {
		t.Fatalf("dataset: %s", d.Body)
	}
	// "x;=1+1" is quoted when escaped: a spreadsheet splitting at ; would start a cell at =1+1.
	raw := [][]string{{"label", "n"}, {"=1+1", "1"}, {"@SUM(1)", "-1"}, {"+1", "2"}, {"-1", "-3"}, {"x;=1+1", "4"}}
	escaped := [][]string{{"label", "n"}, {"'=1+1", "1"}, {"'@SUM(1)", "-1"}, {"'+1", "2"}, {"'-1", "-3"}, {"x;=1+1", "4"}}
	csvOf := func(rows [][]string, esc bool) string {
		var b strings.Builder
		for _, r := range rows {
			if esc && strings.Contains(r[0], ";") {
				r = []string{`"` + r[0] + `"`, r[1]}
			}
			b.WriteString(strings.Join(r, ",") + "\n")
		}
		return b.String()
	}
	sheet := func(body []byte) [][]string {
		t.Helper()
		f, err := excelize.OpenReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		rows, _ := f.GetRows("Sheet1")
		if ty, _ := f.GetCellType("Sheet1", "B3"); ty == excelize.CellTypeSharedString || ty == excelize.CellTypeInlineString {
			t.Errorf("the number -1 is a text cell")
		}
		return rows
	}

	base := "/api/v1/datasets/" + id + "/data/export?fields=label,n"
	if b := e.do("GET", base, nil, own).status(200).Body; string(b) != csvOf(raw, false) {
		t.Errorf("csv (exact by default):\n%s", b)
	}
	if b := e.do("GET", base+"&escape_formulas=true", nil, own).status(200).Body; string(b) != csvOf(escaped, true) {
		t.Errorf("csv escaped:\n%s", b)
	}
	if rows := sheet(e.do("GET", base+"&format=excel", nil, own).status(200).Body); !reflect.DeepEqual(rows, escaped) {
		t.Errorf("excel (escaped by default): %q", rows)
	}
	if rows := sheet(e.do("GET", base+"&format=excel&escape_formulas=false", nil, own).status(200).Body); !reflect.DeepEqual(rows, raw) {
		t.Errorf("excel exact: %q", rows)
	}
	e.do("GET", base+"&escape_formulas=yes", nil, own).apiError(400, "VALIDATION_ERROR", "query.escape_formulas")

	q := e.execute(map[string]any{"query": `SELECT label, n FROM formulas ORDER BY id`}, e.ownerToken).status(200)
	qbase := "/api/v1/projects/" + e.projectID + "/queries/" + q.str("query_id")
	export := func(body map[string]any) []byte {
		t.Helper()
		x := e.do("POST", qbase+"/export", body, own).status(202)
		e.waitJob(e.ownerToken, x.str("job_id"))
		x = e.do("GET", qbase+"/exports/"+x.str("export_id"), nil, own).status(200)
		if x.str("status") != "completed" {
			t.Fatalf("export: %s", x.Body)
		}
		return e.do("GET", strings.TrimPrefix(x.str("download_url"), baseURL), nil).status(200).Body
	}
	if b := export(map[string]any{"format": "csv"}); string(b) != csvOf(raw, false) {
		t.Errorf("query csv (exact by default):\n%s", b)
	}
	if b := export(map[string]any{"format": "csv", "options": map[string]any{"escape_formulas": true}}); string(b) != csvOf(escaped, true) {
		t.Errorf("query csv escaped:\n%s", b)
	}
	if rows := sheet(export(map[string]any{"format": "excel"})); !reflect.DeepEqual(rows, escaped) {
		t.Errorf("query excel (escaped by default): %q", rows)
	}
	if rows := sheet(export(map[string]any{"format": "excel", "options": map[string]any{"escape_formulas": false}})); !reflect.DeepEqual(rows, raw) {
		t.Errorf("query excel exact: %q", rows)
	}
	e.do("POST", qbase+"/export", map[string]any{"format": "csv", "options": map[string]any{"escape_formulas": "yes"}}, own).
		apiError(400, "VALIDATION_ERROR", "body.options.escape_formulas")
}

// TestExportClientGoneFreesItsQuery: a client that goes away in the middle of a large export
// frees its database work at once: the export's query stops (no backend left running it) and
// the server answers the next request as before.
func TestExportClientGoneFreesItsQuery(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var csv strings.Builder
	csv.WriteString("n,label\n")
	for i := 0; i < 300000; i++ {
		fmt.Fprintf(&csv, "%d,row number %d\n", i, i)
	}
	id := e.uploadAndCreate(e.ownerToken, "Big", "big.csv", csv.String())
	e.waitDataset(e.ownerToken, id)
	// The export's own statement, told from anything else on the table (autovacuum, the
	// statistics job) by its text and by when it started: an export this large is read with
	// COPY ... TO STDOUT.
	type stmt struct {
		PID   int       `db:"pid"`
		Start time.Time `db:"query_start"`
	}
	exportStmt := `query LIKE 'COPY (SELECT %' AND query LIKE '%` + id + `%' AND pid <> pg_backend_pid()`
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", e.ts.URL+"/api/v1/datasets/"+id+"/data/export?format=csv", nil)
	req.Header.Set("Authorization", "Bearer "+e.ownerToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("export: %v %v", err, res)
	}
	if _, err := io.ReadFull(res.Body, make([]byte, 64<<10)); err != nil { // under way
		t.Fatal(err)
	}
	var seen []stmt
	if err := e.st.DB.Select(&seen, `SELECT pid, query_start FROM pg_stat_activity WHERE state = 'active' AND `+exportStmt); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 {
		t.Fatalf("the export's query while it streams: %v", seen)
	}
	cancel()
	res.Body.Close()
	still := func() (state string) {
		_ = e.st.DB.Get(&state, `SELECT state || ' ' || coalesce(wait_event_type, '') || '/' || coalesce(wait_event, '') FROM pg_stat_activity
			WHERE pid = $1 AND query_start = $2 AND state <> 'idle'`, seen[0].PID, seen[0].Start)
		return state
	}
	for start := time.Now(); still() != ""; time.Sleep(20 * time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("the export's query still runs 10 s after its client went away (%s)", still())
		}
	}
	e.do("GET", "/api/v1/datasets/"+id+"/data?limit=1", nil, bearer(e.ownerToken)).status(200)
}
