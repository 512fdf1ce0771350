package datasets

import (
	"context"
	"errors"
	"strings"

	"dataplatform/jobs"
	"dataplatform/store"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// KindSearchIndex is the job that builds a dataset table's full-text search index (GIN on
// SearchDocument), after the dataset is active and after schema changes: CREATE INDEX
// CONCURRENTLY does not block writes, and the load does not wait for it.
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
		return nil
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
	_, err = x.Store.DB.ExecContext(ctx, `CREATE INDEX CONCURRENTLY IF NOT EXISTS `+pq.QuoteIdentifier(name)+` ON `+Table(d.TableSchema, d.ID)+
		` USING gin ((`+doc+`))`)
	return err
}
