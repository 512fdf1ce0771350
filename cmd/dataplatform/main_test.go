package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The binary on its embedded database: first start initialises the cluster and bootstraps,
// kill -9 of the server leaves nothing that stops the next start, the data is reused, and
// SIGTERM stops server and cluster cleanly.
func TestServeEmbeddedLifecycle(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir, err := os.MkdirTemp("", "dp-serve-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	bin := binary(t)
	addr := freeAddr(t)

	start := func(name string) (*exec.Cmd, time.Duration) {
		cmd := exec.Command(bin, "serve")
		cmd.Env = append(os.Environ(), "DATABASE_URL=", "DP_DATA_DIR="+filepath.Join(dir, "data"), "DP_ADDR="+addr,
			"DP_ADMIN_EMAIL=admin@example.com", "DP_ADMIN_PASSWORD=admin-password", "DP_BCRYPT_COST=4", "DP_JOB_LEASE=2s")
		logf, _ := os.Create(filepath.Join(dir, name+".log"))
		cmd.Stdout, cmd.Stderr = logf, logf
		t0 := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for time.Since(t0) < 60*time.Second {
			if r, err := http.Get("http://" + addr + "/readyz"); err == nil {
				r.Body.Close()
				if r.StatusCode == 200 {
					return cmd, time.Since(t0)
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		b, _ := os.ReadFile(filepath.Join(dir, name+".log"))
		t.Fatalf("%s: not ready within 60s\n%s", name, b)
		return nil, 0
	}
	call := func(method, path, token, ctype string, body io.Reader) (int, map[string]any) {
		req, _ := http.NewRequest(method, "http://"+addr+path, body)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		var out map[string]any
		json.NewDecoder(r.Body).Decode(&out)
		return r.StatusCode, out
	}
	login := func() (int, string) {
		c, out := call("POST", "/api/v1/auth/login", "", "application/json", strings.NewReader(`{"email":"admin@example.com","password":"admin-password"}`))
		tok, _ := out["access_token"].(string)
		return c, tok
	}

	cmd, first := start("first")
	t.Logf("first start (initdb, migrations, bootstrap): %v", first)
	c, tok := login()
	if c != 200 {
		t.Fatalf("login after first start: %d", c)
	}
	// A dataset big enough to be loading when the server is killed.
	_, orgs := call("GET", "/api/v1/organizations", tok, "", nil)
	org := orgs["organizations"].([]any)[0].(map[string]any)["id"].(string)
	_, prjs := call("GET", "/api/v1/organizations/"+org+"/projects", tok, "", nil)
	prj := prjs["projects"].([]any)[0].(map[string]any)["id"].(string)
	var csv bytes.Buffer
	csv.WriteString("n,label,amount\n")
	for i := 0; i < 400000; i++ {
		fmt.Fprintf(&csv, "%d,row %d,%d.5\n", i, i, i%1000)
	}
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	fw, _ := mw.CreateFormFile("file", "big.csv")
	fw.Write(csv.Bytes())
	mw.Close()
	c, up := call("POST", "/api/v1/projects/"+prj+"/datasets/upload", tok, mw.FormDataContentType(), &form)
	if c != 201 {
		t.Fatalf("upload: %d %v", c, up)
	}
	c, ds := call("POST", "/api/v1/projects/"+prj+"/datasets", tok, "application/json",
		strings.NewReader(`{"name":"big","source":{"file_id":"`+up["file_id"].(string)+`"}}`))
	if c != 202 {
		t.Fatalf("create dataset: %d %v", c, ds)
	}
	dsPath := "/api/v1/projects/" + prj + "/datasets/" + ds["id"].(string)
	jobPath := "/api/v1/jobs/" + ds["job_id"].(string)
	for i := 0; i < 500; i++ { // kill while the load is under way
		if _, j := call("GET", jobPath, tok, "", nil); j["status"] == "running" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Crash: SIGKILL the server mid-load. Its postmaster must not survive it for long.
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	cmd, second := start("after-kill")
	t.Logf("start after kill -9: %v", second)
	c, tok = login()
	if c != 200 {
		t.Fatalf("login after restart (data not reused?): %d", c)
	}
	// The interrupted load is taken over once its lease runs out, and finishes.
	status := ""
	for i := 0; i < 600 && status != "active"; i++ {
		_, d := call("GET", dsPath, tok, "", nil)
		status, _ = d["status"].(string)
		if status == "failed" {
			t.Fatalf("the interrupted load failed: %v", d["error"])
		}
		time.Sleep(100 * time.Millisecond)
	}
	if status != "active" {
		t.Fatalf("the dataset is stuck in %q after the restart", status)
	}
	if _, j := call("GET", jobPath, tok, "", nil); j["attempts"] != float64(2) {
		t.Fatalf("the load was not interrupted and resumed: %v", j)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no exit within 30s of SIGTERM")
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "postgres", "postmaster.pid")); !os.IsNotExist(err) {
		t.Fatalf("the cluster was not stopped: postmaster.pid %v", err)
	}
	cmd, third := start("third")
	t.Logf("later start: %v", third)
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
}
