package main

import (
	"net"
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
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir, err := os.MkdirTemp("", "dp-serve-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "dataplatform")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()

	start := func(name string) (*exec.Cmd, time.Duration) {
		cmd := exec.Command(bin, "serve")
		cmd.Env = append(os.Environ(), "DATABASE_URL=", "DP_DATA_DIR="+filepath.Join(dir, "data"), "DP_ADDR="+addr,
			"DP_ADMIN_EMAIL=admin@example.com", "DP_ADMIN_PASSWORD=admin-password", "DP_BCRYPT_COST=4")
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
	login := func() int {
		r, err := http.Post("http://"+addr+"/api/v1/auth/login", "application/json",
			strings.NewReader(`{"email":"admin@example.com","password":"admin-password"}`))
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		return r.StatusCode
	}

	cmd, first := start("first")
	t.Logf("first start (initdb, migrations, bootstrap): %v", first)
	if c := login(); c != 200 {
		t.Fatalf("login after first start: %d", c)
	}
	// Crash: SIGKILL the server. Its postmaster must not survive it for long.
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	cmd, second := start("after-kill")
	t.Logf("start after kill -9: %v", second)
	if c := login(); c != 200 {
		t.Fatalf("login after restart (data not reused?): %d", c)
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
