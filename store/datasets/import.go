package datasets

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"dataplatform/store"
	"dataplatform/store/ingest"
	"dataplatform/store/jobs"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// KindImport is the job kind that imports an uploaded file into an existing file dataset.
const KindImport = "dataset.import"

// Import modes.
const (
	ModeAppend  = "append"  // insert every row
	ModeUpsert  = "upsert"  // update the records whose key is in the file, insert the others
	ModeReplace = "replace" // afterwards the table holds exactly the file's rows
)

// ImportPayload is the import job's payload.
type ImportPayload struct {
	DatasetID  string `json:"dataset_id"`
	UploadID   string `json:"upload_id"`
	StorageKey string `json:"storage_key"`
	Format     string `json:"format"`
	Mode       string `json:"mode"`
	AddColumns bool   `json:"add_columns,omitempty"`
	// UserID asked for the import: the author of the schema change add_columns makes.
	UserID string `json:"user_id,omitempty"`
}

// ImportResult is what an import did, as its events tell it.
type ImportResult struct {
	Mode      string `json:"mode"`
	JobID     string `json:"job_id"`
	Inserted  int64  `json:"inserted"`
	Updated   int64  `json:"updated"`
	Unchanged int64  `json:"unchanged"`
	Deleted   int64  `json:"deleted"`
}

// Importer runs import jobs.
type Importer struct {
	Store      *store.Store
	Clock      func() time.Time
	Log        *slog.Logger
	UploadPath func(storageKey string) string
	// Around runs a change of the dataset table's columns (add_columns) in tx, keeping the
	// saved views that read the dataset (views.Around, which this package cannot import);
	// nil runs it as is.
	Around func(ctx context.Context, tx *sqlx.Tx, d *store.Dataset, now time.Time, ddl func() error) error
}

// Register installs the import handler and its end hook on r.
func (im *Importer) Register(r *jobs.Runner) {
	r.Register(KindImport, im.handle)
	r.OnFinish(func(ctx context.Context, j *jobs.Job, err error) {
		if j.Kind != KindImport {
			return
		}
		var pl ImportPayload
		if j.Decode(&pl) != nil {
			return
		}
		if err != nil {
			im.fail(ctx, j, &pl, err)
		}
		// The rows are in the table (or the import failed for good): the file is not needed
		// again. Its upload row stays, claimed, so that its file_id is not taken twice.
		if pl.StorageKey != "" {
			if rerr := os.Remove(im.UploadPath(pl.StorageKey)); rerr != nil && !os.IsNotExist(rerr) {
				im.Log.Warn("removing an imported upload's file", "upload_id", pl.UploadID, "error", rerr)
			}
		}
	})
}

// HeaderSample is how many records of a file the check before an import reads (CheckImport):
// enough for a JSON file's keys, cheap for any file.
const HeaderSample = 100

// CheckImport reads the header (the first records) of the file at path and checks that its
// columns fit dataset d for an import in mode: a *Misfits error when they do not, an
// *ingest.RowError or *ingest.FormatError when the file cannot be read.
func CheckImport(path, format string, d *store.Dataset, mode string, addColumns bool) error {
	var cols []ingest.Column
	if err := json.Unmarshal([]byte(d.Columns), &cols); err != nil {
		return err
	}
	schema, err := ingest.InferSample(path, ingest.Format(format), HeaderSample)
	if err != nil {
		return err
	}
	_, err = fitColumns(cols, schema.Columns, mode, addColumns, keyGenerated(cols))
	return err
}

// Misfit is one way a file's columns do not fit a dataset's.
type Misfit struct {
	Column  string // the name in the file (the dataset's name for a column the file lacks); "" for the mode
	Code    string // unknown_column, missing_required, missing_key, duplicate_column, too_many_columns, no_key
	Message string
}

// Misfits is the error of a file whose columns do not fit the dataset.
type Misfits []Misfit

func (m Misfits) Error() string {
	msgs := make([]string, len(m))
	for i, x := range m {
		msgs[i] = x.Message
	}
	return strings.Join(msgs, "; ")
}

// importPlan is how a file's columns become the dataset's.
type importPlan struct {
	// read has one column per file column, in the file's order: the dataset's column it fills
	// (its name, type and constraints; Original is the file's name), an added column, or a
	// skipped system field of an export.
	read    []ingest.Column
	into    []ingest.Column // the dataset's columns the file fills, added ones included, in read order
	added   []ingest.Column // columns add_columns adds
	missing []ingest.Column // the dataset's columns the file does not have
	key     *ingest.Column  // the dataset's user key; nil when records have the generated id
	keyIn   bool            // the file has the key column
}

// skipPrefix names the staging columns of skipped fields: never a column name (a dot).
const skipPrefix = "dp.skip."

// systemFields are the fields an export of the dataset has that an import sets itself.
var systemFields = []string{"created_at", "updated_at", "deleted_at", "version"}

// keyGenerated reports whether the dataset generates its user key when a record has none
// (an integer key is an identity column).
func keyGenerated(cols []ingest.Column) bool {
	k, ok := UserKey(cols)
	return ok && (k.Type == ingest.Integer || k.Type == ingest.BigInt)
}

// fitColumns matches the file's columns (as inference names them: Name normalised, Original
// the file's) to the dataset's cols: by the file's name against a column's original name, or
// the normalised name against its name or its normalised original name.
func fitColumns(cols, file []ingest.Column, mode string, addColumns, keyGen bool) (*importPlan, error) {
	plan := &importPlan{}
	if k, ok := UserKey(cols); ok {
		plan.key = &k
	}
	var bad Misfits
	if mode == ModeUpsert && plan.key == nil {
		bad = append(bad, Misfit{Code: "no_key", Message: "upsert matches records by the dataset's key column, and this dataset's records have only " +
			"the generated id; use append or replace"})
	}
	norm := func(s string) string { return ingest.Identifiers([]string{s})[0] }
	from := make([]int, len(cols)) // file column filling each dataset column, -1 for none
	for i := range from {
		from[i] = -1
	}
	for i, f := range file {
		j := slices.IndexFunc(cols, func(c ingest.Column) bool { return c.Original == f.Original })
		if j < 0 {
			j = slices.IndexFunc(cols, func(c ingest.Column) bool { return c.Name == f.Name || norm(c.Original) == f.Name })
		}
		switch {
		case j >= 0 && from[j] >= 0:
			bad = append(bad, Misfit{f.Original, "duplicate_column", fmt.Sprintf("the file's columns %q and %q are both column %s of the dataset",
				file[from[j]].Original, f.Original, cols[j].Name)})
		case j >= 0:
			from[j] = i
			c := cols[j]
			c.Original, c.NullCount = f.Original, 0
			plan.read = append(plan.read, c)
			plan.into = append(plan.into, c)
			if c.Key {
				plan.keyIn = true
			}
		case slices.Contains(systemFields, strings.ToLower(f.Original)) || strings.EqualFold(f.Original, "id") && plan.key == nil:
			plan.read = append(plan.read, ingest.Column{Name: skipPrefix + strconv.Itoa(i), Original: f.Original, Type: ingest.Text, Nullable: true})
		case addColumns:
			n := ingest.Column{Name: f.Name, Original: f.Original, Type: f.Type, Nullable: true, MaxLength: f.MaxLength}
			plan.read = append(plan.read, n)
			plan.into = append(plan.into, n)
			plan.added = append(plan.added, n)
		default:
			bad = append(bad, Misfit{f.Original, "unknown_column", fmt.Sprintf("the file's column %q is not a column of the dataset "+
				"(send add_columns: true to add it)", f.Original)})
		}
	}
	if len(cols)+len(plan.added) > ingest.MaxColumns {
		bad = append(bad, Misfit{"", "too_many_columns", fmt.Sprintf("adding %d columns would make more than %d", len(plan.added), ingest.MaxColumns)})
	}
	for j, c := range cols {
		if from[j] >= 0 {
			continue
		}
		plan.missing = append(plan.missing, c)
		required := !c.Nullable && c.DefaultValue() == nil
		switch {
		case c.Key && mode == ModeUpsert:
			bad = append(bad, Misfit{c.Name, "missing_key", "upsert matches records by the key column " + c.Name + ", which the file does not have"})
		case c.Key && keyGen:
			// the dataset generates the keys
		case required && mode != ModeUpsert:
			bad = append(bad, Misfit{c.Name, "missing_required", "the dataset's column " + c.Name + " is required and has no default, and the file does not have it"})
		}
	}
	if len(bad) > 0 {
		return nil, bad
	}
	return plan, nil
}

// handle imports the file in one transaction: the dataset's rows, columns, statistics and
// status change together or not at all, and a retry starts over.
func (im *Importer) handle(ctx context.Context, j *jobs.Job, p *jobs.Progress) error {
	var pl ImportPayload
	if err := j.Decode(&pl); err != nil {
		return jobs.Permanent(err)
	}
	d, err := store.DatasetByID(ctx, im.Store.DB, pl.DatasetID, false)
	if errors.Is(err, store.ErrNotFound) {
		return nil // deleted meanwhile
	} else if err != nil {
		return err
	}
	if !importing(d, j) {
		return nil // a previous attempt finished it
	}
	// One connection: COPY streams through its driver connection, inside the transaction.
	conn, err := im.Store.DB.Connx(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	phases := &phaseClock{last: time.Now()}
	tx, err := lockWriters(ctx, conn, Table(d.TableSchema, d.ID), p)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	phases.mark("wait")
	if err := im.run(ctx, conn, tx, j, &pl, p, phases); err != nil {
		return err
	}
	return tx.Commit()
}

// lockWriters begins the import's transaction with the dataset's table in SHARE ROW
// EXCLUSIVE mode, its first statement: writers, schema changes and index builds wait for the
// import, readers do not. It does not wait in the lock queue: an index being built
// CONCURRENTLY (the search-index job that follows every load and import) waits for every
// transaction older than itself, so a transaction waiting for its lock deadlocks with it.
// While one is being built, a new transaction tries again every quarter second (at most ten
// minutes), younger than the build.
func lockWriters(ctx context.Context, conn *sqlx.Conn, table string, p *jobs.Progress) (*sqlx.Tx, error) {
	deadline := time.Now().Add(10 * time.Minute)
	for {
		tx, err := conn.BeginTxx(ctx, nil)
		if err != nil {
			return nil, err
		}
		_, err = tx.ExecContext(ctx, `LOCK TABLE `+table+` IN SHARE ROW EXCLUSIVE MODE NOWAIT`)
		if err == nil {
			return tx, nil
		}
		tx.Rollback()
		var pe *pq.Error
		if !errors.As(err, &pe) || pe.Code != "55P03" || time.Now().After(deadline) {
			return nil, err
		}
		p.Set(ctx, "analyzing", 0, 0, "waiting for the dataset's table (its indexes are being built)")
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (im *Importer) run(ctx context.Context, conn *sqlx.Conn, tx *sqlx.Tx, j *jobs.Job, pl *ImportPayload, p *jobs.Progress, phases *phaseClock) error {
	start := time.Now()
	// The table is locked against writers (lockWriters), not the dataset's row: while the file
	// is staged, the dataset's status (processing) is what keeps other imports and schema
	// changes out, and they are told so at once.
	d, err := store.DatasetByID(ctx, tx, pl.DatasetID, false)
	if errors.Is(err, store.ErrNotFound) {
		return nil // deleted meanwhile
	} else if err != nil {
		return err
	}
	if !importing(d, j) {
		return nil // a previous attempt finished it
	}
	var cols []ingest.Column
	if err := json.Unmarshal([]byte(d.Columns), &cols); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `SET LOCAL timezone = 'UTC'`); err != nil {
		return err
	}
	table := Table(d.TableSchema, d.ID)
	schema, seq, plan, err := im.fitFile(ctx, tx, table, cols, pl, p)
	if err != nil {
		return err
	}

	// 1. The file into a staging table, typed and constrained as the dataset's columns: the
	// dataset's readers go on.
	staging := Table(d.TableSchema, stagingName(d.ID))
	rows, err := stage(ctx, conn, tx, staging, d.ID, plan, seq.Valid, schema, im.UploadPath(pl.StorageKey), p)
	if err != nil {
		return err
	}
	phases.mark("stage")

	// 2. The merge: readers see the old rows until the commit. The dataset's row is locked
	// from now on (a rename or deletion waits).
	im.progress(ctx, p, "merging", "merging the file's rows into the dataset")
	locked, err := store.DatasetByID(ctx, tx, pl.DatasetID, true)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	if !importing(locked, j) {
		return nil
	}
	if locked.Columns != d.Columns {
		return errors.New("the dataset's columns changed while the file was staged") // retried from the start
	}
	d = locked
	now := im.Clock().UTC()
	if len(plan.added) > 0 {
		if cols, err = im.addColumns(ctx, tx, d, cols, plan.added, pl.UserID, now); err != nil {
			return err
		}
	}
	phases.mark("lock")
	m := &merge{tx: tx, d: d, table: table, staging: staging, plan: plan, seq: seq.String, rows: rows, cols: cols, mark: phases.mark}
	res := &ImportResult{Mode: pl.Mode, JobID: j.ID}
	if err := im.mergeRows(ctx, tx, m, pl.Mode, now, res); err != nil {
		return err
	}
	phases.mark("merge")
	if pl.Mode != ModeAppend {
		if err := importedEvent(ctx, tx, d.ID, res, now); err != nil {
			return err
		}
	}
	if err := m.advanceKeys(ctx); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DROP TABLE `+staging); err != nil {
		return err
	}
	cj, _ := json.Marshal(cols)
	d.Columns = string(cj)
	if err := im.ready(ctx, tx, d, res, start, p); err != nil {
		return err
	}
	phases.mark("analyze")
	im.Log.Info("import merged", append([]any{"dataset_id", d.ID, "job_id", j.ID, "mode", pl.Mode, "rows", rows, "inserted", res.Inserted,
		"updated", res.Updated, "unchanged", res.Unchanged, "deleted", res.Deleted}, phases.parts...)...)
	return nil
}

// fitFile reads the file's columns and dialect and fits them to the dataset's cols; seq is the
// identity sequence of an integer key.
func (im *Importer) fitFile(ctx context.Context, tx *sqlx.Tx, table string, cols []ingest.Column, pl *ImportPayload, p *jobs.Progress) (*ingest.Schema, sql.NullString, *importPlan, error) {
	var seq sql.NullString
	im.progress(ctx, p, "analyzing", "reading the file's columns")
	path := im.UploadPath(pl.StorageKey)
	format := ingest.Format(pl.Format)
	// The file's columns and dialect; types only matter for columns the import adds.
	schema, err := ingest.InferSample(path, format, HeaderSample)
	if err != nil {
		return nil, seq, nil, fileError(err)
	}
	if k, ok := UserKey(cols); ok {
		if err := tx.GetContext(ctx, &seq, `SELECT pg_get_serial_sequence($1, $2)`, table, k.Name); err != nil {
			return nil, seq, nil, err
		}
	}
	plan, err := fitColumns(cols, schema.Columns, pl.Mode, pl.AddColumns, seq.Valid)
	if err == nil && pl.AddColumns && schema.Sampled && (len(plan.added) > 0 || format == ingest.JSON || format == ingest.NDJSON) {
		// An added column takes the type of all its values, not of the first ones (and a
		// JSON key first seen further down is a column to add too).
		im.progress(ctx, p, "analyzing", "inferring the added columns' types from the whole file")
		if schema, err = ingest.Infer(path, format); err != nil {
			return nil, seq, nil, fileError(err)
		}
		plan, err = fitColumns(cols, schema.Columns, pl.Mode, pl.AddColumns, seq.Valid)
	}
	if err != nil {
		return nil, seq, nil, jobs.Permanent(err)
	}
	return schema, seq, plan, nil
}

// stage copies the file's rows into the staging table, typed and constrained as the
// dataset's columns, and returns how many there are.
func stage(ctx context.Context, conn *sqlx.Conn, tx *sqlx.Tx, staging, datasetID string, plan *importPlan, keyGen bool, schema *ingest.Schema, path string, p *jobs.Progress) (int64, error) {
	ddl, err := stagingTable(staging, datasetID, plan, keyGen)
	if err != nil {
		return 0, jobs.Permanent(err)
	}
	if _, err := tx.ExecContext(ctx, ddl); err != nil {
		return 0, err
	}
	read := &ingest.Schema{Format: schema.Format, Dialect: schema.Dialect, Columns: plan.read, Rows: schema.Rows, Sampled: schema.Sampled}
	total := schema.Rows
	if schema.Sampled {
		total = 0
	}
	p.Set(ctx, "loading", 0, total, "loading the file's rows")
	rows, err := copyRows(ctx, conn, staging, read, path, p)
	if err != nil {
		return 0, stagingError(err, stagingName(datasetID))
	}
	return rows, nil
}

// mergeRows moves the staged rows into the dataset's table, the way the mode and the share of
// the table the file is call for.
func (im *Importer) mergeRows(ctx context.Context, tx *sqlx.Tx, m *merge, mode string, now time.Time, res *ImportResult) error {
	var err error
	switch {
	case mode == ModeAppend:
		// Subscribers learn of each new record (record.created), as the trigger tells them.
		if err := m.check(ctx, mode, true); err != nil {
			return err
		}
		m.mark("check")
		if res.Inserted, err = m.insert(ctx, false); err != nil {
			return err
		}
	case m.rows >= RebuildRows && m.rows*10 >= deref(m.d.RowCount):
		// A large share of the table: a new table is built and swapped in (one change event).
		if err := m.check(ctx, mode, false); err != nil {
			return err
		}
		m.mark("check")
		if err := m.rebuild(ctx, mode == ModeReplace, res, func(ddl func() error) error {
			if im.Around != nil {
				return im.Around(ctx, tx, m.d, now, ddl)
			}
			return ddl()
		}); err != nil {
			return err
		}
	default:
		// In place, without the per-record trigger: one change event for the whole import.
		if err := m.check(ctx, mode, true); err != nil {
			return err
		}
		m.mark("check")
		if _, err := tx.ExecContext(ctx, `ALTER TABLE `+m.table+` DISABLE TRIGGER dp_changes`); err != nil {
			return err
		}
		if err := m.upsert(ctx, mode == ModeReplace, res); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `ALTER TABLE `+m.table+` ENABLE TRIGGER dp_changes`); err != nil {
			return err
		}
	}
	return nil
}

// importedEvent is the one change event of an upsert or replace, and its notification.
func importedEvent(ctx context.Context, tx *sqlx.Tx, datasetID string, res *ImportResult, now time.Time) error {
	b, _ := json.Marshal(res)
	if _, err := tx.ExecContext(ctx, `INSERT INTO platform.record_changes (dataset_id, record_id, op, changes, changed_at)
		VALUES ($1, '', 'imported', $2, $3)`, datasetID, string(b), now); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `SELECT pg_notify('record_changes', $1)`, datasetID)
	return err
}

// stagingError keeps the staging table's name out of a refused value's message: the user
// knows the dataset, not the table the file passes through.
func stagingError(err error, rel string) error {
	if !jobs.IsPermanent(err) {
		return err
	}
	msg := strings.NewReplacer(` of relation "`+rel+`"`, "", ` for relation "`+rel+`"`, "").Replace(err.Error())
	if msg == err.Error() {
		return err
	}
	return jobs.Permanent(errors.New(msg))
}

// importing reports whether d is processing the import of job j.
func importing(d *store.Dataset, j *jobs.Job) bool {
	return d.Status == "processing" && d.ImportMode != nil && d.JobID != nil && *d.JobID == j.ID
}

// phaseClock times the parts of an import for its log line.
type phaseClock struct {
	last  time.Time
	parts []any
}

func (c *phaseClock) mark(name string) {
	now := time.Now()
	c.parts = append(c.parts, name+"_ms", now.Sub(c.last).Milliseconds())
	c.last = now
}

// stagingName is the relation of an import's staging table, beside the dataset's table: an
// unlogged table (no WAL for rows that are only passing through) made and dropped in the
// import's transaction, so that no one else ever sees it; not a temporary one, which
// PostgreSQL's parallel workers cannot read.
func stagingName(datasetID string) string { return datasetID + "_staging" }

// stagingTable is the CREATE TABLE of the staging table: one column per file column with the
// dataset column's type, NOT NULL and CHECK constraints, so that COPY itself refuses a value
// the dataset would, naming its row and column (a generated key may be empty: the merge
// generates it). UNIQUE constraints are the merge's to check. Its rows are in the file's
// order (a new table filled by one COPY): ctid order is the data row order.
func stagingTable(staging, datasetID string, plan *importPlan, keyGen bool) (string, error) {
	var defs []string
	for _, c := range plan.read {
		if c.Key && keyGen {
			c.Nullable = true
		}
		c.Constraints = nil // checks below; the default is the reader's (it fills empty values)
		def, err := ColumnDDL(c)
		if err != nil {
			return "", err
		}
		defs = append(defs, def)
	}
	var b strings.Builder
	b.WriteString(`CREATE UNLOGGED TABLE ` + staging + ` (` + strings.Join(defs, ", "))
	for _, c := range plan.read {
		for _, k := range Constraints(datasetID, c) {
			if k.Kind != "unique" {
				b.WriteString(", CONSTRAINT " + pq.QuoteIdentifier(k.Name) + " " + k.SQL)
			}
		}
	}
	b.WriteString(`)`)
	return b.String(), nil
}

// addColumns adds the file's new columns to the table as the schema API's add_column does
// (Alter, views kept, a new schema version recorded) and returns the dataset's columns.
func (im *Importer) addColumns(ctx context.Context, tx *sqlx.Tx, d *store.Dataset, cols, added []ingest.Column, userID string, now time.Time) ([]ingest.Column, error) {
	changes := make([]Change, len(added))
	var req []map[string]any // as the schema API's changes read
	for i := range added {
		c := added[i]
		changes[i] = Change{Op: "add_column", Define: &c}
		req = append(req, map[string]any{"op": "add_column", "column": map[string]any{"name": c.Name, "source": c.Original, "type": c.Type}})
	}
	var after []ingest.Column
	ddl := func() error {
		var err error
		after, err = Alter(ctx, tx, d, cols, changes, func(int, ingest.Column) error { return nil })
		return err
	}
	var err error
	if im.Around != nil {
		err = im.Around(ctx, tx, d, now, ddl)
	} else {
		err = ddl()
	}
	if err != nil {
		var ce *ChangeError
		if errors.As(err, &ce) {
			return nil, jobs.Permanent(fmt.Errorf("adding column %s: %s", added[ce.Index].Name, ce.Message))
		}
		return nil, err
	}
	b, _ := json.Marshal(cols)
	a, _ := json.Marshal(after)
	c, _ := json.Marshal(req)
	sc := &store.SchemaChange{ID: store.NewID("sch"), DatasetID: d.ID, SchemaVersion: d.SchemaVersion + 1, Changes: string(c),
		ColumnsBefore: string(b), ColumnsAfter: string(a), CreatedAt: now}
	if userID != "" {
		sc.CreatedBy = &userID
	}
	if err := store.RecordSchemaChange(ctx, tx, sc, false); err != nil {
		return nil, err
	}
	d.SchemaVersion = sc.SchemaVersion
	return after, nil
}

func (im *Importer) progress(ctx context.Context, p *jobs.Progress, phase, msg string) {
	p.Set(ctx, phase, 0, 0, msg)
}

// ready analyses the dataset after the import and makes it active again.
func (im *Importer) ready(ctx context.Context, tx *sqlx.Tx, d *store.Dataset, res *ImportResult, start time.Time, p *jobs.Progress) error {
	loadMS := time.Since(start).Milliseconds()
	p.Set(ctx, "indexing", 0, 0, "computing statistics and the search index")
	now := im.Clock().UTC()
	if err := Analyze(ctx, tx, d, now); err != nil {
		return err
	}
	indexMS := time.Since(start).Milliseconds() - loadMS
	d.Status, d.Error, d.ProcessingTimeMS, d.IndexTimeMS, d.IndexedAt, d.UpdatedAt = "active", nil, &loadMS, &indexMS, &now, now
	if err := store.FinishDataset(ctx, tx, d); err != nil {
		return err
	}
	if err := EnqueueSearchIndex(ctx, tx, d); err != nil {
		return err
	}
	p.Set(ctx, "complete", *d.RowCount, *d.RowCount, fmt.Sprintf("%d inserted, %d updated, %d unchanged, %d deleted",
		res.Inserted, res.Updated, res.Unchanged, res.Deleted))
	return store.Emit(ctx, tx, "dataset.ready", d.OrgID, map[string]any{"dataset_id": d.ID, "project_id": d.ProjectID,
		"row_count": *d.RowCount, "import": res}, now)
}

// fail ends a failed import: the dataset is active again with its rows as they were, and
// says why the import failed.
func (im *Importer) fail(ctx context.Context, j *jobs.Job, pl *ImportPayload, cause error) {
	err := im.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		d, err := store.DatasetByID(ctx, tx, pl.DatasetID, true)
		if err != nil {
			return err
		}
		if d.Status != "processing" || d.JobID == nil || *d.JobID != j.ID {
			return nil
		}
		msg := "the import (" + pl.Mode + ") failed and changed nothing: " + jobs.Describe(cause)
		now := im.Clock().UTC()
		d.Status, d.Error, d.UpdatedAt = "active", &msg, now
		if err := store.FinishDataset(ctx, tx, d); err != nil {
			return err
		}
		return store.Emit(ctx, tx, "dataset.failed", d.OrgID, map[string]any{"dataset_id": d.ID, "project_id": d.ProjectID, "error": msg,
			"import": map[string]any{"mode": pl.Mode, "job_id": j.ID}}, now)
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		im.Log.Error("ending a failed import", "dataset_id", pl.DatasetID, "error", err)
	}
}
