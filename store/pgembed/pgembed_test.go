package pgembed

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

func tempDir(t *testing.T) string {
	// The cluster runs as postgres when the tests run as root: it must reach the directory.
	dir, err := os.MkdirTemp("", "pgembed-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func query(t *testing.T, c *Cluster, q string, args ...any) (n int) {
	t.Helper()
	db, err := sql.Open("postgres", c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// The data survives a restart, and a postmaster killed with -9 (stale postmaster.pid, maybe
// orphaned backends) does not stop the next start.
func TestRestartAndCrashRecovery(t *testing.T) {
	dir := tempDir(t)
	ctx := context.Background()
	c, err := Start(ctx, filepath.Join(dir, "pg"), filepath.Join(dir, "pw"), Options{Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	db, _ := sql.Open("postgres", c.URL("postgres"))
	if _, err := db.Exec(`CREATE TABLE kept (x int); INSERT INTO kept VALUES (42)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "pg", "postmaster.pid")); !os.IsNotExist(err) {
		t.Fatalf("postmaster.pid left after a clean stop: %v", err)
	}

	c, err = Start(ctx, filepath.Join(dir, "pg"), filepath.Join(dir, "pw"), Options{Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := query(t, c, `SELECT x FROM kept`); got != 42 {
		t.Fatalf("data not kept across restart: %d", got)
	}
	// Crash: kill the postmaster with SIGKILL; postmaster.pid stays behind.
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-c.exited
	if _, err := os.Stat(filepath.Join(dir, "pg", "postmaster.pid")); err != nil {
		t.Fatalf("expected a stale postmaster.pid after kill -9: %v", err)
	}
	time.Sleep(200 * time.Millisecond)
	c, err = Start(ctx, filepath.Join(dir, "pg"), filepath.Join(dir, "pw"), Options{Ephemeral: true})
	if err != nil {
		t.Fatalf("start after crash: %v", err)
	}
	defer c.Stop()
	if got := query(t, c, `SELECT count(*) FROM kept`); got != 1 {
		t.Fatalf("rows after crash recovery: %d", got)
	}
}

// A live postmaster left by a server that died (here: started by another Start whose Cluster
// we drop) is shut down and replaced.
func TestLivePostmasterFromEarlierRunIsReplaced(t *testing.T) {
	dir := tempDir(t)
	ctx := context.Background()
	old, err := Start(ctx, filepath.Join(dir, "pg"), filepath.Join(dir, "pw"), Options{Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Start(ctx, filepath.Join(dir, "pg"), filepath.Join(dir, "pw"), Options{Ephemeral: true})
	if err != nil {
		t.Fatalf("second start over a live postmaster: %v", err)
	}
	defer c.Stop()
	select {
	case <-old.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the earlier postmaster is still running")
	}
	if got := query(t, c, `SELECT 1`); got != 1 {
		t.Fatal("new cluster does not answer")
	}
}

func TestPasswordAuthRequired(t *testing.T) {
	dir := tempDir(t)
	c, err := Start(context.Background(), filepath.Join(dir, "pg"), filepath.Join(dir, "pw"), Options{Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	db, _ := sql.Open("postgres", "postgres://postgres:wrong@127.0.0.1:"+itoa(c.Port)+"/postgres?sslmode=disable")
	defer db.Close()
	if err := db.Ping(); err == nil {
		t.Fatal("a wrong password was accepted")
	}
	if st, err := os.Stat(filepath.Join(dir, "pw")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("password file mode: %v %v", st.Mode(), err)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
