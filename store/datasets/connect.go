package datasets

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"dataplatform/store"
	"dataplatform/store/extdb"
	"dataplatform/store/ingest"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// ErrWrapperMissing is returned when the platform's PostgreSQL lacks the foreign data
// wrapper a connection needs.
var ErrWrapperMissing = errors.New("foreign data wrapper not installed")

var wrappers = map[string]string{"postgresql": "postgres_fdw", "mysql": "mysql_fdw"}

// Connect makes the tables of info readable inside the platform's database, in tx: a foreign
// server for the connection, a user mapping with its credentials for the service's own role,
// one foreign table per table in the dataset's private schema (ForeignSchema), and over each
// a view of the same name in the schema named after the dataset, which is what user SQL
// reads. It returns the dataset's tables and records the foreign keys between them as
// relationships.
func Connect(ctx context.Context, tx *sqlx.Tx, d *store.Dataset, c extdb.Config, opts extdb.Options, info *extdb.Info, now time.Time) ([]TableDef, error) {
	c.Normalize()
	if !info.Addr.IsValid() {
		return nil, errors.New("the database's address is unknown: info must come from extdb.Introspect")
	}
	wrapper := wrappers[c.Type]
	if _, err := tx.ExecContext(ctx, `SAVEPOINT fdw`); err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `CREATE EXTENSION IF NOT EXISTS `+wrapper); err != nil {
		var pe *pq.Error
		if errors.As(err, &pe) && (pe.Code == "58P01" || pe.Code == "0A000" || pe.Code == "42501") {
			if _, rerr := tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT fdw`); rerr != nil {
				return nil, rerr
			}
			return nil, ErrWrapperMissing
		}
		return nil, err
	}
	server, err := createServer(ctx, tx, d, c, info)
	if err != nil {
		return nil, err
	}
	tables, local, err := createForeignTables(ctx, tx, d, c, opts, info, server)
	if err != nil {
		return nil, err
	}
	if err := grantConnected(ctx, tx, d.OrgID, d.ID); err != nil {
		return nil, err
	}
	return tables, linkForeignKeys(ctx, tx, d, info, tables, local, now)
}

// createServer makes the dataset's foreign server, the service role's user mapping with the
// database's credentials, and the schemas of its foreign tables and their views; it returns
// the server's quoted name.
func createServer(ctx context.Context, tx *sqlx.Tx, d *store.Dataset, c extdb.Config, info *extdb.Info) (string, error) {
	wrapper := wrappers[c.Type]
	server := pq.QuoteIdentifier(ServerName(d.ID))
	port := strconv.Itoa(c.Port)
	var serverOpts, userOpts []string
	opt := func(dst *[]string, k, v string) { *dst = append(*dst, k+" "+pq.QuoteLiteral(v)) }
	switch c.Type {
	case "postgresql":
		// host names the server (TLS verification), hostaddr is where it was found allowed.
		opt(&serverOpts, "host", c.Host)
		opt(&serverOpts, "hostaddr", info.Addr.String())
		opt(&serverOpts, "port", port)
		opt(&serverOpts, "dbname", c.Database)
		opt(&serverOpts, "sslmode", c.SSLMode)
		opt(&serverOpts, "connect_timeout", strconv.Itoa(int(extdb.ConnectTimeout.Seconds())))
		opt(&serverOpts, "application_name", "dataplatform")
		opt(&userOpts, "user", c.Username)
		opt(&userOpts, "password", c.Password)
	case "mysql":
		opt(&serverOpts, "host", info.Addr.String())
		opt(&serverOpts, "port", port)
		opt(&userOpts, "username", c.Username)
		opt(&userOpts, "password", c.Password)
	}
	for _, q := range []string{
		`CREATE SERVER ` + server + ` FOREIGN DATA WRAPPER ` + wrapper + ` OPTIONS (` + strings.Join(serverOpts, ", ") + `)`,
		`CREATE USER MAPPING FOR CURRENT_USER SERVER ` + server + ` OPTIONS (` + strings.Join(userOpts, ", ") + `)`,
		`CREATE SCHEMA ` + pq.QuoteIdentifier(ForeignSchema(d.ID)),
		`CREATE SCHEMA ` + pq.QuoteIdentifier(d.ID),
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return "", err
		}
	}
	return server, nil
}

// viewOf is what user SQL reads a connected table through: a view of the same name in the
// dataset's schema, owned by the service role. postgres_fdw connects as the view's owner, with
// the service role's user mapping, so the query role holds no mapping (no credentials to read
// back from pg_user_mappings) and no USAGE on the server; the view must not be
// security_invoker. mysql_fdw looks up the mapping of the current user instead, so for it the
// view reads through a SECURITY DEFINER function of the service role (no pushdown of
// conditions: the price of not handing the query role the password).
func viewOf(wrapperType string, t TableDef) []string {
	if wrapperType != "mysql" {
		return []string{`CREATE VIEW ` + t.QueryName() + ` AS SELECT * FROM ` + t.Qualified()}
	}
	fn := t.Qualified() + `()`
	return []string{
		`CREATE FUNCTION ` + fn + ` RETURNS SETOF ` + t.Qualified() + ` LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog AS ` +
			pq.QuoteLiteral(`SELECT * FROM `+t.Qualified()),
		`REVOKE EXECUTE ON FUNCTION ` + fn + ` FROM PUBLIC`,
		`CREATE VIEW ` + t.QueryName() + ` AS SELECT * FROM ` + fn,
	}
}

// createForeignTables makes a foreign table on server for each table of info, and its view,
// named so that
// the names are unique (schema_table when several schemas are read); local maps each remote
// schema.table to its local name.
func createForeignTables(ctx context.Context, tx *sqlx.Tx, d *store.Dataset, c extdb.Config, opts extdb.Options, info *extdb.Info,
	server string) (tables []TableDef, local map[string]string, err error) {
	multi := map[string]bool{}
	for _, t := range info.Tables {
		multi[t.Schema] = true
	}
	local = map[string]string{}
	names := make([]string, len(info.Tables))
	for i, t := range info.Tables {
		names[i] = t.Name
		if len(multi) > 1 {
			names[i] = t.Schema + "_" + t.Name
		}
	}
	names = foreignNames(names)
	for i, t := range info.Tables {
		cols := make([]string, len(t.Columns))
		for j, c := range t.Columns {
			cols[j] = c.Original
		}
		colNames := foreignNames(cols)
		if c.Type == "mysql" {
			// mysql_fdw has no column_name option: it asks for the local names, so they are
			// the remote ones (MySQL compares column names without regard to case).
			colNames = cols
		}
		td := TableDef{Name: names[i], Schema: ForeignSchema(d.ID), Relation: names[i], Foreign: true, Remote: t.Schema + "." + t.Name, SampleRows: opts.SampleRows,
			Writable: c.Type == "postgresql"}
		defs := make([]string, len(t.Columns))
		for j, ec := range t.Columns {
			col := ec.Column
			col.Name = colNames[j]
			td.Columns = append(td.Columns, col)
			defs[j] = pq.QuoteIdentifier(col.Name) + " " + SQLType(col)
			if c.Type == "postgresql" {
				defs[j] += " OPTIONS (column_name " + pq.QuoteLiteral(ec.Original) + ")" + writeDefault(col)
			}
			for _, k := range t.PrimaryKey {
				if k == ec.Original {
					td.PrimaryKey = append(td.PrimaryKey, col.Name)
				}
			}
		}
		tableOpts := `schema_name ` + pq.QuoteLiteral(t.Schema) + `, table_name ` + pq.QuoteLiteral(t.Name)
		if c.Type == "mysql" {
			tableOpts = `dbname ` + pq.QuoteLiteral(t.Schema) + `, table_name ` + pq.QuoteLiteral(t.Name)
		}
		if _, err := tx.ExecContext(ctx, `CREATE FOREIGN TABLE `+td.Qualified()+` (`+strings.Join(defs, ", ")+`) SERVER `+server+
			` OPTIONS (`+tableOpts+`)`); err != nil {
			return nil, nil, err
		}
		for _, q := range viewOf(c.Type, td) {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return nil, nil, err
			}
		}
		local[t.Schema+"."+t.Name] = td.Name
		tables = append(tables, td)
	}
	return tables, local, nil
}

// linkForeignKeys records the foreign keys between the selected tables as relationships.
func linkForeignKeys(ctx context.Context, tx *sqlx.Tx, d *store.Dataset, info *extdb.Info, tables []TableDef, local map[string]string, now time.Time) error {
	for i, t := range info.Tables {
		for _, fk := range t.ForeignKeys {
			to, ok := local[fk.RefSchema+"."+fk.RefTable]
			if !ok {
				continue
			}
			from := columnNamed(tables[i].Columns, fk.Column)
			target := tables[slicesIndex(tables, to)].Columns
			if _, err := tx.ExecContext(ctx, `INSERT INTO platform.dataset_relationships (from_dataset, from_table, from_column, to_dataset,
				to_table, to_column, origin, created_at) VALUES ($1, $2, $3, $1, $4, $5, 'foreign_key', $6) ON CONFLICT DO NOTHING`,
				d.ID, tables[i].Name, from, to, columnNamed(target, fk.RefColumn), now); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeDefault is what a foreign table column declares so that an INSERT through
// postgres_fdw (which sends every column of the foreign table) leaves the remote database's
// defaults in force: a literal default is declared locally as well; a column the database
// computes (a sequence, an identity, an expression) is declared generated, which makes
// postgres_fdw send DEFAULT for it and read back the value the database chose.
func writeDefault(c ingest.Column) string {
	if c.Computed {
		return " GENERATED ALWAYS AS (NULL::" + SQLType(c) + ") STORED"
	}
	if v := c.DefaultValue(); v != nil {
		if text, null, err := c.Text(v); err == nil && !null {
			return " DEFAULT " + pq.QuoteLiteral(text) + "::" + SQLType(c)
		}
	}
	return ""
}

func slicesIndex(ts []TableDef, name string) int {
	for i, t := range ts {
		if t.Name == name {
			return i
		}
	}
	return -1
}

// columnNamed is the local name of the column a remote name denotes.
func columnNamed(cols []ingest.Column, original string) string {
	for _, c := range cols {
		if c.Original == original {
			return c.Name
		}
	}
	return original
}

var plainIdent = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// foreignNames names a connected database's tables and columns locally: as they are when
// they are plain lowercase identifiers (id and created_at included: connected tables have no
// system columns), made safe by ingest.Identifiers otherwise, distinct either way.
func foreignNames(names []string) []string {
	out := make([]string, len(names))
	seen := map[string]bool{}
	for i, n := range names {
		if !plainIdent.MatchString(n) {
			n = ingest.Identifiers([]string{n})[0]
		}
		base := n
		for k := 2; seen[n]; k++ {
			n = fmt.Sprintf("%s_%d", base, k)
		}
		seen[n] = true
		out[i] = n
	}
	return out
}
