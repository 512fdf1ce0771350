package store

import (
	"fmt"
	"testing"

	"github.com/jmoiron/sqlx"
)

// TestStmtAdmission: while stmtKeep statements are kept, a text is prepared only when it has
// been used more often than the least recently used kept one, which it then displaces.
// Without the rule, traffic spread over more texts than are kept closed and prepared a
// statement at nearly every request.
func TestStmtAdmission(t *testing.T) {
	c := newStmtCache()
	for i := range stmtKeep { // kept 0 used last
		e := &stmtEntry{st: new(sqlx.Stmt), uses: 3, key: fmt.Sprint("kept ", stmtKeep-1-i)}
		c.m[e.key] = e
		c.front(e)
	}
	c.m["unprepared, older"] = &stmtEntry{uses: 9}
	c.kept = stmtKeep
	if v := c.victim(); v.key != fmt.Sprint("kept ", stmtKeep-1) {
		t.Fatalf("victim %q, want the least recently used kept statement", v.key)
	}
	c.front(c.m[fmt.Sprint("kept ", stmtKeep-1)]) // used again: the next one is now the oldest
	if v := c.victim(); v.key != fmt.Sprint("kept ", stmtKeep-2) {
		t.Fatalf("victim %q after a use of the oldest, want the next oldest", v.key)
	}
	if c.admits(&stmtEntry{uses: 3}) {
		t.Fatal("a text used as often as the kept one it would displace was admitted")
	}
	if !c.admits(&stmtEntry{uses: 4}) {
		t.Fatal("a text used more often than the least recently used kept one was refused")
	}
	c.kept = stmtKeep - 1
	if !c.admits(&stmtEntry{uses: stmtAfter}) {
		t.Fatal("a text was refused while fewer than stmtKeep were kept")
	}
}
