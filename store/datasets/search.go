package datasets

import (
	"context"
	"errors"
	"strings"

	"dataplatform/store"
	"dataplatform/store/ingest"
	"dataplatform/store/jobs"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// KindSearchIndex is the job that builds a dataset table's indexes: the full-text search
// index (GIN on SearchDocument) and a btree per filterable column, after the dataset is
// active and after schema changes; the load does not wait for it, and writes are not held
// up by it (createIndex).
const KindSearchIndex = "dataset.search_index"

// EnqueueSearchIndex adds the job in tx.
func EnqueueSearchIndex(ctx context.Context, tx sqlx.ExecerContext, d *store.Dataset) error {
	_, err := jobs.Enqueue(ctx, tx, jobs.New{Kind: KindSearchIndex, OrgID: d.OrgID, ResourceType: "dataset", ResourceID: d.ID,
		Payload: Payload{DatasetID: d.ID}}, d.UpdatedAt)
	return err
}

// Indexer runs search index jobs.
type Indexer struct{ Store *store.Store }

// Register installs the handler on r.
func (x *Indexer) Register(r *jobs.Runner) { r.Register(KindSearchIndex, x.handle) }

func (x *Indexer) handle(ctx context.Context, j *jobs.Job, p *jobs.Progress) error {
	var pl Payload
	if err := j.Decode(&pl); err != nil {
		return jobs.Permanent(err)
	}
	d, err := store.DatasetByID(ctx, x.Store.DB, pl.DatasetID, false)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (d.Type != "file" || d.Status != "active")) {
		return nil
	} else if err != nil {
		return err
	}
	tables, err := Tables(d)
	if err != nil {
		return err
	}
	doc := SearchDocument(tables[0].Columns)
	name := SearchIndexName(d.ID, doc)
	// Older search indexes of the table (an earlier schema) go.
	var old []string
	if err := x.Store.DB.SelectContext(ctx, &old, `SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = $2
		AND indexname LIKE $3 AND indexname <> $4`, d.TableSchema, d.ID, strings.ReplaceAll(d.ID, "_", `\_`)+`\_search\_%`, name); err != nil {
		return err
	}
	for _, o := range old {
		if _, err := x.Store.DB.ExecContext(ctx, `DROP INDEX CONCURRENTLY IF EXISTS `+Table(d.TableSchema, o)); err != nil {
			return err
		}
	}
	if doc == "" {
		// No text to search: the column indexes still come.
		return x.columnIndexes(ctx, d, tables[0], p)
	}
	p.Set(ctx, "indexing", 0, 0, "building the full-text search index")
	// An interrupted CONCURRENTLY build leaves an invalid index: drop it before building again.
	var invalid bool
	if err := x.Store.DB.GetContext(ctx, &invalid, `SELECT EXISTS (SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = $2 AND NOT i.indisvalid)`, d.TableSchema, name); err != nil {
		return err
	}
	if invalid {
		if _, err := x.Store.DB.ExecContext(ctx, `DROP INDEX CONCURRENTLY IF EXISTS `+Table(d.TableSchema, name)); err != nil {
			return err
		}
	}
	if err := x.createIndex(ctx, d, name, `USING gin ((`+doc+`))`); err != nil {
		return err
	}
	return x.columnIndexes(ctx, d, tables[0], p)
}

// smallTable is the most rows a table may have for its indexes to be built in place.
const smallTable int64 = 10000

// createIndex builds an index of d's table. A small table's is built in place, under a lock
// of its writes for the few milliseconds that takes: CONCURRENTLY first waits for every older
// transaction of the database, other datasets' loads among them, so that while files load one
// after another a new dataset's indexes waited for all of them. A small table whose lock is
// not had within a second, and a larger one, are indexed CONCURRENTLY, writes going on.
func (x *Indexer) createIndex(ctx context.Context, d *store.Dataset, name, def string) error {
	index := `INDEX IF NOT EXISTS ` + pq.QuoteIdentifier(name) + ` ON ` + Table(d.TableSchema, d.ID) + ` ` + def
	if d.RowCount != nil && *d.RowCount <= smallTable {
		err := x.Store.Tx(ctx, func(tx *sqlx.Tx) error {
			if _, err := tx.ExecContext(ctx, `SET LOCAL lock_timeout = '1s'`); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `CREATE `+index)
			return err
		})
		var pe *pq.Error
		if !errors.As(err, &pe) || pe.Code != "55P03" { // lock_not_available: concurrently, then
			return err
		}
	}
	_, err := x.Store.DB.ExecContext(ctx, `CREATE `+strings.Replace(index, "INDEX ", "INDEX CONCURRENTLY ", 1))
	return err
}

// maxColumnIndexes bounds the column indexes of one table.
const maxColumnIndexes = 32

// columnIndexes gives the columns lists filter and sort on a btree index each (and the
// default sort, newest first, one of its own), so that a filtered, sorted page of a large
// table reads a few index pages instead of the table. Each column's index ends with the key,
// as a list's order does: an ascending sort on a column of many equal values then reads a
// page of them in order (and a cursor starts among them), where an index of the column alone
// made PostgreSQL read and sort every row of the value. JSON and array columns (matched by
// containment) and booleans (two values) get none; a text column whose values are too long
// for a btree keeps none, and the others are built anyway.
func (x *Indexer) columnIndexes(ctx context.Context, d *store.Dataset, t TableDef, p *jobs.Progress) error {
	type ix struct{ name, def string }
	// The default order: newest first, then the key (the records' own key column, or id).
	key := KeyOf(t.Columns)
	list := []ix{{constraintName(d.ID + "_created_" + key + "_idx"), `(created_at DESC, ` + pq.QuoteIdentifier(key) + `)`}}
	for _, c := range t.Columns {
		if c.Name == key {
			continue // its primary key index serves it
		}
		switch c.Type {
		case ingest.Integer, ingest.BigInt, ingest.Numeric, ingest.Date, ingest.Timestamptz, ingest.UUID, ingest.Text:
			if len(list) <= maxColumnIndexes {
				list = append(list, ix{constraintName(d.ID + "_" + c.Name + "_idx"), `(` + pq.QuoteIdentifier(c.Name) + `, ` + pq.QuoteIdentifier(key) + `)`})
			}
		}
	}
	// A column's index of the column alone (made before indexes ended with the key) is
	// built again under its name (rebuildIndex).
	var present []struct {
		Name    string `db:"relname"`
		Columns int    `db:"indnatts"`
	}
	if err := x.Store.DB.SelectContext(ctx, &present, `SELECT c.relname, i.indnatts FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		WHERE i.indrelid = $1::regclass`, Table(d.TableSchema, d.ID)); err != nil {
		return err
	}
	columns := map[string]int{} // of each index present, by name
	for _, ix := range present {
		columns[ix.Name] = ix.Columns
	}
	var failed []string
	for i, x2 := range list {
		p.Set(ctx, "indexing", int64(i), int64(len(list)), "building column indexes")
		var err error
		switch n, ok := columns[x2.name]; {
		case ok && n == 1:
			err = x.rebuildIndex(ctx, d, x2.name, x2.def)
		case !ok && columns[nextName(x2.name)] > 0:
			// A rebuild stopped between the drop and the rename: its new index goes (it may be
			// half built), and the name's is built anew.
			if _, err = x.Store.DB.ExecContext(ctx, `DROP INDEX CONCURRENTLY IF EXISTS `+Table(d.TableSchema, nextName(x2.name))); err == nil {
				err = x.createIndex(ctx, d, x2.name, x2.def)
			}
		default:
			err = x.createIndex(ctx, d, x2.name, x2.def)
		}
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			return err
		}
		// A value too long for a btree, or the table changed meanwhile: this index is left
		// out (its invalid remains dropped), the others still come.
		failed = append(failed, x2.name+": "+err.Error())
		_, _ = x.Store.DB.ExecContext(ctx, `DROP INDEX CONCURRENTLY IF EXISTS `+Table(d.TableSchema, x2.name))
	}
	if len(failed) > 0 {
		p.Set(ctx, "complete", int64(len(list)-len(failed)), int64(len(list)), "not indexed: "+strings.Join(failed, "; "))
	}
	return nil
}

// rebuildIndex replaces the index name of d's table by one of def under the same name: the
// new one is built beside it (writes going on), then the old one dropped and the new renamed.
func (x *Indexer) rebuildIndex(ctx context.Context, d *store.Dataset, name, def string) error {
	next := nextName(name)
	// An interrupted rebuild's half-built index goes first.
	if _, err := x.Store.DB.ExecContext(ctx, `DROP INDEX CONCURRENTLY IF EXISTS `+Table(d.TableSchema, next)); err != nil {
		return err
	}
	if err := x.createIndex(ctx, d, next, def); err != nil {
		if ctx.Err() != nil {
			return err
		}
		// Values too long for a btree with the key beside them: the column keeps the index it
		// has (the caller would drop it as failed).
		_, err = x.Store.DB.ExecContext(ctx, `DROP INDEX CONCURRENTLY IF EXISTS `+Table(d.TableSchema, next))
		return err
	}
	if _, err := x.Store.DB.ExecContext(ctx, `DROP INDEX CONCURRENTLY IF EXISTS `+Table(d.TableSchema, name)); err != nil {
		return err
	}
	_, err := x.Store.DB.ExecContext(ctx, `ALTER INDEX `+Table(d.TableSchema, next)+` RENAME TO `+pq.QuoteIdentifier(name))
	return err
}

// nextName is the name an index is rebuilt under before it takes name's place.
func nextName(name string) string { return constraintName(name + "_next") }
