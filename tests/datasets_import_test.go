package tests

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"dataplatform/cmd/dataplatform/config"
)

// Weather stations keyed by their ICAO code (text), deliberately not in key order.
const stationsCSV = "station_id,name,elevation_m,active,installed\n" +
	"KSEA,Seattle Tacoma,132,true,1948-01-01\n" +
	"EGLL,London Heathrow,25,true,1946-05-31\n" +
	"RJTT,Tokyo Haneda,6,false,1931-08-25\n" +
	"YSSY,Sydney Kingsford Smith,6,true,1920-01-09\n"

var stationFields = []string{"name", "elevation_m", "active", "installed"}

// stationModel is the test's own account of what a stations dataset holds: key → field →
// value as the record API answers it (JSON numbers, booleans, dates as strings, null).
type stationModel map[string]map[string]any

// stationRows parses a CSV the way the test reads it, independently of the service.
func stationRows(t testing.TB, text string) (header []string, rows []map[string]any) {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(text)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs[1:] {
		row := map[string]any{}
		for i, h := range recs[0] {
			v := rec[i]
			switch {
			case v == "":
				row[h] = nil
			case h == "elevation_m":
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					t.Fatal(err)
				}
				row[h] = f
			case h == "active":
				row[h] = v == "true"
			default:
				row[h] = v
			}
		}
		rows = append(rows, row)
	}
	return recs[0], rows
}

// apply computes what an import in mode leaves, from the model and the file.
func (m stationModel) apply(t testing.TB, mode, file string) (out stationModel, inserted, updated, unchanged, deleted int) {
	t.Helper()
	header, rows := stationRows(t, file)
	out = stationModel{}
	if mode != "replace" {
		for k, r := range m {
			out[k] = r
		}
	}
	for _, row := range rows {
		key := row["station_id"].(string)
		old, exists := m[key]
		rec := map[string]any{}
		for _, f := range stationFields {
			rec[f] = nil // replace: a column the file lacks is null (the test's columns have no defaults)
			if exists && mode != "replace" {
				rec[f] = old[f]
			}
		}
		for _, h := range header {
			if h != "station_id" {
				rec[h] = row[h]
			}
		}
		switch {
		case !exists:
			inserted++
		case fmt.Sprint(rec) == fmt.Sprint(old):
			unchanged++
		default:
			updated++
		}
		out[key] = rec
	}
	if mode == "replace" {
		for k := range m {
			if _, ok := out[k]; !ok {
				deleted++
			}
		}
	}
	return out, inserted, updated, unchanged, deleted
}

// records lists a dataset's live records by key.
func (e *env) stationRecords(id string) map[string]map[string]any {
	e.t.Helper()
	r := e.do("GET", "/api/v1/datasets/"+id+"/data?limit=1000&sort=station_id", nil, bearer(e.ownerToken)).status(200)
	out := map[string]map[string]any{}
	for _, x := range r.get("data").([]any) {
		rec := x.(map[string]any)
		out[rec["station_id"].(string)] = rec
	}
	return out
}

// same fails unless the dataset's records are exactly the model.
func (e *env) sameStations(id string, want stationModel) map[string]map[string]any {
	e.t.Helper()
	got := e.stationRecords(id)
	keys := func(m map[string]map[string]any) string {
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		return strings.Join(ks, ",")
	}
	if keys(got) != keys(map[string]map[string]any(want)) {
		e.t.Fatalf("records %s, want %s", keys(got), keys(map[string]map[string]any(want)))
	}
	for k, w := range want {
		for _, f := range stationFields {
			if fmt.Sprint(got[k][f]) != fmt.Sprint(w[f]) {
				e.t.Fatalf("record %s field %s: %v, want %v", k, f, got[k][f], w[f])
			}
		}
	}
	return got
}

// uploadFile uploads a file of the project and answers its file_id.
func (e *env) uploadFile(tok, filename, content string) string {
	e.t.Helper()
	body, h := multipartBody(e.t, filename, []byte(content), nil)
	return e.do("POST", "/api/v1/projects/"+e.projectID+"/datasets/upload", body, bearer(tok), h).status(201).str("file_id")
}

// importInto uploads content and imports it into dataset id with the body's settings.
func (e *env) importInto(tok, id, filename, content string, body map[string]any) *resp {
	e.t.Helper()
	body["file_id"] = e.uploadFile(tok, filename, content)
	return e.do("POST", "/api/v1/projects/"+e.projectID+"/datasets/"+id+"/import", body, bearer(tok))
}

// imported runs an import to its end and answers the dataset after it.
func (e *env) imported(id, filename, content string, body map[string]any) *resp {
	e.t.Helper()
	r := e.importInto(e.ownerToken, id, filename, content, body).status(202)
	if r.Header.Get("X-RateLimit-Limit") != "50" && !strings.Contains(e.cfg.RateLimits, "datasets=") { // the category of dataset creation
		e.t.Fatalf("import rate limit: %v", r.Header)
	}
	if r.str("id") != id || r.str("status") != "processing" || r.Header.Get("Location") != "/api/v1/jobs/"+r.str("job_id") {
		e.t.Fatalf("import: %s %v", r.Body, r.Header)
	}
	e.waitJobEnd(r.str("job_id"))
	return e.waitDataset(e.ownerToken, id)
}

// waitJobEnd waits for a job to succeed or fail.
func (e *env) waitJobEnd(id string) string {
	e.t.Helper()
	for i := 0; i < 1200; i++ {
		j := e.do("GET", "/api/v1/jobs/"+id, nil, bearer(e.ownerToken)).status(200)
		if s := j.str("status"); s == "succeeded" || s == "failed" {
			return s
		}
		time.Sleep(50 * time.Millisecond)
	}
	// What the database was doing, for the failure's reader.
	var activity []struct {
		State, Wait, Query string
	}
	e.st.DB.Select(&activity, `SELECT coalesce(state, '') AS state, coalesce(wait_event_type || ':' || wait_event, '') AS wait, left(query, 160) AS query
		FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND state <> 'idle'`)
	j := e.do("GET", "/api/v1/jobs/"+id, nil, bearer(e.ownerToken))
	e.t.Fatalf("job %s did not end: %s\n%+v", id, j.Body, activity)
	return ""
}

// lastOutbox is the payload of the organization's newest outbox event of a kind.
func (e *env) lastOutbox(event string) map[string]any {
	e.t.Helper()
	var b []byte
	if err := e.st.DB.Get(&b, `SELECT payload FROM platform.outbox WHERE organization_id = $1 AND event_type = $2 ORDER BY id DESC LIMIT 1`,
		e.orgID, event); err != nil {
		e.t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		e.t.Fatal(err)
	}
	return m
}

func (e *env) stations() (string, stationModel) {
	e.t.Helper()
	id := e.uploadAndCreate(e.ownerToken, "stations", "stations.csv", stationsCSV)
	if d := e.waitDataset(e.ownerToken, id); d.str("status") != "active" {
		e.t.Fatalf("stations: %s", d.Body)
	}
	s := e.do("GET", "/api/v1/projects/"+e.projectID+"/datasets/"+id+"/schema", nil, bearer(e.ownerToken)).status(200)
	for i := 0; i < s.len("tables.0.columns"); i++ {
		c := fmt.Sprintf("tables.0.columns.%d.", i)
		if s.str(c+"name") == "station_id" && s.get(c+"is_primary_key") != true {
			e.t.Fatalf("station_id is not the key: %s", s.Body)
		}
	}
	want, _, _, _, _ := stationModel{}.apply(e.t, "append", stationsCSV)
	e.sameStations(id, want)
	return id, want
}

func TestImportModes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) { c.RateLimits = "default=100000-M" }) // jobs and datasets are polled
	own := bearer(e.ownerToken)
	id, want := e.stations()
	dsPath := "/api/v1/projects/" + e.projectID + "/datasets/" + id
	before := e.do("GET", dsPath, nil, own).status(200)
	desc := e.do("GET", "/api/v1/datasets/"+id+"/openapi.json", nil, own).status(200)
	e.do("GET", "/api/v1/datasets/"+id+"/data/EGLL", nil, own).status(200)
	before0 := e.stationRecords(id)
	stream, stop := e.openStream("/api/v1/datasets/"+id+"/data/stream", own)
	defer stop()
	outbox := func() [3]int {
		return [3]int{e.countOutboxRows(e.orgID, "dataset.processing"), e.countOutboxRows(e.orgID, "dataset.ready"), e.countOutboxRows(e.orgID, "dataset.failed")}
	}
	ob := outbox()
	audits := e.countAuditRows(e.orgID, "dataset.import")

	// upsert: a changed record, an unchanged one, a new one (no active/installed: null), the
	// others untouched; one event with the counts on the stream.
	upsert := "station_id,elevation_m,name\n" +
		"EGLL,26,London Heathrow\n" +
		"ZBAA,35,Beijing Capital\n" +
		"KSEA,132,Seattle Tacoma\n"
	var ins, upd, unch, del int
	want, ins, upd, unch, del = want.apply(t, "upsert", upsert)
	d := e.imported(id, "upsert.csv", upsert, map[string]any{"mode": "upsert"})
	if d.str("status") != "active" || d.get("error") != nil || d.num("source.row_count") != len(want) {
		t.Fatalf("after upsert: %s", d.Body)
	}
	got := e.sameStations(id, want)
	if got["EGLL"]["version"].(float64) != 2 || got["KSEA"]["version"].(float64) != 1 || got["RJTT"]["version"].(float64) != 1 {
		t.Fatalf("versions after upsert: %v", got)
	}
	ev := next(t, stream, true)
	if ev.name != "dataset.imported" || ev.data["mode"] != "upsert" || ev.data["inserted"] != float64(ins) || ev.data["updated"] != float64(upd) ||
		ev.data["unchanged"] != float64(unch) || ev.data["deleted"] != float64(del) {
		t.Fatalf("stream after upsert: %+v (want %d %d %d %d)", ev, ins, upd, unch, del)
	}
	if p := e.lastOutbox("dataset.ready")["import"].(map[string]any); p["mode"] != "upsert" || p["inserted"] != float64(ins) || p["updated"] != float64(upd) {
		t.Fatalf("dataset.ready of the upsert: %v", p)
	}
	if o := outbox(); o != [3]int{ob[0] + 1, ob[1] + 1, ob[2]} {
		t.Fatalf("outbox %v after %v", o, ob)
	}

	// append: each new record is a record.created on the stream.
	appendCSV := "station_id,name,elevation_m,active,installed\n" +
		"LFPG,Paris Charles de Gaulle,119,true,1974-03-08\n" +
		"EDDF,Frankfurt,111,true,1936-07-08\n"
	want, _, _, _, _ = want.apply(t, "append", appendCSV)
	e.imported(id, "append.csv", appendCSV, map[string]any{"mode": "append"})
	e.sameStations(id, want)
	for _, key := range []string{"LFPG", "EDDF"} {
		if ev := next(t, stream, true); ev.name != "record.created" || ev.data["station_id"] != key {
			t.Fatalf("stream after append: %+v, want %s created", ev, key)
		}
	}

	// replace: a soft-deleted record goes for good too; kept keys keep their record; the
	// column the file lacks (installed) is null everywhere.
	e.do("DELETE", "/api/v1/datasets/"+id+"/data/YSSY", nil, own).status(200)
	if ev := next(t, stream, true); ev.name != "record.deleted" {
		t.Fatalf("stream: %+v", ev)
	}
	delete(want, "YSSY")
	replace := "station_id,name,elevation_m,active\n" +
		"RJTT,Tokyo Haneda,6,false\n" +
		"NZAA,Auckland,7,true\n" +
		"EGLL,London Heathrow,25,true\n"
	want, ins, upd, unch, del = want.apply(t, "replace", replace)
	e.imported(id, "replace.csv", replace, map[string]any{"mode": "replace"})
	got = e.sameStations(id, want)
	if got["EGLL"]["version"].(float64) != 3 || got["RJTT"]["version"].(float64) != 2 || got["NZAA"]["version"].(float64) != 1 {
		t.Fatalf("versions after replace: %v", got)
	}
	if got["RJTT"]["created_at"] != before0["RJTT"]["created_at"] {
		t.Fatalf("RJTT was recreated: %v → %v", before0["RJTT"], got["RJTT"])
	}
	if n := e.countRows(`SELECT count(*) FROM "` + e.orgID + `"."` + id + `"`); n != len(want) {
		t.Fatalf("the table has %d rows (soft-deleted ones included), want %d", n, len(want))
	}
	ev = next(t, stream, true)
	if ev.name != "dataset.imported" || ev.data["mode"] != "replace" || ev.data["inserted"] != float64(ins) || ev.data["updated"] != float64(upd) ||
		ev.data["unchanged"] != float64(unch) || ev.data["deleted"] != float64(del) {
		t.Fatalf("stream after replace: %+v (want %d %d %d %d)", ev, ins, upd, unch, del)
	}
	// Replacing with the same file changes nothing, and says so.
	e.imported(id, "replace.csv", replace, map[string]any{"mode": "replace"})
	if ev := next(t, stream, true); ev.name != "dataset.imported" || ev.data["unchanged"] != float64(len(want)) || ev.data["updated"] != float64(0) {
		t.Fatalf("stream after a replace with the same rows: %+v", ev)
	}
	if g := e.sameStations(id, want); g["EGLL"]["version"].(float64) != 3 {
		t.Fatalf("an unchanged record changed: %v", g["EGLL"])
	}

	// The dataset kept its id, addresses and description; the record URLs of kept keys work.
	after := e.do("GET", dsPath, nil, own).status(200)
	for _, l := range []string{"self", "records", "openapi_json", "docs", "redoc", "sdk.go"} {
		if after.str("_links."+l) != before.str("_links."+l) {
			t.Fatalf("link %s changed: %s → %s", l, before.str("_links."+l), after.str("_links."+l))
		}
	}
	if after.str("id") != id || after.str("created_at") != before.str("created_at") {
		t.Fatalf("dataset changed identity: %s", after.Body)
	}
	e.do("GET", "/api/v1/datasets/"+id+"/data/EGLL", nil, own).status(200)
	e.do("GET", "/api/v1/datasets/"+id+"/data/KSEA", nil, own).apiError(404, "RECORD_NOT_FOUND")
	if d2 := e.do("GET", "/api/v1/datasets/"+id+"/openapi.json", nil, own).status(200); d2.str("info.title") != desc.str("info.title") {
		t.Fatalf("description: %s", d2.Body)
	}
	if n := e.countAuditRows(e.orgID, "dataset.import"); n != audits+4 {
		t.Fatalf("audit rows: %d after %d", n, audits)
	}
	if o := outbox(); o != [3]int{ob[0] + 4, ob[1] + 4, ob[2]} {
		t.Fatalf("outbox %v after %v", o, ob)
	}
}

// TestImportFailures: each failure changes nothing, says why, and the dataset still answers.
func TestImportFailures(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) { c.RateLimits = "default=100000-M,uploads=100-H,datasets=100-H" })
	own := bearer(e.ownerToken)
	id, want := e.stations()
	dsPath := "/api/v1/projects/" + e.projectID + "/datasets/" + id
	importPath := dsPath + "/import"
	header := "station_id,name,elevation_m,active,installed\n"
	unchanged := func() {
		t.Helper()
		d := e.do("GET", dsPath, nil, own).status(200)
		if d.str("status") != "active" || d.num("source.row_count") != len(want) {
			t.Fatalf("dataset after a refused import: %s", d.Body)
		}
		e.sameStations(id, want)
	}
	failed := func(mode, file string, wantErr ...string) {
		t.Helper()
		failedBefore := e.countOutboxRows(e.orgID, "dataset.failed")
		d := e.imported(id, "bad.csv", file, map[string]any{"mode": mode})
		msg, _ := d.get("error").(string)
		t.Logf("%s refused: %s", mode, msg)
		for _, w := range wantErr {
			if !strings.Contains(msg, w) {
				t.Fatalf("%s import error %q, want it to say %q", mode, msg, w)
			}
		}
		if !strings.Contains(msg, "import") {
			t.Fatalf("error %q does not say the import failed", msg)
		}
		if e.countOutboxRows(e.orgID, "dataset.failed") != failedBefore+1 {
			t.Fatal("no dataset.failed event")
		}
		if p := e.lastOutbox("dataset.failed"); p["import"].(map[string]any)["mode"] != mode || p["dataset_id"] != id {
			t.Fatalf("dataset.failed: %v", p)
		}
		unchanged()
	}

	// Rows the dataset cannot take: the whole import fails with the row and the column.
	failed("upsert", header+"EGLL,London,26,true,1946-05-31\nRJTT,Tokyo,high,false,1931-08-25\n", "line 3", "elevation_m")
	failed("replace", header+"EGLL,London,26,true,1946-05-31\nEGLL,London again,27,true,1946-05-31\n", "data row 2", "station_id", `"EGLL"`)
	failed("append", header+"ZBAA,Beijing,35,true,1958-01-01\nKSEA,Seattle,132,true,1948-01-01\n", "data row 2", "station_id", `"KSEA"`)
	failed("append", header+",No key,1,true,2000-01-01\n", "station_id")

	// The header is checked before anything is queued.
	e.do("PUT", "/api/v1/datasets/"+id+"/schema", map[string]any{"changes": []any{
		map[string]any{"op": "alter_column", "column": "name", "required": true}}}, own).status(200)
	r := e.importInto(e.ownerToken, id, "noname.csv", "station_id,elevation_m\nEGLL,26\n", map[string]any{"mode": "replace"})
	r.apiError(400, "VALIDATION_ERROR", "file.name", "missing_required")
	r = e.importInto(e.ownerToken, id, "wind.csv", header[:len(header)-1]+",Wind KTS\nEGLL,London Heathrow,25,true,1946-05-31,12\n", map[string]any{"mode": "upsert"})
	r.apiError(400, "VALIDATION_ERROR", "file.Wind KTS", "unknown_column")
	unchanged()

	// add_columns adds it, as a schema change with a new schema version.
	schema := func() *resp { return e.do("GET", dsPath+"/schema", nil, own).status(200) }
	v := schema().num("schema_version")
	d := e.imported(id, "wind.csv", header[:len(header)-1]+",Wind KTS\nEGLL,London Heathrow,25,true,1946-05-31,12\nZBAA,Beijing,35,true,1958-01-01,7\n",
		map[string]any{"mode": "upsert", "add_columns": true})
	if d.str("status") != "active" || d.get("error") != nil {
		t.Fatalf("add_columns: %s", d.Body)
	}
	s := schema()
	if s.num("schema_version") != v+1 {
		t.Fatalf("schema_version %d after %d", s.num("schema_version"), v)
	}
	found := false
	for i := 0; i < s.len("tables.0.columns"); i++ {
		c := fmt.Sprintf("tables.0.columns.%d.", i)
		if s.str(c+"name") == "wind_kts" {
			found = s.str(c+"type") == "integer" && s.str(c+"original_name") == "Wind KTS"
		}
	}
	if !found {
		t.Fatalf("no wind_kts column: %s", s.Body)
	}
	recs := e.stationRecords(id)
	if recs["EGLL"]["wind_kts"] != float64(12) || recs["ZBAA"]["wind_kts"] != float64(7) || recs["KSEA"]["wind_kts"] != nil {
		t.Fatalf("wind_kts: %v", recs)
	}
	// upsert may leave out a required column for the records it updates, not for new ones.
	r = e.importInto(e.ownerToken, id, "elev.csv", "station_id,elevation_m\nEGLL,27\nNZAA,7\n", map[string]any{"mode": "upsert"}).status(202)
	e.waitJobEnd(r.str("job_id"))
	if d := e.waitDataset(e.ownerToken, id); !strings.Contains(fmt.Sprint(d.get("error")), "data row 2") ||
		!strings.Contains(fmt.Sprint(d.get("error")), "name") {
		t.Fatalf("upsert creating a record without its required column: %s", d.Body)
	}

	// file_id: unknown, then used twice.
	e.do("POST", importPath, map[string]any{"file_id": "upl_nope", "mode": "append"}, own).apiError(400, "VALIDATION_ERROR", "body.file_id", "not_found")
	fid := e.uploadFile(e.ownerToken, "a.csv", header+"LFPG,Paris,119,true,1974-03-08\n")
	e.do("POST", importPath, map[string]any{"file_id": fid, "mode": "append"}, own).status(202)
	e.waitDataset(e.ownerToken, id)
	e.do("POST", importPath, map[string]any{"file_id": fid, "mode": "append"}, own).apiError(400, "VALIDATION_ERROR", "body.file_id", "claimed")
	e.do("POST", "/api/v1/projects/"+e.projectID+"/datasets", map[string]any{"name": "again", "source": map[string]any{"file_id": fid}}, own).
		apiError(400, "VALIDATION_ERROR", "body.source.file_id", "not_found")

	// Without datasets:write: a viewer, a key that may only read.
	_, viewer := e.member(e.orgID, "viewer")
	fid = e.uploadFile(e.ownerToken, "b.csv", header+"LEMD,Madrid Barajas,610,true,1931-04-22\n")
	e.do("POST", importPath, map[string]any{"file_id": fid, "mode": "upsert"}, bearer(viewer)).authError(403, "PERMISSION_DENIED")
	key := e.do("POST", "/api/v1/api-keys", map[string]any{"name": "reader", "permissions": []string{"datasets:list", "datasets:read"}}, own).status(201).str("key")
	e.do("POST", importPath, map[string]any{"file_id": fid, "mode": "upsert"}, apiKey(key)).authError(403, "PERMISSION_DENIED")
	// The refused requests did not claim the upload.
	e.do("POST", importPath, map[string]any{"file_id": fid, "mode": "upsert"}, own).status(202)
	if d := e.waitDataset(e.ownerToken, id); d.get("error") != nil || e.stationRecords(id)["LEMD"] == nil {
		t.Fatalf("import after refusals: %s", d.Body)
	}

	// JSON goes by key: an unknown key is refused up front, the others fit as in CSV.
	r = e.importInto(e.ownerToken, id, "wx.json", `[{"station_id": "EGLL", "elevation_m": 24, "gusts": true}]`, map[string]any{"mode": "upsert"})
	r.apiError(400, "VALIDATION_ERROR", "file.gusts", "unknown_column")
	d = e.imported(id, "wx.ndjson", `{"station_id": "EGLL", "elevation_m": 24}`+"\n"+`{"station_id": "KSEA", "elevation_m": 133}`+"\n", map[string]any{"mode": "upsert"})
	if recs := e.stationRecords(id); d.get("error") != nil || recs["EGLL"]["elevation_m"] != float64(24) || recs["KSEA"]["elevation_m"] != float64(133) ||
		recs["KSEA"]["name"] != "Seattle Tacoma" {
		t.Fatalf("JSON upsert: %s %v", d.Body, recs)
	}

	// upsert needs a key: readings have none (the generated id).
	rid := e.uploadAndCreate(e.ownerToken, "readings", "readings.csv", "station,temp_c\nEGLL,11.5\nEGLL,12.0\nKSEA,9.25\n")
	e.waitDataset(e.ownerToken, rid)
	r = e.importInto(e.ownerToken, rid, "more.csv", "station,temp_c\nEGLL,13\n", map[string]any{"mode": "upsert"})
	r.apiError(400, "VALIDATION_ERROR", "body.mode", "no_key")
	// append and replace work without one; an export's system fields are ignored.
	e.imported(rid, "more.csv", "id,station,temp_c,created_at\n1,RJTT,20.5,2024-01-01T00:00:00Z\n", map[string]any{"mode": "replace"})
	if rs := e.do("GET", "/api/v1/datasets/"+rid+"/data", nil, own).status(200); rs.len("data") != 1 || rs.get("data.0.station") != "RJTT" {
		t.Fatalf("readings after replace: %s", rs.Body)
	}
}

// TestImportWhileRunning: while an import waits for the table (a writer holds it here, as an
// index build would), the dataset is processing: its records are read as they were, writes
// and a second import are 409.
func TestImportWhileRunning(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) { c.RateLimits = "default=100000-M" })
	own := bearer(e.ownerToken)
	id, want := e.stations()
	tx, err := e.st.DB.Beginx()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`LOCK TABLE "` + e.orgID + `"."` + id + `" IN ROW EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	r := e.importInto(e.ownerToken, id, "r.csv", "station_id,name,elevation_m,active,installed\nNZAA,Auckland,7,true,1928-01-01\n",
		map[string]any{"mode": "replace"}).status(202)
	jobID := r.str("job_id")
	e.eventually(func() bool { // the import waits for the table
		var msg string
		e.st.DB.Get(&msg, `SELECT coalesce(progress->>'message', '') FROM platform.jobs WHERE id = $1`, jobID)
		return strings.HasPrefix(msg, "waiting for the dataset's table")
	})
	d := e.do("GET", "/api/v1/projects/"+e.projectID+"/datasets/"+id, nil, own).status(200)
	if d.str("status") != "processing" || d.str("job_id") != jobID {
		t.Fatalf("during the import: %s", d.Body)
	}
	e.sameStations(id, want)
	e.do("GET", "/api/v1/projects/"+e.projectID+"/datasets/"+id+"/preview", nil, own).status(200)
	e.importInto(e.ownerToken, id, "r2.csv", "station_id,name\nNZAA,Auckland\n", map[string]any{"mode": "upsert"}).apiError(409, "CONFLICT")
	e.do("POST", "/api/v1/datasets/"+id+"/data", map[string]any{"station_id": "LFPG", "name": "Paris"}, own).apiError(409, "DATASET_NOT_READY")
	e.do("PATCH", "/api/v1/datasets/"+id+"/data/EGLL", map[string]any{"name": "Heathrow"}, own).apiError(409, "DATASET_NOT_READY")
	tx.Rollback()
	if s := e.waitJobEnd(jobID); s != "succeeded" {
		t.Fatalf("import job %s", s)
	}
	want, _, _, _, _ = want.apply(t, "replace", "station_id,name,elevation_m,active,installed\nNZAA,Auckland,7,true,1928-01-01\n")
	e.waitDataset(e.ownerToken, id)
	e.sameStations(id, want)
}

// TestImportLarge: an upsert and a replace of more than datasets.RebuildRows rows build the
// table anew and swap it in; the result is the same as in place, saved views keep working.
func TestImportLarge(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) { c.RateLimits = "default=100000-M" })
	own := bearer(e.ownerToken)
	const n = 12_000
	line := func(i, elev int) string {
		return fmt.Sprintf("S%05d,Station %d,%d,%t,19%02d-01-%02d\n", i, i, elev, i%3 == 0, i%100, 1+i%28)
	}
	// Keys in a scrambled order: i*7919 mod n walks all of them.
	var b strings.Builder
	b.WriteString("station_id,name,elevation_m,active,installed\n")
	for j := 0; j < n; j++ {
		i := j * 7919 % n
		b.WriteString(line(i, i%500))
	}
	first := b.String()
	id := e.uploadAndCreate(e.ownerToken, "stations", "stations.csv", first)
	if d := e.waitDataset(e.ownerToken, id); d.str("status") != "active" {
		t.Fatalf("stations: %s", d.Body)
	}
	want, _, _, _, _ := stationModel{}.apply(t, "append", first)
	table := `"` + e.orgID + `"."` + id + `"`
	type row struct {
		Key             string `db:"station_id"`
		Name, Installed *string
		Elevation       *float64 `db:"elevation_m"`
		Active          *bool
		Version         int
		Deleted         bool
	}
	check := func(want stationModel) map[string]row {
		t.Helper()
		var rows []row
		if err := e.st.DB.Select(&rows, `SELECT station_id, name, elevation_m, active, installed::text AS installed, version, deleted_at IS NOT NULL AS deleted FROM `+table); err != nil {
			t.Fatal(err)
		}
		got := map[string]row{}
		for _, r := range rows {
			if r.Deleted {
				continue
			}
			got[r.Key] = r
		}
		if len(got) != len(want) {
			t.Fatalf("%d records, want %d", len(got), len(want))
		}
		val := func(p any) any {
			switch x := p.(type) {
			case *string:
				if x != nil {
					return *x
				}
			case *float64:
				if x != nil {
					return *x
				}
			case *bool:
				if x != nil {
					return *x
				}
			}
			return nil
		}
		for k, w := range want {
			r, ok := got[k]
			if !ok {
				t.Fatalf("no record %s", k)
			}
			g := map[string]any{"name": val(r.Name), "elevation_m": val(r.Elevation), "active": val(r.Active), "installed": val(r.Installed)}
			if fmt.Sprint(g) != fmt.Sprint(w) {
				t.Fatalf("record %s: %v, want %v", k, g, w)
			}
		}
		return got
	}
	check(want)
	e.createView(e.ownerToken, map[string]any{"name": "high_stations", "definition": map[string]any{"sql": "SELECT station_id, elevation_m FROM stations WHERE elevation_m >= 400"}}).status(201)
	stream, stop := e.openStream("/api/v1/datasets/"+id+"/data/stream", own)
	defer stop()
	e.do("DELETE", "/api/v1/datasets/"+id+"/data/S00003", nil, own).status(200)
	next(t, stream, true)
	delete(want, "S00003")

	// upsert, without the installed column (records keep theirs, new ones have none): the
	// first half changes, a quarter is as it was (S00003, soft-deleted, among them: restored),
	// a quarter is new.
	b.Reset()
	b.WriteString("station_id,name,elevation_m,active\n")
	short := func(i, elev int) string { l := line(i, elev); return l[:strings.LastIndexByte(l, ',')] + "\n" }
	for i := 0; i < n; i++ {
		switch {
		case i < n/2:
			b.WriteString(short(i, i%500+1))
		case i < 3*n/4:
			b.WriteString(short(i, i%500))
		default:
			b.WriteString(short(i+n, 7))
		}
	}
	upsert := b.String()
	var ins, upd, unch, del int
	want, ins, upd, unch, del = want.apply(t, "upsert", upsert)
	e.imported(id, "upsert.csv", upsert, map[string]any{"mode": "upsert"})
	got := check(want)
	if got["S00001"].Version != 2 || got["S09000"].Version != 1 || got["S00003"].Version != 3 || got[fmt.Sprintf("S%05d", n+n-1)].Version != 1 {
		t.Fatalf("versions: %+v %+v %+v", got["S00001"], got["S09000"], got["S00003"])
	}
	ev := next(t, stream, true)
	if ev.name != "dataset.imported" || ev.data["inserted"] != float64(ins) || ev.data["updated"] != float64(upd) || ev.data["unchanged"] != float64(unch) || ev.data["deleted"] != float64(del) {
		t.Fatalf("upsert event %+v, want %d %d %d %d", ev, ins, upd, unch, del)
	}
	// The rebuilt table is the dataset's: records are written, keys generated, the stream goes on.
	e.do("PATCH", "/api/v1/datasets/"+id+"/data/S00002", map[string]any{"name": "Renamed"}, own).status(200)
	if ev := next(t, stream, true); ev.name != "record.updated" || ev.data["id"] != "S00002" {
		t.Fatalf("after the swap: %+v", ev)
	}
	want["S00002"]["name"] = "Renamed"

	// replace: a third of the keys stay (half of them changed), the rest is new.
	b.Reset()
	b.WriteString("station_id,name,elevation_m,active,installed\n")
	for i := 0; i < n; i++ {
		switch {
		case i%3 == 0:
			b.WriteString(line(i, i%500+2))
		case i%3 == 1 && i < n/2:
			b.WriteString(line(i, i%500+1))
		default:
			b.WriteString(line(i+3*n, 9))
		}
	}
	replace := b.String()
	want, ins, upd, unch, del = want.apply(t, "replace", replace)
	e.imported(id, "replace.csv", replace, map[string]any{"mode": "replace"})
	check(want)
	ev = next(t, stream, true)
	if ev.name != "dataset.imported" || ev.data["inserted"] != float64(ins) || ev.data["updated"] != float64(upd) || ev.data["unchanged"] != float64(unch) || ev.data["deleted"] != float64(del) {
		t.Fatalf("replace event %+v, want %d %d %d %d", ev, ins, upd, unch, del)
	}
	if n := e.countRows(`SELECT count(*) FROM ` + table); n != len(want) {
		t.Fatalf("%d rows in the table, want %d", n, len(want))
	}
	// The same file again changes nothing: the table is left as it is.
	oid := e.countRows(`SELECT '` + table + `'::regclass::oid::int`)
	e.imported(id, "replace.csv", replace, map[string]any{"mode": "replace"})
	got = check(want)
	if ev := next(t, stream, true); ev.name != "dataset.imported" || ev.data["unchanged"] != float64(n) || ev.data["updated"] != float64(0) || ev.data["deleted"] != float64(0) {
		t.Fatalf("replace with the same file: %+v", ev)
	}
	if e.countRows(`SELECT '`+table+`'::regclass::oid::int`) != oid || got["S00000"].Version != 3 {
		t.Fatalf("the same file rebuilt the table (version of S00000: %d)", got["S00000"].Version)
	}
	// ... unless a row is there twice, which fails it however equal to its record.
	dup := replace + replace[strings.IndexByte(replace, '\n')+1:][:strings.IndexByte(replace[strings.IndexByte(replace, '\n')+1:], '\n')+1]
	if d := e.imported(id, "dup.csv", dup, map[string]any{"mode": "upsert"}); !strings.Contains(fmt.Sprint(d.get("error")), fmt.Sprintf("data row %d, column station_id", n+1)) {
		t.Fatalf("a key twice: %s", d.Body)
	}
	check(want)
	high := 0
	for _, w := range want {
		if w["elevation_m"].(float64) >= 400 {
			high++
		}
	}
	v := e.do("GET", e.viewsPath(), nil, own).status(200)
	if v.str("views.0.status") != "active" {
		t.Fatalf("view after the swap: %s", v.Body)
	}
	if r := e.execute(map[string]any{"query": "SELECT count(*) AS n FROM high_stations"}, e.ownerToken).status(200); rows(r) != fmt.Sprint(high) {
		t.Fatalf("view rows after the swap: %s, want %d", rows(r), high)
	}
	// The key index is there again, under its name; the search index job follows.
	if n := e.countRows(`SELECT count(*) FROM pg_indexes WHERE schemaname = '` + e.orgID + `' AND tablename = '` + id + `' AND indexdef LIKE '%UNIQUE%(station_id)'`); n != 1 {
		t.Fatalf("key index: %d", n)
	}
	e.do("POST", "/api/v1/datasets/"+id+"/data", map[string]any{"station_id": "ZZZZZ", "name": "New"}, own).status(201)
	e.do("POST", "/api/v1/datasets/"+id+"/data", map[string]any{"station_id": "ZZZZZ", "name": "Again"}, own).status(409)

	// A dataset without a key of its own: replace rebuilds it with the file's rows, whose
	// generated ids continue after the old ones.
	readings := func(from int) string {
		var b strings.Builder
		b.WriteString("station,temp_c\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "S%05d,%d.5\n", (from+i)%n, i%40)
		}
		return b.String()
	}
	rid := e.uploadAndCreate(e.ownerToken, "readings", "readings.csv", readings(0))
	e.waitDataset(e.ownerToken, rid)
	rt := `"` + e.orgID + `"."` + rid + `"`
	oldMax := e.countRows(`SELECT max(id) FROM ` + rt)
	e.imported(rid, "readings2.csv", readings(5), map[string]any{"mode": "replace"})
	if c, lo := e.countRows(`SELECT count(*) FROM `+rt), e.countRows(`SELECT min(id) FROM `+rt); c != n || lo <= oldMax {
		t.Fatalf("readings after replace: %d rows, ids from %d (old ids up to %d)", c, lo, oldMax)
	}
	e.do("POST", "/api/v1/datasets/"+rid+"/data", map[string]any{"station": "X", "temp_c": 1}, own).status(201)

	// An integer key (the file's id): rows of an upsert without one get the next keys.
	var ids strings.Builder
	ids.WriteString("id,gauge\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&ids, "%d,%d\n", i, i%7)
	}
	gid := e.uploadAndCreate(e.ownerToken, "gauges", "gauges.csv", ids.String())
	e.waitDataset(e.ownerToken, gid)
	ids.Reset()
	ids.WriteString("id,gauge\n")
	for i := 1; i <= n; i++ {
		if i%1000 == 0 {
			fmt.Fprintf(&ids, ",%d\n", 100+i) // no id: a new record
		} else {
			fmt.Fprintf(&ids, "%d,%d\n", i, i%7+1)
		}
	}
	e.imported(gid, "gauges2.csv", ids.String(), map[string]any{"mode": "upsert"})
	gt := `"` + e.orgID + `"."` + gid + `"`
	if c, hi, news := e.countRows(`SELECT count(*) FROM `+gt), e.countRows(`SELECT max(id) FROM `+gt),
		e.countRows(`SELECT count(*) FROM `+gt+` WHERE id > `+fmt.Sprint(n)+` AND gauge > 100`); c != n+n/1000 || hi != n+n/1000 || news != n/1000 {
		t.Fatalf("gauges after upsert: %d rows, largest id %d, %d new", c, hi, news)
	}
	if r := e.do("POST", "/api/v1/datasets/"+gid+"/data", map[string]any{"gauge": 1}, own).status(201); r.num("id") != n+n/1000+1 {
		t.Fatalf("next key: %s", r.Body)
	}
}
