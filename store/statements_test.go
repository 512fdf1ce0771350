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
	c := &stmtCache{m: map[string]*stmtEntry{}}
	for i := range stmtKeep {
		c.m[fmt.Sprint("kept ", i)] = &stmtEntry{st: new(sqlx.Stmt), uses: 3, last: uint64(stmtKeep - i)}
	}
	c.m["unprepared, older"] = &stmtEntry{uses: 9, last: 0}
	c.kept = stmtKeep
	if k, _ := c.victim(); k != fmt.Sprint("kept ", stmtKeep-1) {
		t.Fatalf("victim %q, want the least recently used kept statement", k)
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
