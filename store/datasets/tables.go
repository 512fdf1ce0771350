package datasets

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"dataplatform/store"
	"dataplatform/store/ingest"
)

// TableDef is one table of a dataset: the one table of a file dataset, or a table of a
// connected database, reached through a foreign table.
type TableDef struct {
	Name       string          `json:"name"`     // name in the dataset: the dataset id for a file dataset
	Schema     string          `json:"schema"`   // PostgreSQL schema holding the relation
	Relation   string          `json:"relation"` // PostgreSQL relation name
	Foreign    bool            `json:"foreign,omitempty"`
	Remote     string          `json:"remote,omitempty"` // schema.table in the connected database
	Columns    []ingest.Column `json:"columns"`
	PrimaryKey []string        `json:"primary_key,omitempty"`
	// SampleRows is how many rows of a connected table its statistics cover (options.sample_rows).
	SampleRows int64 `json:"sample_rows,omitempty"`
	// Writable: the record API may write a connected table (through postgres_fdw; mysql_fdw
	// tables are read-only).
	Writable bool `json:"writable,omitempty"`
	// View: a saved view of the project (store/views), which queries read like a table; it
	// has no system columns.
	View bool `json:"view,omitempty"`
}

// DefaultSampleRows is SampleRows when the connection's options do not set it.
const DefaultSampleRows = 1000

func (t TableDef) sampleRows() int64 {
	if t.SampleRows > 0 {
		return t.SampleRows
	}
	return DefaultSampleRows
}

// Qualified is the quoted schema.relation: what the service reads and writes.
func (t TableDef) Qualified() string { return Table(t.Schema, t.Relation) }

// QueryName is the quoted name user SQL reads the table by: a connected table's view in the
// schema named after its dataset (the foreign table itself is the service's alone).
func (t TableDef) QueryName() string { return Table(t.QueryRelation()) }

// QueryRelation is QueryName unquoted: the schema and the relation's name.
func (t TableDef) QueryRelation() (schema, relation string) {
	if t.Foreign {
		return strings.TrimPrefix(t.Schema, foreignPrefix), t.Relation
	}
	return t.Schema, t.Relation
}

const foreignPrefix = "fdw_"

// ForeignSchema is the schema of a connected dataset's foreign tables, which the query role
// cannot use.
func ForeignSchema(datasetID string) string { return foreignPrefix + datasetID }

// System reports whether the table has the platform's system columns (id, created_at,
// updated_at, deleted_at, version): uploaded tables do, connected ones and views do not.
func (t TableDef) System() bool { return !t.Foreign && !t.View }

// Live is the condition that keeps soft-deleted rows out of a read of the table.
func (t TableDef) Live() string {
	if t.System() {
		return "deleted_at IS NULL"
	}
	return "true"
}

// Tables are a dataset's tables.
func Tables(d *store.Dataset) ([]TableDef, error) {
	if d.Tables != nil {
		var ts []TableDef
		return ts, json.Unmarshal([]byte(*d.Tables), &ts)
	}
	var cols []ingest.Column
	if err := json.Unmarshal([]byte(d.Columns), &cols); err != nil {
		return nil, err
	}
	return []TableDef{{Name: d.ID, Schema: d.TableSchema, Relation: d.ID, Columns: cols, PrimaryKey: []string{KeyOf(cols)}}}, nil
}

// UserKey is the column of an uploaded dataset that keys its records (false: the records
// have the generated id).
func UserKey(cols []ingest.Column) (ingest.Column, bool) {
	for _, c := range cols {
		if c.Key {
			return c, true
		}
	}
	return ingest.Column{}, false
}

// KeyOf is the name of the column keying an uploaded dataset's records: its user key, or the
// generated id.
func KeyOf(cols []ingest.Column) string {
	if c, ok := UserKey(cols); ok {
		return c.Name
	}
	return "id"
}

// GeneratedID reports whether the table has the platform's generated id column: an uploaded
// table whose data has no key of its own.
func (t TableDef) GeneratedID() bool {
	if !t.System() {
		return false
	}
	_, ok := UserKey(t.Columns)
	return !ok
}

// ServerName is the foreign server of a database-connected dataset.
func ServerName(datasetID string) string { return "srv_" + datasetID }

// Drop removes what a dataset keeps in the database besides its platform rows: the table of
// an uploaded dataset; the schema of foreign tables and the foreign server (with its user
// mappings) of a connected one.
func Drop(ctx context.Context, tx *sqlx.Tx, d *store.Dataset) error {
	qs := []string{`DROP TABLE IF EXISTS ` + Table(d.TableSchema, d.ID)}
	if d.Type == "database" {
		qs = []string{`DROP SCHEMA IF EXISTS ` + pq.QuoteIdentifier(d.ID) + ` CASCADE`,
			`DROP SCHEMA IF EXISTS ` + pq.QuoteIdentifier(ForeignSchema(d.ID)) + ` CASCADE`,
			`DROP SERVER IF EXISTS ` + pq.QuoteIdentifier(ServerName(d.ID)) + ` CASCADE`}
	}
	for _, q := range qs {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("drop dataset table: %w", err)
		}
	}
	return nil
}
