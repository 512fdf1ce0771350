// Package jobs runs background work stored in PostgreSQL, so any number of replicas share it.
//
// A job is claimed with FOR UPDATE SKIP LOCKED and held under a lease that a heartbeat renews
// while its handler runs. If the process dies, the lease runs out and another worker claims
// the job again: handlers must be idempotent (the dataset loader, for one, rebuilds its table
// from scratch in one transaction). Errors are retried with exponential backoff up to the
// job's max attempts; Permanent errors fail at once.
package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"dataplatform/store"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Job is a row of platform.jobs.
type Job struct {
	ID           string     `db:"id"`
	Kind         string     `db:"kind"`
	OrgID        *string    `db:"organization_id"`
	ResourceType *string    `db:"resource_type"`
	ResourceID   *string    `db:"resource_id"`
	Payload      string     `db:"payload"` // JSON
	Status       string     `db:"status"`
	Progress     *string    `db:"progress"` // JSON
	Attempts     int        `db:"attempts"`
	MaxAttempts  int        `db:"max_attempts"`
	RunAt        time.Time  `db:"run_at"`
	LeaseOwner   *string    `db:"lease_owner"`
	LeaseUntil   *time.Time `db:"lease_until"`
	LastError    *string    `db:"last_error"`
	CreatedAt    time.Time  `db:"created_at"`
	StartedAt    *time.Time `db:"started_at"`
	FinishedAt   *time.Time `db:"finished_at"`
}

const cols = `id, kind, organization_id, resource_type, resource_id, payload, status, progress, attempts, max_attempts,
	run_at, lease_owner, lease_until, last_error, created_at, started_at, finished_at`

// Decode unmarshals the payload into v.
func (j *Job) Decode(v any) error { return json.Unmarshal([]byte(j.Payload), v) }

// New describes a job to enqueue.
type New struct {
	Kind                     string
	OrgID                    string
	ResourceType, ResourceID string
	Payload                  any
	MaxAttempts              int // default 3
}

const channel = "platform_jobs"

// Enqueue adds a job in the caller's transaction (the job exists only if the change that
// needs it commits) and wakes the runners when it does.
func Enqueue(ctx context.Context, q sqlx.ExecerContext, n New, now time.Time) (string, error) {
	p, err := json.Marshal(n.Payload)
	if err != nil {
		return "", fmt.Errorf("enqueue job: %w", err)
	}
	if n.MaxAttempts == 0 {
		n.MaxAttempts = 3
	}
	id := store.NewID("job")
	nullable := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	if _, err := q.ExecContext(ctx, `INSERT INTO platform.jobs (id, kind, organization_id, resource_type, resource_id, payload, status,
		max_attempts, run_at, created_at) VALUES ($1, $2, $3, $4, $5, $6, 'queued', $7, $8, $8)`,
		id, n.Kind, nullable(n.OrgID), nullable(n.ResourceType), nullable(n.ResourceID), string(p), n.MaxAttempts, now); err != nil {
		return "", fmt.Errorf("enqueue job: %w", err)
	}
	_, err = q.ExecContext(ctx, `SELECT pg_notify($1, $2)`, channel, n.Kind)
	return id, err
}

// Get reads a job.
func Get(ctx context.Context, q sqlx.QueryerContext, id string) (*Job, error) {
	var j Job
	err := sqlx.GetContext(ctx, q, &j, `SELECT `+cols+` FROM platform.jobs WHERE id = $1`, id)
	if errors.Is(err, errNoRows) {
		return nil, store.ErrNotFound
	}
	return &j, err
}

// Pending is the queued or running job of a kind for a resource, or store.ErrNotFound.
func Pending(ctx context.Context, q sqlx.QueryerContext, kind, resourceID string) (*Job, error) {
	var j Job
	err := sqlx.GetContext(ctx, q, &j, `SELECT `+cols+` FROM platform.jobs WHERE kind = $1 AND resource_id = $2
		AND status IN ('queued', 'running') ORDER BY created_at LIMIT 1`, kind, resourceID)
	if errors.Is(err, errNoRows) {
		return nil, store.ErrNotFound
	}
	return &j, err
}

// permanent marks an error that retrying cannot fix.
type permanent struct{ error }

func (p permanent) Unwrap() error { return p.error }

// Permanent wraps err so that the job fails at once, without retries.
func Permanent(err error) error { return permanent{err} }

// IsPermanent reports whether err (or an error it wraps) was made with Permanent.
func IsPermanent(err error) bool {
	var p permanent
	return errors.As(err, &p)
}

// Describe is err as a job's last error and a dataset's failure reason: PostgreSQL's detail
// line is kept, as it often holds the actual cause (a foreign server's connection error).
func Describe(err error) string {
	var pe *pq.Error
	if errors.As(err, &pe) && pe.Detail != "" {
		return err.Error() + ": " + pe.Detail
	}
	return err.Error()
}

// Progress reports how far a handler is; it is written at most twice a second.
type Progress struct {
	r     *Runner
	id    string
	mu    sync.Mutex
	last  time.Time
	state map[string]any
}

// Set records the phase and counts; message may be empty.
func (p *Progress) Set(ctx context.Context, phase string, done, total int64, message string) {
	p.mu.Lock()
	p.state = map[string]any{"phase": phase, "done": done, "total": total}
	if message != "" {
		p.state["message"] = message
	}
	due := time.Since(p.last) >= 500*time.Millisecond
	if due {
		p.last = time.Now()
	}
	b, _ := json.Marshal(p.state)
	p.mu.Unlock()
	if due {
		_, _ = p.r.st.DB.ExecContext(ctx, `UPDATE platform.jobs SET progress = $2 WHERE id = $1 AND lease_owner = $3`, p.id, string(b), p.r.id)
	}
}

func (p *Progress) json() *string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == nil {
		return nil
	}
	b, _ := json.Marshal(p.state)
	s := string(b)
	return &s
}

// Handler does a job's work.
type Handler func(ctx context.Context, j *Job, p *Progress) error

// Options tune a Runner.
type Options struct {
	Workers int           // concurrent jobs; default 2
	Lease   time.Duration // how long a claim lasts without a heartbeat; default 30s
	Poll    time.Duration // how often to look for work without a notification; default 1s
}

// Runner claims and runs jobs.
type Runner struct {
	st       *store.Store
	url      string
	clock    func() time.Time
	log      *slog.Logger
	opt      Options
	id       string
	handlers map[string]Handler
	onFinish []func(context.Context, *Job, error)

	wake   chan struct{}
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewRunner builds a runner; dbURL is used for LISTEN (empty: poll only).
func NewRunner(st *store.Store, dbURL string, clock func() time.Time, log *slog.Logger, opt Options) *Runner {
	if opt.Workers <= 0 {
		opt.Workers = 2
	}
	if opt.Lease <= 0 {
		opt.Lease = 30 * time.Second
	}
	if opt.Poll <= 0 {
		opt.Poll = time.Second
	}
	return &Runner{st: st, url: dbURL, clock: clock, log: log, opt: opt, id: store.NewID("wrk"),
		handlers: map[string]Handler{}, wake: make(chan struct{}, 1)}
}

// Register sets the handler of a kind; call before Start.
func (r *Runner) Register(kind string, h Handler) { r.handlers[kind] = h }

// OnFinish adds a hook called after a job ends for good (succeeded, or failed with err);
// every kind's hooks see every job and filter by j.Kind.
func (r *Runner) OnFinish(f func(ctx context.Context, j *Job, err error)) {
	r.onFinish = append(r.onFinish, f)
}

// Start runs the workers until Stop.
func (r *Runner) Start(ctx context.Context) {
	ctx, r.cancel = context.WithCancel(ctx)
	if r.url != "" {
		l := pq.NewListener(r.url, time.Second, time.Minute, nil)
		if err := l.Listen(channel); err != nil {
			r.log.Warn("job notifications unavailable; polling only", "error", err)
			_ = l.Close()
		} else {
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				defer func() { _ = l.Close() }()
				for {
					select {
					case <-ctx.Done():
						return
					case <-l.Notify:
						r.poke()
					}
				}
			}()
		}
	}
	for i := 0; i < r.opt.Workers; i++ {
		r.wg.Add(1)
		go r.work(ctx)
	}
}

// Stop cancels running handlers and waits for the workers. A job interrupted this way goes
// back to the queue without using an attempt.
func (r *Runner) Stop() {
	if r.cancel != nil {
		r.cancel()
	}
	r.wg.Wait()
}

func (r *Runner) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *Runner) work(ctx context.Context) {
	defer r.wg.Done()
	for ctx.Err() == nil {
		j, err := r.claim(ctx)
		if err != nil && ctx.Err() == nil {
			r.log.Warn("claiming a job", "error", err)
		}
		if j != nil {
			r.run(ctx, j)
			r.poke() // there may be more
			continue
		}
		select {
		case <-ctx.Done():
		case <-r.wake:
		case <-time.After(r.opt.Poll):
		}
	}
}

func (r *Runner) kinds() []string {
	ks := make([]string, 0, len(r.handlers))
	for k := range r.handlers {
		ks = append(ks, k)
	}
	return ks
}

// claim takes the next due job: queued and due, or running with an expired lease.
func (r *Runner) claim(ctx context.Context) (*Job, error) {
	now := r.clock()
	var j Job
	err := r.st.DB.GetContext(ctx, &j, `UPDATE platform.jobs SET status = 'running', lease_owner = $1, lease_until = $2,
		attempts = attempts + 1, started_at = COALESCE(started_at, $3)
		WHERE id = (SELECT id FROM platform.jobs
			WHERE kind = ANY($4) AND ((status = 'queued' AND run_at <= $3) OR (status = 'running' AND lease_until < $3))
			ORDER BY run_at LIMIT 1 FOR UPDATE SKIP LOCKED)
		RETURNING `+cols, r.id, now.Add(r.opt.Lease), now, pq.Array(r.kinds()))
	if errors.Is(err, errNoRows) {
		return nil, nil
	}
	return &j, err
}

// ErrInterrupted is the error of a job whose every attempt ended with its server's death: it
// is failed rather than run again, so a job that kills its server cannot do so forever.
var ErrInterrupted = errors.New("interrupted: the server running it stopped during each of its attempts")

func (r *Runner) run(ctx context.Context, j *Job) {
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p := &Progress{r: r, id: j.ID}
	if j.Attempts > j.MaxAttempts { // claimed again after its last attempt's lease ran out
		r.finish(ctx, j, p, Permanent(ErrInterrupted))
		return
	}
	beat := make(chan struct{})
	go func() { // renew the lease while the handler works
		t := time.NewTicker(r.opt.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-beat:
				return
			case <-t.C:
				res, err := r.st.DB.ExecContext(ctx, `UPDATE platform.jobs SET lease_until = $3 WHERE id = $1 AND lease_owner = $2 AND status = 'running'`,
					j.ID, r.id, r.clock().Add(r.opt.Lease))
				if n, _ := rowsAffected(res, err); n == 0 {
					cancel() // the lease was lost: someone else has the job now
				}
			}
		}
	}()
	err := r.call(hctx, j, p)
	close(beat)
	if ctx.Err() != nil { // shutdown: give the job back untouched
		_, _ = r.st.DB.Exec(`UPDATE platform.jobs SET status = 'queued', attempts = attempts - 1, lease_owner = NULL, lease_until = NULL, progress = $2
			WHERE id = $1 AND lease_owner = $3`, j.ID, p.json(), r.id)
		return
	}
	r.finish(ctx, j, p, err)
}

// call runs the handler, turning a panic into an error.
func (r *Runner) call(ctx context.Context, j *Job, p *Progress) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic: %v", v)
		}
	}()
	h, ok := r.handlers[j.Kind]
	if !ok {
		return Permanent(fmt.Errorf("no handler for job kind %q", j.Kind))
	}
	return h(ctx, j, p)
}

func (r *Runner) finish(ctx context.Context, j *Job, p *Progress, err error) {
	now := r.clock()
	var res sqlResult
	var qerr error
	final := true
	switch {
	case err == nil:
		j.Status = "succeeded"
		res, qerr = r.st.DB.ExecContext(ctx, `UPDATE platform.jobs SET status = 'succeeded', finished_at = $2, lease_owner = NULL, lease_until = NULL,
			last_error = NULL, progress = COALESCE($4, progress) WHERE id = $1 AND lease_owner = $3 AND status = 'running'`, j.ID, now, r.id, p.json())
	case IsPermanent(err) || j.Attempts >= j.MaxAttempts:
		j.Status = "failed"
		res, qerr = r.st.DB.ExecContext(ctx, `UPDATE platform.jobs SET status = 'failed', finished_at = $2, lease_owner = NULL, lease_until = NULL,
			last_error = $4, progress = COALESCE($5, progress) WHERE id = $1 AND lease_owner = $3 AND status = 'running'`, j.ID, now, r.id, Describe(err), p.json())
	default:
		final = false
		backoff := time.Duration(float64(2*time.Second) * float64(int(1)<<min(j.Attempts-1, 8)) * (0.75 + rand.Float64()/2))
		backoff = min(backoff, 5*time.Minute)
		res, qerr = r.st.DB.ExecContext(ctx, `UPDATE platform.jobs SET status = 'queued', run_at = $2, lease_owner = NULL, lease_until = NULL,
			last_error = $4 WHERE id = $1 AND lease_owner = $3 AND status = 'running'`, j.ID, now.Add(backoff), r.id, Describe(err))
		r.log.Warn("job failed; will retry", "job_id", j.ID, "kind", j.Kind, "attempt", j.Attempts, "retry_in", backoff.String(), "error", Describe(err))
	}
	if n, _ := rowsAffected(res, qerr); n == 0 {
		r.log.Warn("job result discarded: the lease was lost", "job_id", j.ID, "error", qerr)
		return
	}
	if final {
		for _, f := range r.onFinish {
			f(ctx, j, err)
		}
	}
}
