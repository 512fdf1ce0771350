package tests

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
