package store

import (
	"context"
	"database/sql"

	"github.com/jmoiron/sqlx"
)

// StmtCacheState is what db's statement cache keeps: the entries with a statement, those in
// the ring of kept entries (each checked to be a kept entry of the map, under its own text),
// and whether text is kept.
func StmtCacheState(db *sqlx.DB, text string) (kept, ring int, isKept bool) {
	c, ok := stmtCaches.Load(db)
	if !ok {
		return 0, 0, false
	}
	sc := c.(*stmtCache)
	sc.mu.Lock()
	defer sc.mu.Unlock()
	for _, e := range sc.m {
		if e.st != nil {
			kept++
		}
	}
	for e := sc.lru.next; e != &sc.lru; e = e.next {
		if sc.m[e.key] != e || e.st == nil || e.next.prev != e {
			return kept, -1, false
		}
		ring++
	}
	e := sc.m[text]
	return kept, ring, e != nil && e.st != nil
}

// MigrateDownTo undoes the migrations after version (to run them again with Migrate).
func MigrateDownTo(ctx context.Context, db *sql.DB, version int64) error {
	p, err := migrator(db)
	if err != nil {
		return err
	}
	_, err = p.DownTo(ctx, version)
	return err
}
