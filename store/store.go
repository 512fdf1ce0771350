// Package store is the data access layer of the control plane: sqlx over PostgreSQL, the
// embedded goose migrations, and the queries of each area. Its subpackages hold the data side
// (records, datasets, ingest, jobs, changes, extdb, usersql, nlsql, queries, secrets, pgembed).
//
// One style of access: a query is a function over a connection (sqlx.ExtContext, or a
// narrower QueryerContext/ExecerContext, or *sqlx.Tx when it must run in a transaction), so
// the same function serves the pool and a transaction; transactions are closures (Store.Tx).
// Methods on *Store are kept for what the Store itself owns: the pool and its transactions,
// the prepared statements of the three hottest reads (API key, project and dataset lookups)
// and the dataset lookup cache. Time comparisons take the application's clock as a parameter
// so that expiry behaves the same in tests that move the clock.
package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	neturl "net/url"
	"strings"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Store wraps the database handle.
type Store struct {
	DB *sqlx.DB

	// Pooled says DB goes through a transaction pooler (PgBouncer pool_mode=transaction),
	// where consecutive statements outside a transaction may run on different server
	// connections: no named prepared statements then. Set it before use.
	Pooled bool

	stmts    sync.Map // query text -> *sqlx.Stmt
	look     lookups
	revoked  revocations // the access-token deny-list's copy (revocations.go)
	replicas *replicas   // hot standbys for reads (replicas.go); nil: none
	// security and twoFactor keep OrgSecurity and UserTwoFactor answers (security.go).
	security  genCache[OrgSecurity]
	twoFactor genCache[bool]
	apiKeys   genCache[liveKey] // by key hash (auth.go)
	// tableSizes: organization id -> measured, its dataset tables' size (usage.go)
	tableSizes sync.Map
}

// getter runs one query for one row.
type getter interface {
	GetContext(ctx context.Context, dest any, args ...any) error
}

// unprepared runs its query as it is, each time.
type unprepared struct {
	db    *sqlx.DB
	query string
}

func (u unprepared) GetContext(ctx context.Context, dest any, args ...any) error {
	return u.db.GetContext(ctx, dest, u.query, args...)
}

// prepared returns a prepared statement for a hot query: PostgreSQL then parses and plans it
// once per connection instead of on every request. database/sql prepares it again on each new
// connection by itself. Through a transaction pooler the query runs unprepared: a named
// statement lives on one server connection, and the next use may get another.
func (s *Store) prepared(ctx context.Context, query string) (getter, error) {
	if s.Pooled {
		return unprepared{s.DB, query}, nil
	}
	if st, ok := s.stmts.Load(query); ok {
		return st.(*sqlx.Stmt), nil
	}
	st, err := s.DB.PreparexContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if prev, loaded := s.stmts.LoadOrStore(query, st); loaded {
		_ = st.Close()
		return prev.(*sqlx.Stmt), nil
	}
	return st, nil
}

// Open connects and checks the connection.
//
// binary_parameters makes lib/pq send a parameterised query in one round trip instead of two
// (parse, then bind). Its price: []byte parameters travel in binary format, which is right for
// bytea and wrong for json/jsonb, so JSON values are always passed as strings.
func Open(ctx context.Context, url string) (*Store, error) {
	s, err := open(url)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.DB.PingContext(pctx); err != nil {
		_ = s.DB.Close()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	return s, nil
}

// open makes the pool without connecting.
func open(url string) (*Store, error) {
	given := url
	if u, err := neturl.Parse(url); err == nil && u.Query().Get("binary_parameters") == "" {
		q := u.Query()
		q.Set("binary_parameters", "yes")
		u.RawQuery = q.Encode()
		url = u.String()
	}
	db, err := sqlx.Open("postgres", url)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(40)
	db.SetMaxIdleConns(40)
	db.SetConnMaxIdleTime(5 * time.Minute)
	urls.Store(db, given) // for COPY TO (copyto.go)
	return &Store{DB: db}, nil
}

// Close closes the pool.
func (s *Store) Close() error {
	urls.Delete(s.DB)
	return s.DB.Close()
}

// Migrate applies every pending migration.
func Migrate(ctx context.Context, db *sql.DB) error {
	p, err := migrator(db)
	if err != nil {
		return err
	}
	_, err = p.Up(ctx)
	return err
}

// migrator runs the embedded migrations on db. A session lock keeps concurrent replicas in
// line.
func migrator(db *sql.DB) (*goose.Provider, error) {
	fsys, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return nil, err
	}
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return nil, err
	}
	return goose.NewProvider(goose.DialectPostgres, db, fsys, goose.WithSessionLocker(locker))
}

// Tx runs fn in a transaction, committing when it returns nil. A transaction PostgreSQL
// aborts as a deadlock victim or a serialization failure is run again (three times at most,
// after 50, 200 and 800 ms): fn starts over from what the database holds then.
func (s *Store) Tx(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	for attempt := 0; ; attempt++ {
		err := s.tx(ctx, fn)
		if attempt < 3 && retryable(err) {
			// A deadlock victim's rival (an index being built concurrently, say) goes on
			// once the victim is gone: give it a moment before trying again.
			select {
			case <-ctx.Done():
				return err
			case <-time.After(time.Duration(50<<(2*attempt)) * time.Millisecond):
			}
			continue
		}
		return err
	}
}

func (s *Store) tx(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	tx, err := s.DB.BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// NoFlushOnCommit lets transaction tx commit without waiting for its disk flush: for writes
// that are not worth one (query history).
func NoFlushOnCommit(ctx context.Context, tx *sqlx.Tx) error {
	_, err := tx.ExecContext(ctx, `SET LOCAL synchronous_commit = off`)
	return err
}

func retryable(err error) bool {
	var pe *pq.Error
	// "tuple concurrently updated": DDL of the transaction (a DROP TABLE of a dataset, say)
	// met a catalog row another session was changing at that moment (the search index being
	// built concurrently): nothing was done, and the next attempt finds the catalog settled.
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001" ||
		pe.Code == "XX000" && pe.Message == "tuple concurrently updated")
}

// ErrNotFound is returned when a row does not exist (or is not visible to the caller).
var ErrNotFound = errors.New("not found")

func notFound(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	return err
}

// UniqueViolation returns the constraint name when err is a unique violation.
func UniqueViolation(err error) (string, bool) {
	var pe *pq.Error
	if errors.As(err, &pe) && pe.Code == "23505" {
		return pe.Constraint, true
	}
	return "", false
}

const idAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// ConstraintViolation reports a write a CHECK or NOT NULL constraint refused, with
// PostgreSQL's message.
func ConstraintViolation(err error) (string, bool) {
	var pe *pq.Error
	if errors.As(err, &pe) && (pe.Code == "23514" || pe.Code == "23502" || strings.HasPrefix(string(pe.Code), "22")) {
		return pe.Message, true
	}
	return "", false
}

// NewID returns prefix_ followed by 20 random lowercase letters and digits (103 bits).
func NewID(prefix string) string {
	b := make([]byte, 20)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	for i := range b {
		b[i] = idAlphabet[int(b[i])%len(idAlphabet)]
	}
	return prefix + "_" + string(b)
}

// Unavailable reports whether err means the database cannot be reached or is not taking work
// (down, restarting, out of connections), as opposed to a failed statement: the request may
// succeed later, so it is answered 503, not 500.
func Unavailable(err error) bool {
	var pe *pq.Error
	if errors.As(err, &pe) {
		code := string(pe.Code)
		// class 08: connection exception; 57P01-03: shutting down or starting; 53300: too many connections
		return strings.HasPrefix(code, "08") || code == "57P01" || code == "57P02" || code == "57P03" || code == "53300"
	}
	var oe *net.OpError // dialling or reading the database's connection failed
	return errors.Is(err, driver.ErrBadConn) || errors.As(err, &oe) || errors.Is(err, io.ErrUnexpectedEOF)
}
