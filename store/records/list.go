// Lists: sort keys, cursors, pages and their counts.

package records

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"dataplatform/store/datasets"
	"dataplatform/store/ingest"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// ListQuery is a list request.
type ListQuery struct {
	Page, Limit int
	Sort        string
	Fields      []string
	Search      string
	Filters     []Filter
	Cursor      string // wins over Page
	Count       string // exact, planned or estimated (default)
	Links       string // an SQL expression for each record's _links ("": none)
}

type sortKey struct {
	field string
	desc  bool
}

// DefaultSort is the order of a list that names none: newest first for uploaded datasets, the
// key named ascending after it (a file's rows in its order, as the default-order index has
// them), by key (or the first column that sorts) for connected tables.
func (t *Table) DefaultSort() string {
	if t.System() {
		if t.key == "" {
			return "-created_at"
		}
		return "-created_at," + t.key
	}
	if t.key != "" {
		return t.key
	}
	for _, c := range t.Columns {
		if c.Type != ingest.JSONB && !c.Type.IsArray() {
			return c.Name
		}
	}
	return ""
}

// sortKeys parses sort (fields, - for descending; default DefaultSort) and ends it with the
// key, which makes the order total (keyset pagination needs that). The key goes the way of
// the last field: an index of a field and the key (see columnIndexes) then serves the order
// either way, read backwards for a descending sort, where a key always ascending would have
// every record of a shared value read and sorted to find a page of them.
func (t *Table) sortKeys(sort string) ([]sortKey, []string, error) {
	if strings.TrimSpace(sort) == "" {
		sort = t.DefaultSort()
	}
	if sort == "" {
		return nil, nil, nil
	}
	var keys []sortKey
	var names []string
	for _, s := range strings.Split(sort, ",") {
		s = strings.TrimSpace(s)
		desc := strings.HasPrefix(s, "-")
		f := strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
		c, ok := t.cols[f]
		if !ok {
			return nil, nil, &FieldError{"query.sort", "unknown_field", "no field " + strconv.Quote(f)}
		}
		if c.Type == ingest.JSONB || c.Type.IsArray() {
			return nil, nil, &FieldError{"query.sort", "not_sortable", f + " cannot be sorted"}
		}
		if slices.ContainsFunc(keys, func(k sortKey) bool { return k.field == f }) {
			return nil, nil, &FieldError{"query.sort", "duplicate", f + " is sorted twice"}
		}
		keys = append(keys, sortKey{f, desc})
		names = append(names, s)
	}
	if t.key != "" && !slices.ContainsFunc(keys, func(k sortKey) bool { return k.field == t.key }) {
		keys = append(keys, sortKey{t.key, len(keys) > 0 && keys[len(keys)-1].desc})
	}
	return keys, names, nil
}

// orderSQL is the ORDER BY of keys; flip reverses it (to read the page before a cursor).
// Ascending keys put NULLs last, descending first, so flipping mirrors them exactly.
func orderSQL(keys []sortKey, flip bool) string {
	if len(keys) == 0 {
		return "true"
	}
	terms := make([]string, len(keys))
	for i, k := range keys {
		if k.desc != flip {
			terms[i] = pq.QuoteIdentifier(k.field) + " DESC NULLS FIRST"
		} else {
			terms[i] = pq.QuoteIdentifier(k.field) + " ASC NULLS LAST"
		}
	}
	return strings.Join(terms, ", ")
}

// Cursor marks a position in a sorted list: the sort key values of a boundary row.
type Cursor struct {
	Dataset string            `json:"d"`
	Sort    string            `json:"s"`
	Values  []json.RawMessage `json:"v"`
	Before  bool              `json:"b,omitempty"` // the page before the row, not after it
}

// Encode makes the opaque string clients send back.
func (c Cursor) Encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeCursor reads a cursor of this dataset and sort.
func DecodeCursor(s, dataset, sort string) (*Cursor, error) {
	bad := &FieldError{"query.cursor", "invalid_cursor", "the cursor is not one this list gave"}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, bad
	}
	var c Cursor
	if json.Unmarshal(b, &c) != nil {
		return nil, bad
	}
	if c.Dataset != dataset {
		return nil, &FieldError{"query.cursor", "invalid_cursor", "the cursor belongs to another dataset"}
	}
	if c.Sort != sort {
		return nil, &FieldError{"query.cursor", "invalid_cursor", "the cursor was made for another sort; send the same sort with it"}
	}
	return &c, nil
}

// after is the condition "comes after the row with these key values" in the order of keys
// (flipped: before it), NULL-aware, as a chain of (k1 > v1) OR (k1 = v1 AND (k2 > v2 OR ...)).
// PostgreSQL cannot start an index scan from such a chain, so a page far into the order
// would read every row before it: the chain goes with a bound on the first key alone
// (k1 >= v1), which it can. Sorted by one field and the key, both the same way, the bound
// is on both ((k1, key) > (v1, v2)): an index of the two (a column's, see columnIndexes)
// then starts at the cursor itself, not at the first of the rows equal to it. NULLs sort
// last ascending, so after a value of a column with NULLs no one range holds every row that
// follows: the bound holds for the values, and nulls ("k1 IS NULL", else "") selects the
// NULLs that come after them all, to be read apart.
func (t *Table) after(b *builder, keys []sortKey, vals []json.RawMessage, flip bool) (cond, nulls string, err error) {
	bad := &FieldError{"query.cursor", "invalid_cursor", "the cursor is not one this list gave"}
	if len(vals) != len(keys) {
		return "", "", bad
	}
	cond = "false"
	lead := ""
	params := make([]string, len(keys)) // each key's value as a parameter ("" for NULL)
	for i := len(keys) - 1; i >= 0; i-- {
		k := keys[i]
		c := t.cols[k.field]
		q := pq.QuoteIdentifier(k.field)
		dec := json.NewDecoder(strings.NewReader(string(vals[i])))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil {
			return "", "", bad
		}
		var gt, eq, p string
		if v == nil {
			eq = q + " IS NULL"
			if k.desc != flip { // NULLs first: anything non-null comes after
				gt = q + " IS NOT NULL"
			} else {
				gt = "false"
			}
		} else {
			text, _, err := c.Text(v)
			if err != nil {
				return "", "", bad
			}
			p = b.arg(text) + "::" + datasets.SQLType(c)
			params[i] = p
			eq = q + " = " + p
			if k.desc != flip {
				gt = q + " < " + p
			} else {
				gt = "(" + q + " > " + p + " OR " + q + " IS NULL)"
			}
		}
		cond = "(" + gt + " OR (" + eq + " AND " + cond + "))"
		if i > 0 {
			continue
		}
		switch { // the first key's bound (see above)
		case v == nil && k.desc == flip: // past a NULL, where NULLs come last: NULLs alone
			lead = eq
		case v != nil && k.desc != flip: // descending: NULLs came first
			lead = q + " <= " + p
		case v != nil: // ascending: the values, then any NULLs apart
			lead = q + " >= " + p
			if c.Nullable {
				nulls = q + " IS NULL"
			}
		}
	}
	if len(keys) == 2 && keys[1].field == t.key && keys[0].desc == keys[1].desc && params[0] != "" && params[1] != "" {
		op := " > "
		if keys[0].desc != flip {
			op = " < "
		}
		lead = "(" + pq.QuoteIdentifier(keys[0].field) + ", " + pq.QuoteIdentifier(t.key) + ")" + op + "(" + params[0] + ", " + params[1] + ")"
	}
	if lead != "" {
		cond = "(" + lead + " AND " + cond + ")"
	}
	return cond, nulls, nil
}

// Page is a page of a list.
type Page struct {
	Rows       []json.RawMessage // in buf: good until Release
	Total      int64
	Estimated  bool // Total is the planner's estimate
	Sort       []string
	Next, Prev string // cursors; "" when there is no such page
	buf        *[]byte
}

// pageBufs are the buffers pages are read into: a page is read on every list request, and a
// reused buffer spares the garbage collector a few pages' worth of bytes each time.
var pageBufs = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// Release hands the page's buffer back once its rows have been written (not needed for
// correctness: a page never released is garbage collected).
func (p *Page) Release() {
	if p.buf != nil && cap(*p.buf) <= 1<<20 {
		pageBufs.Put(p.buf)
	}
	p.buf, p.Rows = nil, nil
}

// CountThreshold is the table size (in PostgreSQL's statistics) up to which lists count
// exactly by default; larger tables get the planner's estimate (flagged total_estimated).
const CountThreshold = 100_000

// List returns a page of records as JSON objects: by page number, or after/before a cursor.
func (t *Table) List(ctx context.Context, q sqlx.QueryerContext, lq ListQuery) (*Page, error) {
	var b builder
	if err := t.where(&b, lq.Filters, lq.Search); err != nil {
		return nil, err
	}
	filtered := len(b.args) > 0
	keys, names, err := t.sortKeys(lq.Sort)
	if err != nil {
		return nil, err
	}
	sortSpec := strings.Join(names, ",")
	pg := &Page{Sort: names, Rows: []json.RawMessage{}}
	if pg.Total, pg.Estimated, err = t.count(ctx, q, &b, lq.Count); err != nil {
		return nil, err
	}
	conds := slices.Clone(b.conds)
	var nullConds []string // the NULLs after a cursor, read apart (see after)
	flip := false
	var cur *Cursor
	if lq.Cursor != "" && t.key == "" {
		return nil, &FieldError{"query.cursor", "invalid_cursor", "this table has no primary key to page by; use page"}
	}
	if lq.Cursor != "" {
		if cur, err = DecodeCursor(lq.Cursor, t.Name, sortSpec); err != nil {
			return nil, err
		}
		flip = cur.Before
		c, nulls, err := t.after(&b, keys, cur.Values, flip)
		if err != nil {
			return nil, err
		}
		if nulls != "" {
			nullConds = append(slices.Clone(conds), nulls)
		}
		conds = append(conds, c)
	}
	keyVals := make([]string, len(keys))
	for i, k := range keys {
		keyVals[i] = "r." + pq.QuoteIdentifier(k.field)
	}
	// The page's rows (r) hold the fields and the sort keys as stored; the record (x) is the
	// fields alone, in the order asked, made as every other record is (rowJSON), with its
	// _links last. The sort keys ride along beside it for the cursors. (PostgreSQL folds x
	// into r's projection: it costs no join.)
	cols, record := t.pageColumns(lq, keys)
	// Unfiltered, the limit is written in (an integer, and clients use few), and OFFSET only
	// past the first page: with both known PostgreSQL keeps one generic plan for the statement,
	// whose plan does not depend on its values (the cursor's bound is on the scan's own order).
	// A parameter in either makes it assume a tenth of the table is read, so a generic plan
	// never wins and it plans each execution anew: what a filtered page needs, as the best plan
	// for a rare value is not the one for a common one.
	limit, offset := strconv.Itoa(lq.Limit+1), ""
	if filtered {
		limit = b.arg(lq.Limit + 1)
	}
	if cur == nil && (lq.Page > 1 || filtered) {
		offset = ` OFFSET ` + b.arg((lq.Page-1)*lq.Limit)
	}
	sel := func(conds []string, keys []sortKey) string {
		return `SELECT ` + strings.Join(cols, ", ") + ` FROM ` + t.Qualified() + ` WHERE ` + strings.Join(conds, " AND ") +
			` ORDER BY ` + orderSQL(keys, flip) + ` LIMIT ` + limit
	}
	page := sel(conds, keys) + offset
	if nullConds != nil {
		// A page's worth of each part, merged in order. The NULLs are ordered by the keys after
		// the first: PostgreSQL does not know that the first is NULL throughout, and ordered by
		// it would sort every NULL row to find a page's worth.
		page = `(` + page + `) UNION ALL (` + sel(nullConds, keys[1:]) + `) ORDER BY ` + orderSQL(keys, flip) + ` LIMIT ` + limit
	}
	rows, err := q.QueryxContext(ctx, `SELECT to_json(x), json_build_array(`+strings.Join(keyVals, ", ")+`)
		FROM (`+page+`) r, LATERAL (SELECT `+strings.Join(record, ", ")+`) x`, b.args...)
	if err != nil {
		return nil, fmt.Errorf("list records: %w", err)
	}
	defer rows.Close()
	bounds, err := readPage(rows, pg, lq.Limit)
	if err != nil {
		return nil, err
	}
	more := len(pg.Rows) > lq.Limit
	if more {
		pg.Rows, bounds = pg.Rows[:lq.Limit], bounds[:lq.Limit]
	}
	if flip { // read backwards: put the page in order
		slices.Reverse(pg.Rows)
		slices.Reverse(bounds)
	}
	if len(pg.Rows) > 0 && t.key != "" {
		t.cursors(pg, bounds, sortSpec, more, flip, cur != nil, lq.Page)
	}
	return pg, nil
}

// pageColumns are the columns of a page's rows (r): the fields asked for and the sort keys as
// stored, and the record's parts (x): the fields alone, in the order asked, then _links.
func (t *Table) pageColumns(lq ListQuery, keys []sortKey) (cols, record []string) {
	cols, record = []string{"NULL"}, []string{}
	if len(lq.Fields) > 0 {
		cols, record = []string{columnList(lq.Fields)}, []string{t.rowJSON(lq.Fields, "r")}
	}
	for _, k := range keys {
		if !slices.Contains(lq.Fields, k.field) {
			cols = append(cols, pq.QuoteIdentifier(k.field))
		}
	}
	if lq.Links != "" {
		cols = append(cols, lq.Links+" AS _links")
		record = append(record, "r._links")
	}
	return cols, record
}

// readPage reads the page's records into pg.Rows and returns their sort keys. The rows are
// copied into one buffer (not one allocation per row and key): a page is read on every request.
func readPage(rows *sqlx.Rows, pg *Page, limit int) ([]json.RawMessage, error) {
	pg.buf = pageBufs.Get().(*[]byte)
	buf := (*pg.buf)[:0]
	defer func() { *pg.buf = buf }()
	ends := make([]int, 0, 2*(limit+1)) // of each record, then of its sort keys
	for rows.Next() {
		var j, k sql.RawBytes
		if err := rows.Scan(&j, &k); err != nil {
			return nil, fmt.Errorf("list records: %w", err)
		}
		buf = append(buf, j...)
		ends = append(ends, len(buf))
		buf = append(buf, k...)
		ends = append(ends, len(buf))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list records: %w", err)
	}
	bounds := make([]json.RawMessage, 0, len(ends)/2)
	for i, from := 0, 0; i < len(ends); i, from = i+2, ends[i+1] {
		pg.Rows = append(pg.Rows, buf[from:ends[i]:ends[i]])
		bounds = append(bounds, buf[ends[i]:ends[i+1]:ends[i+1]])
	}
	return bounds, nil
}

// cursors sets the page's cursors: after the last row when there is more that way (or when
// the page was come to from there); before the first when a page precedes it.
func (t *Table) cursors(pg *Page, bounds []json.RawMessage, sortSpec string, more, flip, fromCursor bool, page int) {
	cursorAt := func(i int, before bool) string {
		var vals []json.RawMessage
		_ = json.Unmarshal(bounds[i], &vals)
		return Cursor{Dataset: t.Name, Sort: sortSpec, Values: vals, Before: before}.Encode()
	}
	if (!flip && more) || (flip && fromCursor) {
		pg.Next = cursorAt(len(pg.Rows)-1, false)
	}
	if (flip && more) || (!flip && (fromCursor || page > 1)) {
		pg.Prev = cursorAt(0, true)
	}
}

// count is the number of rows matching b's conditions: exact, planned (the planner's
// estimate), or estimated (exact up to CountThreshold, planned beyond).
func (t *Table) count(ctx context.Context, q sqlx.QueryerContext, b *builder, mode string) (int64, bool, error) {
	where := ` WHERE ` + strings.Join(b.conds, " AND ")
	var n int64
	if mode == "exact" {
		n, err := t.exactCount(ctx, q, where, b.args)
		return n, false, err
	}
	// A planned count known from a moment ago answers at once: the planner's estimate of the
	// same question is asked again at most every few seconds.
	key := countKey(t.Qualified(), where, b.args)
	if n, ok := plannedCounts.get(key); ok {
		return n, true, nil
	}
	if mode != "planned" {
		// Estimated: exact on a table the statistics say is small, planned on a large one
		// (counting a large table costs as much as a scan of it, on every page).
		// The table's size in the statistics (an estimate itself, moved by ANALYZE) is kept as
		// planned counts are: asking for it on every page was a round trip of its own.
		rel, ok := tableSizes.get(t.Qualified())
		if !ok {
			var size float64
			if err := sqlx.GetContext(ctx, q, &size, `SELECT reltuples FROM pg_class WHERE oid = $1::regclass`, t.Qualified()); err != nil {
				return 0, false, err
			}
			rel = int64(size)
			tableSizes.put(t.Qualified(), rel)
		}
		if rel <= CountThreshold {
			n, err := t.exactCount(ctx, q, where, b.args)
			return n, false, err
		}
	}
	rows, err := plannedRows(ctx, q, `SELECT 1 FROM `+t.Qualified()+where, b.args)
	if err != nil {
		return 0, false, err
	}
	n = int64(rows)
	plannedCounts.put(key, n)
	return n, true, nil
}

// plannedRows is the planner's estimate of the rows query returns.
func plannedRows(ctx context.Context, q sqlx.QueryerContext, query string, args []any) (float64, error) {
	var plan []byte
	if err := sqlx.GetContext(ctx, q, &plan, `EXPLAIN (FORMAT JSON) `+query, args...); err != nil {
		return 0, err
	}
	var p []struct {
		Plan struct {
			Rows float64 `json:"Plan Rows"`
		} `json:"Plan"`
	}
	if err := json.Unmarshal(plan, &p); err != nil {
		return 0, fmt.Errorf("the plan: %w", err)
	}
	if len(p) == 0 {
		return 0, errors.New("an empty plan")
	}
	return p[0].Plan.Rows, nil
}

// exactCount is the number of rows of the table matching where (with its args). An uploaded
// table's count is kept with the newest change of its dataset when it was counted: while its
// change trigger is on, every change of its rows is in the change log (platform.record_changes,
// numbered at commit in commit order), so while the newest change is the same the count is too.
// With a count kept, a statement the same for every dataset (prepared, so not planned again:
// a count's statement is, with the table's indexes, at each execution) reads the newest
// change; only when it differs does one statement, in one snapshot, read it again and count.
// A list page of a table that has not changed costs an index lookup instead of a scan.
func (t *Table) exactCount(ctx context.Context, q sqlx.QueryerContext, where string, args []any) (int64, error) {
	var n int64
	if !t.System() { // a connected table or a view: changes made elsewhere are not logged
		err := sqlx.GetContext(ctx, q, &n, `SELECT count(*) FROM `+t.Qualified()+where, args...)
		return n, err
	}
	key := countKey(t.shape, where, args)
	kept, ok := exactCounts.get(key)
	if !ok {
		kept = seqCount{seq: -2} // no newest change is -2
	}
	if ok {
		var seq int64
		if err := q.QueryRowxContext(ctx, `SELECT `+newestChange("$1", "$2"), t.Relation, t.Qualified()).Scan(&seq); err != nil {
			return 0, err
		}
		if seq == kept.seq {
			return kept.n, nil
		}
	}
	i := len(args)
	var got seqCount
	err := q.QueryRowxContext(ctx, `SELECT s.seq, CASE WHEN s.seq = $`+strconv.Itoa(i+1)+` THEN $`+strconv.Itoa(i+2)+`::bigint
		ELSE (SELECT count(*) FROM `+t.Qualified()+where+`) END
		FROM (SELECT `+newestChange(`$`+strconv.Itoa(i+3), `$`+strconv.Itoa(i+4))+` AS seq) s`,
		append(slices.Clip(args), kept.seq, kept.n, t.Relation, t.Qualified())...).Scan(&got.seq, &got.n)
	if err != nil {
		return 0, err
	}
	if got.seq >= 0 && got != kept {
		exactCounts.put(key, got)
	}
	return got.n, nil
}

// newestChange is the SQL of the newest change of dataset ds (a parameter) whose table is rel
// (a parameter, its qualified name): -1, so that the rows are counted and the count not
// kept, when the table's change trigger is missing or disabled, or a change is not numbered
// yet (the caller's own transaction's: others' are invisible until their commit numbers them).
func newestChange(ds, rel string) string {
	return `CASE WHEN NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = ` + rel + `::regclass AND tgname = 'dp_changes' AND tgenabled IN ('O', 'A'))
		OR EXISTS (SELECT 1 FROM platform.record_changes WHERE dataset_id = ` + ds + ` AND seq IS NULL) THEN -1
		ELSE (SELECT coalesce(max(seq), 0) FROM platform.record_changes WHERE dataset_id = ` + ds + `) END`
}

// countKey names a count of table (its name or shape) under where and its arguments, each
// in Go syntax: values are quoted and typed, so two lists of them never read alike (Sprint
// ran "north", "PX-907" and "northP", "X-907" together into one key).
func countKey(table, where string, args []any) string {
	return table + where + fmt.Sprintf("%#v", args)
}

// seqCount is an exact count and the newest change of its dataset when it was made.
type seqCount struct{ seq, n int64 }

// exactCounts keeps exact counts by table definition, conditions and arguments, bounded.
var exactCounts = &bounded[seqCount]{m: map[string]seqCount{}}

// bounded is a map of at most 10,000 entries; past that, a tenth of them (any) go.
type bounded[V any] struct {
	mu sync.Mutex
	m  map[string]V
}

func (c *bounded[V]) get(k string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok
}

func (c *bounded[V]) put(k string, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= 10000 {
		for x := range c.m {
			delete(c.m, x)
			if len(c.m) < 9000 {
				break
			}
		}
	}
	c.m[k] = v
}

// countCache keeps planned counts for a few seconds (they are estimates anyway), bounded.
type countCache struct{ bounded[countEntry] }

type countEntry struct {
	n       int64
	expires time.Time
}

var plannedCounts = &countCache{bounded[countEntry]{m: map[string]countEntry{}}}

// tableSizes keeps each table's reltuples (by qualified name) for countTTL.
var tableSizes = &countCache{bounded[countEntry]{m: map[string]countEntry{}}}

// countTTL is how long a planned count is used before the planner is asked again.
const countTTL = 5 * time.Second

// get is the estimate kept for k. Once it expires, the first caller is told to ask the planner
// again while the others keep getting it (no crowd of EXPLAINs every few seconds).
func (c *countCache) get(k string) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if !ok {
		return 0, false
	}
	if now := time.Now(); !now.Before(e.expires) {
		e.expires = now.Add(countTTL)
		c.m[k] = e
		return 0, false
	}
	return e.n, true
}

func (c *countCache) put(k string, n int64) {
	c.bounded.put(k, countEntry{n, time.Now().Add(countTTL)})
}
