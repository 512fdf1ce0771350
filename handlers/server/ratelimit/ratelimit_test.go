package ratelimit

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

func TestMemoryCountsPerCategoryAndKey(t *testing.T) {
	l, err := New("", "default=3-M,invitations=1-D")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := 1; i <= 4; i++ {
		r, err := l.Take(ctx, "default", "usr_a")
		if err != nil {
			t.Fatal(err)
		}
		if r.Limit != 3 || r.Reached != (i > 3) || r.Remaining != int64(max(0, 3-i)) {
			t.Fatalf("request %d: %+v", i, r)
		}
		if r.Reset <= time.Now().Unix() || r.Reset > time.Now().Add(time.Minute).Unix()+1 {
			t.Fatalf("reset %d is not within the minute", r.Reset)
		}
	}
	if r, _ := l.Take(ctx, "default", "usr_b"); r.Reached || r.Remaining != 2 {
		t.Fatalf("another principal shares the window: %+v", r)
	}
	if r, _ := l.Take(ctx, "invitations", "usr_a"); r.Reached || r.Limit != 1 {
		t.Fatalf("categories share a window: %+v", r)
	}
	if r, _ := l.Take(ctx, "no-such-category", "usr_c"); r.Limit != 3 {
		t.Fatalf("an unknown category does not count as default: %+v", r)
	}
}

func TestBadOverrides(t *testing.T) {
	for _, o := range []string{"default", "default=lots", "default=5-Y"} {
		if _, err := New("", o); err == nil {
			t.Errorf("%q accepted", o)
		}
	}
	if _, err := New("redis://127.0.0.1:1/0", ""); err == nil {
		t.Error("an unreachable Redis was accepted")
	}
}

// Two limiters on one Redis (two replicas) share their counts.
func TestRedisIsShared(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed (apt-get install redis-server)")
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	url := "redis://127.0.0.1:" + strconv.Itoa(port) + "/0"
	var a, b *Limiter
	for i := 0; i < 100; i++ {
		if a, err = New(url, "default=2-M"); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if b, err = New(url, "default=2-M"); err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	a.Take(ctx, "default", "usr_x")
	b.Take(ctx, "default", "usr_x")
	if r, _ := a.Take(ctx, "default", "usr_x"); !r.Reached {
		t.Fatalf("third request across replicas not limited: %+v", r)
	}
}
