package queries

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"dataplatform/store/usersql"
)

// Executed is a query as the API answers it and as the history keeps it.
type Executed struct {
	QueryID       string       `json:"query_id"`
	Status        string       `json:"status"`
	Type          string       `json:"type"`
	OriginalQuery string       `json:"original_query"`
	GeneratedSQL  string       `json:"generated_sql,omitempty"`
	Results       *Results     `json:"results,omitempty"`
	Explanation   *Explanation `json:"explanation,omitempty"`
	Metadata      *Metadata    `json:"metadata,omitempty"`
	Error         *Failure     `json:"error,omitempty"`
	Warnings      []string     `json:"warnings,omitempty"`
	CreatedAt     time.Time    `json:"created_at"`
}

// Results are the rows a query returned.
type Results struct {
	Columns        []usersql.QueryColumn `json:"columns"`
	Rows           [][]any               `json:"rows"`
	RowCount       int                   `json:"row_count"`
	Truncated      bool                  `json:"truncated"`
	StoredRowCount *int                  `json:"stored_row_count,omitempty"`
}

// Explanation says how the query was read.
type Explanation struct {
	Summary      string          `json:"summary"`
	Steps        []string        `json:"steps"`
	DatasetsUsed []Used          `json:"datasets_used"`
	QueryPlan    json.RawMessage `json:"query_plan,omitempty"`
}

// Metadata is what running the query cost.
type Metadata struct {
	ExecutionTimeMS int64  `json:"execution_time_ms"`
	RowsScanned     int64  `json:"rows_scanned"`
	BytesScanned    int64  `json:"bytes_scanned"`
	CacheHit        bool   `json:"cache_hit"`
	QueryPlanHash   string `json:"query_plan_hash"`
}

// Failure is why a query failed, as its API error said.
type Failure struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// StoredRows and StoredBytes are how many result rows, and at most how many bytes of them
// as JSON, the history keeps of a query.
const (
	StoredRows  = 1000
	StoredBytes = 1 << 20
)

// Keep reports whether the history keeps a row of size bytes after rows rows of stored
// bytes (and adds it to stored when so). A row refused ends the rows kept: they are the
// first ones.
func Keep(rows int, stored *int64, size int64) bool {
	if rows >= StoredRows || *stored+size > StoredBytes {
		*stored = StoredBytes + 1
		return false
	}
	*stored += size
	return true
}

// ForHistory is e with its rows cut to StoredRows and StoredBytes, and a warning when they
// were.
func (e Executed) ForHistory() Executed {
	if e.Results != nil {
		r := *e.Results
		var stored int64
		n := 0
		for n < len(r.Rows) && Keep(n, &stored, usersql.RowBytes(r.Rows[n])) {
			n++
		}
		r.Rows = r.Rows[:n]
		r.StoredRowCount = &n
		e.Results = &r
		if n < r.RowCount {
			e.Warnings = append(e.Warnings[:len(e.Warnings):len(e.Warnings)], fmt.Sprintf("the history keeps the first %d of the %d row(s) "+
				"returned (at most 1,000 rows and 1 MiB): run, stream or export the query for every row", n, r.RowCount))
		}
	}
	return e
}

// PlanFacts reads an EXPLAIN (FORMAT JSON) answer: the plan's root node, the rows and bytes
// its scans are estimated to read, and a hash of its shape (node types and relations).
func PlanFacts(explain json.RawMessage) (root json.RawMessage, rows, bytes int64, hash string) {
	var doc []struct {
		Plan json.RawMessage `json:"Plan"`
	}
	if json.Unmarshal(explain, &doc) != nil || len(doc) == 0 {
		return nil, 0, 0, ""
	}
	var shape strings.Builder
	var walk func(json.RawMessage)
	walk = func(raw json.RawMessage) {
		var n struct {
			Type     string            `json:"Node Type"`
			Relation string            `json:"Relation Name"`
			Rows     float64           `json:"Plan Rows"`
			Width    float64           `json:"Plan Width"`
			Plans    []json.RawMessage `json:"Plans"`
		}
		if json.Unmarshal(raw, &n) != nil {
			return
		}
		shape.WriteString("(" + n.Type + " " + n.Relation)
		if n.Relation != "" {
			rows += int64(n.Rows)
			bytes += int64(n.Rows * n.Width)
		}
		for _, c := range n.Plans {
			walk(c)
		}
		shape.WriteString(")")
	}
	walk(doc[0].Plan)
	sum := sha256.Sum256([]byte(shape.String()))
	return doc[0].Plan, rows, bytes, hex.EncodeToString(sum[:8])
}
