package tests

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"dataplatform/cmd/dataplatform/config"
)

// multipartBody builds a form with a file part and optional fields.
func multipartBody(t testing.TB, filename string, content []byte, fields map[string]string) (string, header) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for k, v := range fields {
		w.WriteField(k, v)
	}
	if filename != "" {
		fw, err := w.CreateFormFile("file", filename)
		if err != nil {
			t.Fatal(err)
		}
		fw.Write(content)
	}
	w.Close()
	return b.String(), header{"Content-Type": w.FormDataContentType()}
}

func TestUploads(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := newEnv(t, func(c *config.Config) { c.DataDir = dir; c.MaxUploadBytes = 64 << 10; c.RateLimits = "uploads=100-H" })
	own := bearer(e.ownerToken)
	path := "/api/v1/projects/" + e.projectID + "/datasets/upload"

	csv := []byte("id,name,amount\n1,Ann,10.5\n2,Bob,7\n")
	body, h := multipartBody(t, "sales.csv", csv, map[string]string{"name": "Sales", "description": "2024"})
	up := e.do("POST", path, body, own, h).status(201)
	if up.str("type") != "csv" || up.num("size") != len(csv) || up.str("filename") != "sales.csv" || !strings.HasPrefix(up.str("file_id"), "upl_") {
		t.Fatalf("upload: %s", up.Body)
	}
	stored, err := os.ReadFile(filepath.Join(dir, "uploads", e.orgID, up.str("file_id")))
	if err != nil || !bytes.Equal(stored, csv) {
		t.Fatalf("stored file: %v %q", err, stored)
	}
	g := e.do("GET", up.str("upload_url"), nil, own).status(200)
	if g.str("name") != "Sales" || g.get("claimed") != false {
		t.Fatalf("get upload: %s", g.Body)
	}

	// Format by content: a PNG called .csv, a PDF, a zip are refused with what they are.
	for name, content := range map[string]string{"photo.csv": "\x89PNG\r\n\x1a\n\x00", "doc.pdf": "%PDF-1.4\n", "book.xlsx": "PK\x03\x04\x14"} {
		body, h := multipartBody(t, name, []byte(content), nil)
		r := e.do("POST", path, body, own, h).apiError(400, "INVALID_FILE_FORMAT")
		if r.get("error.details.provided_format") == nil || r.len("error.details.supported_formats") != 3 {
			t.Fatalf("%s: %s", name, r.Body)
		}
	}
	for name, content := range map[string]string{"a.json": `[{"a":1}]`, "a.ndjson": "{\"a\":1}\n{\"a\":2}\n", "a.parquet": "PAR1\x00\x00"} {
		body, h := multipartBody(t, name, []byte(content), nil)
		e.do("POST", path, body, own, h).status(201)
	}

	// Too large: refused while streaming, and from the declared length before reading.
	big := bytes.Repeat([]byte("1,2,3\n"), 12000)
	body, h = multipartBody(t, "big.csv", big, nil)
	r := e.do("POST", path, body, own, h).apiError(413, "FILE_TOO_LARGE")
	if r.num("error.details.max_size") != 64<<10 || r.str("error.details.max_size_human") != "64 KB" {
		t.Fatalf("413: %s", r.Body)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "uploads", e.orgID))
	if len(entries) != 4 {
		t.Fatalf("files left behind by refused uploads: %d", len(entries))
	}

	// Form mistakes.
	body, h = multipartBody(t, "", nil, map[string]string{"name": "x"})
	e.do("POST", path, body, own, h).apiError(400, "VALIDATION_ERROR", "body.file", "required")
	body, h = multipartBody(t, "a.csv", csv, map[string]string{"colour": "red"})
	e.do("POST", path, body, own, h).apiError(400, "VALIDATION_ERROR", "body.colour", "unknown_field")
	e.do("POST", path, `{"file":"x"}`, own).apiError(400, "VALIDATION_ERROR", "header.Content-Type", "content_type")
	e.do("POST", path, "--x\r\nbroken", own, header{"Content-Type": "multipart/form-data; boundary=x"}).apiError(400, "VALIDATION_ERROR", "body", "invalid_multipart")
	e.do("POST", path, "--x\r\nbroken", own, header{"Content-Type": "multipart/form-data"}).apiError(400, "VALIDATION_ERROR", "header.Content-Type", "content_type")

	// Permissions and isolation.
	_, viewer := e.member(e.orgID, "viewer")
	body, h = multipartBody(t, "a.csv", csv, nil)
	e.do("POST", path, body, bearer(viewer), h).authError(403, "PERMISSION_DENIED")
	e.do("GET", up.str("upload_url"), nil, bearer(viewer)).status(200)
	other := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Other"}, own).status(201).str("id")
	_, outsider := e.member(other, "admin")
	e.do("GET", up.str("upload_url"), nil, bearer(outsider)).apiError(404, "NOT_FOUND")

	// Unclaimed uploads expire: hidden, then swept with their file.
	e.clock.Advance(25 * time.Hour)
	own = bearer(e.login(adminEmail, adminPassword, "").str("access_token"))
	e.do("GET", up.str("upload_url"), nil, own).apiError(404, "NOT_FOUND")
	n, err := e.srv.H.SweepUploads(t.Context())
	if err != nil || n != 4 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "uploads", e.orgID)); len(entries) != 0 {
		t.Fatalf("swept uploads left %d files", len(entries))
	}
}

// Uploads are limited to 10 an hour per project, whoever sends them.
func TestUploadRateLimitPerProject(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) { c.DataDir = t.TempDir(); c.RateLimits = "uploads=2-H" })
	_, dev := e.member(e.orgID, "developer")
	path := "/api/v1/projects/" + e.projectID + "/datasets/upload"
	for i, tok := range []string{e.ownerToken, dev} {
		body, h := multipartBody(t, "a.csv", []byte("a,b\n1,2\n"), nil)
		if r := e.do("POST", path, body, bearer(tok), h).status(201); r.Header.Get("X-RateLimit-Remaining") != []string{"1", "0"}[i] {
			t.Fatalf("remaining: %v", r.Header)
		}
	}
	body, h := multipartBody(t, "a.csv", []byte("a,b\n1,2\n"), nil)
	e.do("POST", path, body, bearer(e.ownerToken), h).apiError(429, "RATE_LIMIT_EXCEEDED")
}

// rawUpload opens a connection, sends an upload's request head (chunked) with the given
// credentials and the start of a multipart body, and returns the connection and a function
// that sends one more chunk.
func (e *env) rawUpload(auth string) (net.Conn, func(string) error) {
	e.t.Helper()
	conn, err := net.Dial("tcp", e.ts.Listener.Addr().String())
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { conn.Close() })
	head := "POST /api/v1/projects/" + e.projectID + "/datasets/upload HTTP/1.1\r\nHost: x\r\n" +
		"Content-Type: multipart/form-data; boundary=BOUNDARY\r\nTransfer-Encoding: chunked\r\n"
	if auth != "" {
		head += "Authorization: Bearer " + auth + "\r\n"
	}
	chunk := func(s string) error {
		_, err := fmt.Fprintf(conn, "%x\r\n%s\r\n", len(s), s)
		return err
	}
	if _, err := io.WriteString(conn, head+"\r\n"); err != nil {
		e.t.Fatal(err)
	}
	if err := chunk("--BOUNDARY\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.csv\"\r\nContent-Type: text/csv\r\n\r\nname,n\n"); err != nil {
		e.t.Fatal(err)
	}
	return conn, chunk
}

// TestUploadRefusedWithoutDrain: an upload that is refused (here: no credentials) is
// answered and its connection closed at once, not held open while the client trickles the
// rest of its body.
func TestUploadRefusedWithoutDrain(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	conn, _ := e.rawUpload("")
	conn.SetReadDeadline(time.Now().Add(15 * time.Second)) // a hang detector, not a speed check
	r := bufio.NewReader(conn)
	res, err := http.ReadResponse(r, nil)
	if err != nil || res.StatusCode != 401 || !res.Close {
		t.Fatalf("refused upload: %v %+v", err, res)
	}
	io.Copy(io.Discard, res.Body)
	// The server closes the connection without waiting for the rest of the body: an orderly
	// close, or a reset when the unread part of the body was still in its receive buffer.
	if _, err := r.ReadByte(); err != io.EOF && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("the connection stays open after the refusal: %v", err)
	}
}

// TestUploadMinimumRate: an allowed upload may take longer than the read timeout, but not
// arrive slower than the minimum rate; nothing of it is kept.
func TestUploadMinimumRate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) { c.UploadMinRate, c.UploadRateWindow = 64<<10, 300*time.Millisecond })
	conn, chunk := e.rawUpload(e.ownerToken)
	done := make(chan *http.Response, 1)
	go func() {
		conn.SetReadDeadline(time.Now().Add(30 * time.Second)) // a hang detector
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	var res *http.Response
trickle:
	for i := 0; i < 100; i++ { // 100 bytes every 50 ms: 2 KB/s, far below 64 KiB/s
		select {
		case res = <-done:
			break trickle
		case <-time.After(50 * time.Millisecond):
		}
		if chunk(strings.Repeat("x", 99)+"\n") != nil {
			break
		}
	}
	if res == nil {
		chunk("\r\n--BOUNDARY--\r\n")
		chunk("")
		res = <-done
	}
	if res == nil || res.StatusCode != 408 {
		t.Fatalf("a trickled upload: %+v", res)
	}
	var body struct{ Error struct{ Code string } }
	json.NewDecoder(res.Body).Decode(&body)
	if body.Error.Code != "UPLOAD_TOO_SLOW" {
		t.Fatalf("code %q", body.Error.Code)
	}
	var n int
	if err := e.st.DB.Get(&n, `SELECT count(*) FROM platform.uploads WHERE project_id = $1`, e.projectID); err != nil || n != 0 {
		t.Fatalf("uploads kept: %d %v", n, err)
	}
}

// TestUploadStorageUnwritable: a data directory that cannot take the file answers 503
// STORAGE_UNAVAILABLE with Retry-After, keeps nothing (no upload row), and the server goes
// on serving; once the directory is fixed, uploads work again.
func TestUploadStorageUnwritable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	uploads := filepath.Join(e.cfg.DataDir, "uploads")
	os.RemoveAll(uploads)
	if err := os.WriteFile(uploads, []byte("not a directory"), 0o600); err != nil { // as a broken mount would be
		t.Fatal(err)
	}
	path := "/api/v1/projects/" + e.projectID + "/datasets/upload"
	body, h := multipartBody(t, "a.csv", []byte("a,b\n1,2\n"), nil)
	r := e.do("POST", path, body, bearer(e.ownerToken), h).apiError(503, "STORAGE_UNAVAILABLE")
	if r.Header.Get("Retry-After") == "" || e.countRows(`SELECT count(*) FROM platform.uploads`) != 0 {
		t.Fatalf("unwritable: %s (Retry-After %q)", r.Body, r.Header.Get("Retry-After"))
	}
	if !strings.Contains(e.logs.String(), "the data directory cannot be written") {
		t.Fatal("the operator is not told why")
	}
	e.do("GET", "/api/v1/projects/"+e.projectID, nil, bearer(e.ownerToken)).status(200)
	os.Remove(uploads)
	body, h = multipartBody(t, "a.csv", []byte("a,b\n1,2\n"), nil)
	e.do("POST", path, body, bearer(e.ownerToken), h).status(201)
}
