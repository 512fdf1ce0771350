package tests

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// uploadAndCreate uploads content and creates a dataset from it; it returns the dataset id.
func (e *env) uploadAndCreate(tok, name, filename, content string) string {
	e.t.Helper()
	return e.uploadAndCreateWith(tok, name, filename, content, nil)
}

// uploadAndCreateWith is uploadAndCreate with more fields of the create body (schema).
func (e *env) uploadAndCreateWith(tok, name, filename, content string, extra map[string]any) string {
	e.t.Helper()
	body, h := multipartBody(e.t, filename, []byte(content), nil)
	up := e.do("POST", "/api/v1/projects/"+e.projectID+"/datasets/upload", body, bearer(tok), h).status(201)
	req := map[string]any{"name": name, "source": map[string]any{"file_id": up.str("file_id")}}
	for k, v := range extra {
		req[k] = v
	}
	d := e.do("POST", "/api/v1/projects/"+e.projectID+"/datasets", req, bearer(tok)).status(202)
	if d.str("status") != "processing" || d.Header.Get("Location") != "/api/v1/projects/"+e.projectID+"/datasets/"+d.str("id") {
		e.t.Fatalf("create: %s", d.Body)
	}
	return d.str("id")
}

// waitDataset polls until the dataset leaves processing.
func (e *env) waitDataset(tok, id string) *resp {
	e.t.Helper()
	for i := 0; i < 600; i++ {
		r := e.do("GET", "/api/v1/projects/"+e.projectID+"/datasets/"+id, nil, bearer(tok)).status(200)
		if r.str("status") != "processing" {
			return r
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.t.Fatalf("dataset %s still processing", id)
	return nil
}

func TestDatasetFromCSV(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	csv := "Customer ID,Name,Signup Date,Amount,Active,Last Seen,Ref\n" +
		"1,Ann,2024-01-05,10.50,true,2024-01-05T10:00:00Z,6f1c2a9e-8e4b-4c1a-9d5e-1f2a3b4c5d6e\n" +
		"2,\"Bob, Jr.\",2024-02-10,7,false,2024-02-10 08:30:00,\n" +
		"3000000000,Zoë,,0.125,yes,,6f1c2a9e-8e4b-4c1a-9d5e-1f2a3b4c5d6f\n"
	id := e.uploadAndCreate(e.ownerToken, "Customers", "customers.csv", csv)
	d := e.waitDataset(e.ownerToken, id)
	if d.str("status") != "active" || d.num("source.row_count") != 3 || d.num("source.column_count") != 7 {
		t.Fatalf("dataset: %s", d.Body)
	}
	want := map[string]string{"customer_id": "bigint", "name": "text", "signup_date": "date", "amount": "numeric",
		"active": "boolean", "last_seen": "timestamptz", "ref": "uuid"}
	for i := 0; i < 7; i++ {
		c := fmt.Sprintf("schema.tables.0.columns.%d.", i)
		if want[d.str(c+"name")] != d.str(c+"type") {
			t.Fatalf("column %s: type %s, want %s", d.str(c+"name"), d.str(c+"type"), want[d.str(c+"name")])
		}
	}
	if d.str("schema.tables.0.columns.0.original_name") != "Customer ID" || d.get("schema.tables.0.columns.2.nullable") != true {
		t.Fatalf("columns: %s", d.Body)
	}
	if d.get("metadata.processing_time_ms") == nil || !strings.HasPrefix(d.str("source.s3_key"), e.orgID+"/upl_") {
		t.Fatalf("detail: %s", d.Body)
	}
	p := e.do("GET", "/api/v1/projects/"+e.projectID+"/datasets/"+id+"/preview?limit=2&offset=1", nil, bearer(e.ownerToken)).status(200)
	// customer_id is named after the dataset and unique: it keys the records, in key order.
	if p.str("columns.0") != "customer_id" || p.num("rows.0.0") != 2 || p.num("total_rows") != 3 || p.num("row_count") != 2 || p.str("rows.0.1") != "Bob, Jr." || p.get("rows.1.2") != nil {
		t.Fatalf("preview: %s", p.Body)
	}
	if p.num("rows.1.0") != 3000000000 || p.str("rows.0.2") != "2024-02-10" {
		t.Fatalf("preview values: %s", p.Body)
	}
	// The dataset turns active inside the job, which is marked succeeded just after.
	job := e.waitJob(e.ownerToken, d.str("job_id"))
	if job.str("kind") != "dataset.ingest" {
		t.Fatalf("job: %s", job.Body)
	}
	// The upload was claimed: it cannot make a second dataset.
	l := e.do("GET", "/api/v1/projects/"+e.projectID+"/datasets?search=cust", nil, bearer(e.ownerToken)).status(200)
	if l.num("pagination.total") != 1 {
		t.Fatalf("list: %s", l.Body)
	}
	e.do("POST", "/api/v1/projects/"+e.projectID+"/datasets", map[string]any{"name": "Again", "source": map[string]any{"file_id": d.str("source.file_id")}},
		bearer(e.ownerToken)).apiError(400, "VALIDATION_ERROR", "body.source.file_id", "not_found")
	u := e.do("PATCH", "/api/v1/projects/"+e.projectID+"/datasets/"+id, map[string]any{"description": "people"}, bearer(e.ownerToken)).status(200)
	if u.str("description") != "people" {
		t.Fatalf("patch: %s", u.Body)
	}
	if g := e.do("GET", "/api/v1/projects/"+e.projectID, nil, bearer(e.ownerToken)).status(200); g.num("dataset_count") != 1 {
		t.Fatalf("dataset_count: %s", g.Body)
	}
	// Other organizations see nothing; viewers may not preview rows (datasets:read).
	_, viewer := e.member(e.orgID, "viewer")
	e.do("GET", "/api/v1/projects/"+e.projectID+"/datasets/"+id, nil, bearer(viewer)).status(200)
	e.do("GET", "/api/v1/projects/"+e.projectID+"/datasets/"+id+"/preview", nil, bearer(viewer)).authError(403, "PERMISSION_DENIED")
	other := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Other"}, bearer(e.ownerToken)).status(201).str("id")
	_, outsider := e.member(other, "admin")
	e.do("GET", "/api/v1/projects/"+e.projectID+"/datasets/"+id, nil, bearer(outsider)).apiError(404, "DATASET_NOT_FOUND")
	e.do("GET", "/api/v1/jobs/"+d.str("job_id"), nil, bearer(outsider)).apiError(404, "NOT_FOUND")

	del := e.do("DELETE", "/api/v1/projects/"+e.projectID+"/datasets/"+id, nil, bearer(e.ownerToken)).status(200)
	if del.get("deleted_at") == nil {
		t.Fatalf("delete: %s", del.Body)
	}
	var n int
	e.st.DB.Get(&n, `SELECT count(*) FROM pg_tables WHERE tablename = $1`, id)
	if n != 0 {
		t.Fatal("the dataset's table survived its deletion")
	}
	e.do("GET", "/api/v1/projects/"+e.projectID+"/datasets/"+id, nil, bearer(e.ownerToken)).apiError(404, "DATASET_NOT_FOUND")
	for _, ev := range []string{"dataset.created", "dataset.processing", "dataset.ready", "dataset.deleted"} {
		if e.countOutboxRows(e.orgID, ev) != 1 {
			t.Fatalf("outbox event %s missing", ev)
		}
	}
}

func TestDatasetRaggedCSVFails(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.uploadAndCreate(e.ownerToken, "Ragged", "bad.csv", "a,b,c\n1,2,3\n4,5\n6,7,8\n")
	d := e.waitDataset(e.ownerToken, id)
	if d.str("status") != "failed" || !strings.Contains(d.str("error"), "line 3") {
		t.Fatalf("ragged: %s", d.Body)
	}
	var n int
	e.st.DB.Get(&n, `SELECT count(*) FROM pg_tables WHERE tablename = $1`, id)
	if n != 0 || e.countOutboxRows(e.orgID, "dataset.failed") != 1 {
		t.Fatal("a failed load left a table, or no dataset.failed event")
	}
	e.do("GET", "/api/v1/projects/"+e.projectID+"/datasets/"+id+"/preview", nil, bearer(e.ownerToken)).apiError(409, "CONFLICT")
	job := e.do("GET", "/api/v1/jobs/"+d.str("job_id"), nil, bearer(e.ownerToken)).status(200)
	if job.str("status") != "failed" || job.num("attempts") != 1 {
		t.Fatalf("a bad file must not be retried: %s", job.Body)
	}
}

func TestDatasetCreateValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	path := "/api/v1/projects/" + e.projectID + "/datasets"
	own := bearer(e.ownerToken)
	e.do("POST", path, map[string]any{"name": "x", "source": map[string]any{"file_id": "upl_missing"}}, own).apiError(400, "VALIDATION_ERROR", "body.source.file_id", "not_found")
	e.do("POST", path, map[string]any{"name": "x"}, own).apiError(400, "VALIDATION_ERROR", "body.source", "required")
	e.do("POST", path, map[string]any{"name": "", "source": map[string]any{"file_id": "upl_x"}}, own).apiError(400, "VALIDATION_ERROR", "body.name", "minLength")
	body, h := multipartBody(t, "a.csv", []byte("a,b\n1,2\n"), nil)
	up := e.do("POST", path+"/upload", body, own, h).status(201).str("file_id")
	e.do("POST", path, map[string]any{"name": "x", "source": map[string]any{"file_id": up, "type": "parquet"}}, own).apiError(400, "VALIDATION_ERROR", "body.source.type", "mismatch")
	// The failed attempt did not use the upload up.
	e.do("POST", path, map[string]any{"name": "x", "source": map[string]any{"file_id": up}}, own).status(202)
	body, h = multipartBody(t, "b.csv", []byte("a,b\n1,2\n"), nil)
	up2 := e.do("POST", path+"/upload", body, own, h).status(201).str("file_id")
	e.do("POST", path, map[string]any{"name": "X", "source": map[string]any{"file_id": up2}}, own).apiError(409, "CONFLICT")
	_, analyst := e.member(e.orgID, "analyst")
	e.do("POST", path, map[string]any{"name": "y", "source": map[string]any{"file_id": up2}}, bearer(analyst)).authError(403, "PERMISSION_DENIED")
}

// Deleting a project or an organization takes its datasets' tables and files with it.
func TestDeletingProjectAndOrganizationDropsDatasetData(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	tables := func() (n int) {
		e.st.DB.Get(&n, `SELECT count(*) FROM pg_tables WHERE schemaname = $1`, e.orgID)
		return n
	}
	a := e.uploadAndCreate(e.ownerToken, "A", "a.csv", "x,y\n1,2\n")
	e.waitDataset(e.ownerToken, a)
	second := e.do("POST", "/api/v1/organizations/"+e.orgID+"/projects", map[string]any{"name": "Second"}, own).status(201).str("id")
	e.projectID, second = second, e.projectID
	b := e.uploadAndCreate(e.ownerToken, "B", "b.csv", "x,y\n1,2\n")
	e.waitDataset(e.ownerToken, b)
	if tables() != 2 {
		t.Fatalf("tables: %d", tables())
	}
	e.do("DELETE", "/api/v1/projects/"+second, nil, own).status(204)
	if tables() != 1 {
		t.Fatalf("tables after deleting the project: %d", tables())
	}
	e.do("DELETE", "/api/v1/organizations/"+e.orgID, map[string]any{"confirmation": "default"}, own).status(200)
	var schemas int
	e.st.DB.Get(&schemas, `SELECT count(*) FROM pg_namespace WHERE nspname = $1`, e.orgID)
	if schemas != 0 {
		t.Fatal("the organization's schema survived it")
	}
	if e.countOutboxRows(e.orgID, "dataset.deleted") != 2 {
		t.Fatal("dataset.deleted events missing")
	}
}

func TestDatasetFromJSONAndNDJSON(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	js := `[{"id": 1, "name": "Ann", "tags": ["a", "b"], "address": {"city": "Oslo"}, "score": 1},
	        {"id": 2, "name": "Bob", "tags": [], "score": 2.5, "joined": "2024-01-02"},
	        {"id": 3, "name": "Zoë \"Z\"", "address": null, "score": null, "joined": "2024-03-04"}]`
	id := e.uploadAndCreate(e.ownerToken, "People", "people.json", js)
	d := e.waitDataset(e.ownerToken, id)
	if d.str("status") != "active" || d.num("source.row_count") != 3 {
		t.Fatalf("json dataset: %s", d.Body)
	}
	types := map[string]string{}
	for i := 0; i < d.len("schema.tables.0.columns"); i++ {
		c := fmt.Sprintf("schema.tables.0.columns.%d.", i)
		types[d.str(c+"name")] = d.str(c + "type")
	}
	if _, ok := types["src_id"]; ok {
		t.Fatalf("the file's ids (unique integers) are the records' ids, not a src_id column: %v", types)
	}
	want := map[string]string{"name": "text", "tags": "text[]", "address": "jsonb", "score": "numeric", "joined": "date"}
	for k, v := range want {
		if types[k] != v {
			t.Fatalf("column %s: %s, want %s (all: %v)", k, types[k], v, types)
		}
	}
	p := e.do("GET", "/api/v1/projects/"+e.projectID+"/datasets/"+id+"/preview", nil, bearer(e.ownerToken)).status(200)
	if p.num("total_rows") != 3 || p.str("rows.2.1") != `Zoë "Z"` {
		t.Fatalf("preview: %s", p.Body)
	}

	nd := "{\"a\": 1, \"b\": true}\n{\"a\": 2, \"b\": false}\n"
	id2 := e.uploadAndCreate(e.ownerToken, "Lines", "lines.ndjson", nd)
	if d := e.waitDataset(e.ownerToken, id2); d.str("status") != "active" || d.num("source.row_count") != 2 {
		t.Fatalf("ndjson dataset: %s", d.Body)
	}
	// A JSON element that is not an object fails the load with its position, nothing loaded.
	id3 := e.uploadAndCreate(e.ownerToken, "Broken", "broken.json", `[{"a": 1}, 7, {"a": 2}]`)
	if d := e.waitDataset(e.ownerToken, id3); d.str("status") != "failed" || d.get("error") == nil {
		t.Fatalf("broken json: %s", d.Body)
	}
}
