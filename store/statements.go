package store

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
)

// Prepared statements of the record API's reads (a record by key, a list page, its count).
//
// A statement sent with parameters is parsed and planned by PostgreSQL on every execution,
// and for these statements that costs more than running them: a record by key through
// pgbench runs 3× as many times a second prepared as sent as text, a 20-row list page 1.7×.
// Their text depends only on the dataset's table and the request's shape (fields, filters,
// sort, a page's limit: never a filter's value, which is a bound parameter), so the same few
// texts come again and again.
// A text seen stmtAfter times on a pool is prepared there and kept: database/sql prepares it on
// each connection the first time it runs there, and afterwards each execution is one
// Bind/Execute round trip with no parsing or planning. At most stmtKeep texts are kept per pool
// (each costs every backend that ran it tens of kilobytes). When that many are, a text is
// prepared only when it has been used more often than the least recently used kept one, which
// is then closed (after stmtCloseAfter, so a query that just took it still runs); uses count
// half every stmtAge uses of the pool, so that what was busy once gives way. Without that
// rule, traffic spread over more texts than are kept (a thousand tenants' datasets) closed and
// prepared statements at nearly every request, which cost PostgreSQL more than preparing
// nothing. Through a transaction pooler (Pooled) nothing is prepared.
//
// PostgreSQL keeps a prepared statement valid across schema changes by itself (it parses the
// text again when a table it names is altered, renamed or dropped and created again), and every
// statement here answers one json or a fixed set of columns whose types do not depend on the
// table, so a cached statement never fails with "cached plan must not change result type".

const (
	stmtKeep       = 128
	stmtAfter      = 2
	stmtAge        = 8 * stmtKeep
	stmtCloseAfter = 10 * time.Second
)

// stmtCaches holds each pool's statements (*sqlx.DB → *stmtCache): the primary's and each
// standby's.
var stmtCaches sync.Map

type stmtCache struct {
	mu   sync.Mutex
	tick uint64
	m    map[string]*stmtEntry
	kept int       // entries with a statement
	lru  stmtEntry // the ring of kept entries: lru.next the most recently used, lru.prev the least
}

type stmtEntry struct {
	st         *sqlx.Stmt // nil until used stmtAfter times
	uses       int
	key        string
	prev, next *stmtEntry // in the ring of kept entries, while st is set
}

func newStmtCache() *stmtCache {
	c := &stmtCache{m: map[string]*stmtEntry{}}
	c.lru.prev, c.lru.next = &c.lru, &c.lru
	return c
}

// front puts kept entry e first in the ring (mu held), taking it out of it first if it is in.
func (c *stmtCache) front(e *stmtEntry) {
	if e.next != nil {
		e.prev.next, e.next.prev = e.next, e.prev
	}
	e.prev, e.next = &c.lru, c.lru.next
	c.lru.next.prev = e
	c.lru.next = e
}

// Preparing is db as a QueryerContext that runs the record API's repeated reads as prepared
// statements (see above); anything else is run as db runs it. Use it for SQL whose text does
// not carry values (they are parameters), or the cache only churns.
func (s *Store) Preparing(db *sqlx.DB) sqlx.QueryerContext {
	if s.Pooled || db == nil {
		return db
	}
	c, ok := stmtCaches.Load(db)
	if !ok {
		c, _ = stmtCaches.LoadOrStore(db, newStmtCache())
	}
	return preparing{db: db, c: c.(*stmtCache)}
}

type preparing struct {
	db *sqlx.DB
	c  *stmtCache
}

// stmt is the prepared statement of query, nil while it runs unprepared.
func (p preparing) stmt(ctx context.Context, query string) *sqlx.Stmt {
	c := p.c
	c.mu.Lock()
	c.tick++
	e := c.m[query]
	if e == nil {
		if len(c.m) >= 4*stmtKeep { // texts seen once or twice: forget them before they pile up
			for k, x := range c.m {
				if x.st == nil {
					delete(c.m, k)
				}
			}
		}
		e = &stmtEntry{key: query}
		c.m[query] = e
	}
	if c.tick%stmtAge == 0 {
		for _, x := range c.m {
			x.uses /= 2
		}
	}
	e.uses++
	st := e.st
	if st != nil {
		c.front(e)
	}
	admit := st == nil && e.uses >= stmtAfter && c.admits(e)
	c.mu.Unlock()
	if !admit {
		return st
	}
	st, err := p.db.PreparexContext(ctx, query)
	if err != nil {
		return nil // run as text: the error, if any, is the query's own
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.st != nil { // prepared meanwhile by another request
		go func() { _ = st.Close() }() // a spare prepared twice: nothing depends on its release
		return e.st
	}
	if c.m[query] != e { // forgotten meanwhile
		go func() { _ = st.Close() }() // as above
		return nil
	}
	e.st = st
	c.front(e)
	c.kept++
	if v := c.victim(); c.kept > stmtKeep && v != nil {
		v.prev.next, v.next.prev = v.next, v.prev
		delete(c.m, v.key)
		c.kept--
		old := v.st
		time.AfterFunc(stmtCloseAfter, func() { _ = old.Close() }) // evicted: no caller to tell
	}
	return st
}

// admits says whether e's text is to be prepared (mu held): while fewer than stmtKeep are
// kept, or when it has been used more than the one it would displace.
func (c *stmtCache) admits(e *stmtEntry) bool {
	if c.kept < stmtKeep {
		return true
	}
	v := c.victim()
	return v != nil && e.uses > v.uses
}

// victim is the least recently used kept statement, nil when none is (mu held).
func (c *stmtCache) victim() *stmtEntry {
	if c.lru.prev == &c.lru {
		return nil
	}
	return c.lru.prev
}

// closed is the error of a statement closed under a query that had just taken it.
func closed(err error) bool {
	return err != nil && strings.Contains(err.Error(), "statement is closed")
}

func (p preparing) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := p.stmt(ctx, query); st != nil {
		if rows, err := st.QueryContext(ctx, args...); !closed(err) {
			return rows, err
		}
	}
	return p.db.QueryContext(ctx, query, args...)
}

func (p preparing) QueryxContext(ctx context.Context, query string, args ...any) (*sqlx.Rows, error) {
	if st := p.stmt(ctx, query); st != nil {
		if rows, err := st.QueryxContext(ctx, args...); !closed(err) {
			return rows, err
		}
	}
	return p.db.QueryxContext(ctx, query, args...)
}

func (p preparing) QueryRowxContext(ctx context.Context, query string, args ...any) *sqlx.Row {
	if st := p.stmt(ctx, query); st != nil {
		if row := st.QueryRowxContext(ctx, args...); !closed(row.Err()) {
			return row
		}
	}
	return p.db.QueryRowxContext(ctx, query, args...)
}
