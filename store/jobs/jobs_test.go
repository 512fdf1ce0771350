package jobs

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"dataplatform/store"
	"dataplatform/store/pgtest"
	"dataplatform/tests/fakeclock"

	"github.com/jmoiron/sqlx"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func setup(t *testing.T) (*store.Store, string, *fakeclock.Clock) {
	url := pgtest.NewDatabase(t)
	st, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, url, fakeclock.New(time.Now())
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func enqueue(t *testing.T, st *store.Store, c *fakeclock.Clock, kind string, max int) string {
	id, err := Enqueue(context.Background(), st.DB, New{Kind: kind, Payload: map[string]int{"n": 1}, MaxAttempts: max}, c.Now())
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func wait(t *testing.T, st *store.Store, id string, status string) *Job {
	t.Helper()
	for i := 0; i < 400; i++ {
		j, err := Get(context.Background(), st.DB, id)
		if err != nil {
			t.Fatal(err)
		}
		if j.Status == status {
			return j
		}
		time.Sleep(25 * time.Millisecond)
	}
	j, _ := Get(context.Background(), st.DB, id)
	t.Fatalf("job %s is %s (%v), want %s", id, j.Status, j.LastError, status)
	return nil
}

func TestRunSucceedsWithProgressAndNotification(t *testing.T) {
	st, url, c := setup(t)
	// A one-minute poll: only the notification can start the job promptly.
	r := NewRunner(st, url, c.Now, quiet, Options{Workers: 1, Poll: time.Minute})
	finished := make(chan string, 1)
	r.Register("ok", func(ctx context.Context, j *Job, p *Progress) error {
		var pl struct{ N int }
		if err := j.Decode(&pl); err != nil || pl.N != 1 {
			return Permanent(errors.New("bad payload"))
		}
		p.Set(ctx, "loading", 5, 10, "half way")
		return nil
	})
	r.OnFinish(func(_ context.Context, j *Job, err error) { finished <- j.ID })
	r.Start(context.Background())
	defer r.Stop()
	time.Sleep(100 * time.Millisecond) // let LISTEN settle
	id := enqueue(t, st, c, "ok", 3)
	select {
	case got := <-finished:
		if got != id {
			t.Fatal("another job finished")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the job did not run on notification")
	}
	j := wait(t, st, id, "succeeded")
	if j.Progress == nil || j.Attempts != 1 || j.FinishedAt == nil {
		t.Fatalf("job: %+v", j)
	}
}

func TestEnqueueRollsBackWithTheTransaction(t *testing.T) {
	st, _, c := setup(t)
	var id string
	st.Tx(context.Background(), func(tx *sqlx.Tx) error {
		id, _ = Enqueue(context.Background(), tx, New{Kind: "x"}, c.Now())
		return errors.New("roll back")
	})
	if _, err := Get(context.Background(), st.DB, id); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("job of a rolled-back transaction exists: %v", err)
	}
}

func TestRetriesPermanentAndPanics(t *testing.T) {
	st, _, c := setup(t)
	// The test moves the clock by 10 minutes at a time to get past backoffs: a lease that
	// short would expire under a running job and let another worker take it again.
	r := NewRunner(st, "", c.Now, quiet, Options{Workers: 2, Poll: 10 * time.Millisecond, Lease: 10000 * time.Hour})
	var flaky atomic.Int32
	r.Register("flaky", func(ctx context.Context, j *Job, p *Progress) error {
		if flaky.Add(1) < 3 {
			return errors.New("transient")
		}
		return nil
	})
	r.Register("bad", func(ctx context.Context, j *Job, p *Progress) error {
		return Permanent(errors.New("line 3: ragged row"))
	})
	r.Register("boom", func(ctx context.Context, j *Job, p *Progress) error { panic("boom") })
	var failed sync.Map
	r.OnFinish(func(_ context.Context, j *Job, err error) {
		if err != nil {
			failed.Store(j.ID, err.Error())
		}
	})
	r.Start(context.Background())
	defer r.Stop()
	f := enqueue(t, st, c, "flaky", 5)
	b := enqueue(t, st, c, "bad", 5)
	p := enqueue(t, st, c, "boom", 2)
	// Backoff is measured on the injected clock: move it on until the flaky job is done.
	for i := 0; i < 200; i++ {
		if j, _ := Get(context.Background(), st.DB, f); j.Status == "succeeded" {
			break
		}
		c.Advance(10 * time.Minute)
		time.Sleep(20 * time.Millisecond)
	}
	if j := wait(t, st, f, "succeeded"); j.Attempts != 3 {
		t.Fatalf("flaky attempts %d", j.Attempts)
	}
	if j := wait(t, st, b, "failed"); j.Attempts != 1 || *j.LastError != "line 3: ragged row" {
		t.Fatalf("permanent: %+v", j)
	}
	if j := wait(t, st, p, "failed"); j.Attempts != 2 {
		t.Fatalf("panicking job attempts %d", j.Attempts)
	}
	if _, ok := failed.Load(b); !ok {
		t.Fatal("OnFinish not called for the failed job")
	}
}

// A job whose worker died (lease never renewed) is taken over once the lease expires, and two
// runners never run one job twice.
func TestCrashResumeAndNoDoubleRuns(t *testing.T) {
	st, _, c := setup(t)
	id := enqueue(t, st, c, "work", 3)
	// A worker that claimed it and died: running, lease in the past once the clock moves.
	if _, err := st.DB.Exec(`UPDATE platform.jobs SET status = 'running', lease_owner = 'wrk_dead', lease_until = $2, attempts = 1 WHERE id = $1`,
		id, c.Now().Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	var runs sync.Map
	var count atomic.Int32
	h := func(ctx context.Context, j *Job, p *Progress) error {
		if _, dup := runs.LoadOrStore(j.ID, true); dup {
			t.Errorf("job %s ran twice", j.ID)
		}
		count.Add(1)
		return nil
	}
	r1 := NewRunner(st, "", c.Now, quiet, Options{Workers: 3, Poll: 5 * time.Millisecond})
	r2 := NewRunner(st, "", c.Now, quiet, Options{Workers: 3, Poll: 5 * time.Millisecond})
	r1.Register("work", h)
	r2.Register("work", h)
	r1.Start(context.Background())
	r2.Start(context.Background())
	defer r1.Stop()
	defer r2.Stop()
	var ids []string
	for i := 0; i < 40; i++ {
		ids = append(ids, enqueue(t, st, c, "work", 3))
	}
	for _, x := range ids {
		wait(t, st, x, "succeeded")
	}
	if j, _ := Get(context.Background(), st.DB, id); j.Status != "running" {
		t.Fatalf("the dead worker's job was taken before its lease ran out: %s", j.Status)
	}
	c.Advance(time.Minute)
	if j := wait(t, st, id, "succeeded"); j.Attempts != 2 {
		t.Fatalf("resumed job attempts %d", j.Attempts)
	}
	if count.Load() != 41 {
		t.Fatalf("%d runs for 41 jobs", count.Load())
	}
}

// Stop hands a running job back without using an attempt.
func TestStopReturnsRunningJob(t *testing.T) {
	st, _, c := setup(t)
	started := make(chan struct{})
	r := NewRunner(st, "", c.Now, quiet, Options{Workers: 1, Poll: 5 * time.Millisecond})
	r.Register("slow", func(ctx context.Context, j *Job, p *Progress) error {
		close(started)
		<-ctx.Done()
		return ctx.Err()
	})
	r.Start(context.Background())
	id := enqueue(t, st, c, "slow", 3)
	<-started
	r.Stop()
	j, _ := Get(context.Background(), st.DB, id)
	if j.Status != "queued" || j.Attempts != 0 || j.LeaseOwner != nil {
		t.Fatalf("after stop: %+v", j)
	}
}

// A job whose server died during its last attempt is failed (ErrInterrupted) when its lease
// runs out, with the finish hooks called, instead of being run again and again.
func TestInterruptedLastAttemptFails(t *testing.T) {
	st, _, c := setup(t)
	id := enqueue(t, st, c, "work", 2)
	if _, err := st.DB.Exec(`UPDATE platform.jobs SET status = 'running', lease_owner = 'wrk_dead', lease_until = $2, attempts = 2 WHERE id = $1`,
		id, c.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int32
	hooked := make(chan error, 1)
	r := NewRunner(st, "", c.Now, quiet, Options{Workers: 1, Poll: 5 * time.Millisecond})
	r.Register("work", func(ctx context.Context, j *Job, p *Progress) error { ran.Add(1); return nil })
	r.OnFinish(func(ctx context.Context, j *Job, err error) { hooked <- err })
	r.Start(context.Background())
	defer r.Stop()
	j := wait(t, st, id, "failed")
	if ran.Load() != 0 || j.LastError == nil || *j.LastError != ErrInterrupted.Error() || j.Attempts != 3 {
		t.Fatalf("after its last attempt was interrupted: ran %d times, %+v", ran.Load(), j)
	}
	select {
	case err := <-hooked:
		if !errors.Is(err, ErrInterrupted) {
			t.Fatalf("hook: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the finish hooks were not called")
	}
}
