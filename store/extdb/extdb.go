// Package extdb talks to the external databases a connected dataset reads: it tests a
// connection and reads the tables, columns and constraints it offers (PostgreSQL through
// lib/pq, MySQL and MariaDB through go-sql-driver/mysql). Reading rows is left to the
// foreign data wrappers inside the platform's own PostgreSQL.
package extdb

import (
	"context"
	"crypto/tls"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"dataplatform/store/ingest"

	"github.com/go-sql-driver/mysql"
	"github.com/lib/pq"
)

// ConnectTimeout bounds how long reaching a database may take.
const ConnectTimeout = 5 * time.Second

// Config is how to reach a database.
type Config struct {
	Type     string // postgresql or mysql
	Host     string
	Port     int
	Database string
	Username string
	Password string
	SSLMode  string // PostgreSQL's sslmode names
	// Networks is where the server may connect beyond public addresses (not the user's to set).
	Networks Networks
}

// Options select what to read.
type Options struct {
	Schemas       []string `json:"schemas,omitempty"`
	ExcludeTables []string `json:"exclude_tables,omitempty"`
	SampleRows    int64    `json:"sample_rows,omitempty"`
}

// Normalize resolves aliases and defaults: postgres → postgresql, mariadb → mysql, the
// default port and SSL mode.
func (c *Config) Normalize() {
	switch c.Type {
	case "postgres":
		c.Type = "postgresql"
	case "mariadb":
		c.Type = "mysql"
	}
	if c.Port == 0 {
		c.Port = map[string]int{"postgresql": 5432, "mysql": 3306}[c.Type]
	}
	if c.SSLMode == "" {
		c.SSLMode = "prefer"
	}
}

// Column is a column of an external table, with its constraints.
type Column struct {
	ingest.Column
	DatabaseType string // as the database names it
}

// ForeignKey is a reference from a column to a column of another table.
type ForeignKey struct {
	Column, RefSchema, RefTable, RefColumn string
}

// Table is an external table.
type Table struct {
	Schema, Name string
	Columns      []Column
	PrimaryKey   []string
	ForeignKeys  []ForeignKey
	Checks       []string // CHECK constraint definitions, as the database shows them
}

// Info is what a connection test finds.
type Info struct {
	Version string
	Schemas []string // the schemas (MySQL: databases) the user can see
	Tables  []Table  // the selected tables (columns only when introspected)
	// Addr is the address connected to: foreign servers are pinned to it, so a name that
	// later resolves elsewhere (DNS rebinding) does not move them.
	Addr netip.Addr
}

// open connects to the database and pings it; reached is set to the address connected to.
func open(ctx context.Context, c Config, reached *netip.Addr) (*sql.DB, error) {
	var db *sql.DB
	var err error
	dial := dialer{nets: c.Networks, reached: reached}
	if c.Host == "" || strings.ContainsAny(c.Host, "/\\ ,@?#") {
		return nil, fmt.Errorf("%w: the host must be a name or an IP address, got %q", ErrRefusedAddress, c.Host)
	}
	switch c.Type {
	case "postgresql":
		u := url.URL{Scheme: "postgres", User: url.UserPassword(c.Username, c.Password), Host: net.JoinHostPort(c.Host, strconv.Itoa(c.Port)),
			Path: "/" + c.Database, RawQuery: url.Values{"sslmode": {c.SSLMode}, "connect_timeout": {strconv.Itoa(int(ConnectTimeout.Seconds()))},
				"application_name": {"dataplatform"}}.Encode()}
		var conn *pq.Connector
		if conn, err = pq.NewConnector(u.String()); err == nil {
			conn.Dialer(dial)
			db = sql.OpenDB(conn)
		}
	case "mysql":
		mc := mysql.NewConfig()
		mc.User, mc.Passwd, mc.Net, mc.Addr, mc.DBName = c.Username, c.Password, "tcp", net.JoinHostPort(c.Host, strconv.Itoa(c.Port)), c.Database
		mc.DialFunc = dial.DialContext
		mc.Timeout, mc.ReadTimeout, mc.WriteTimeout, mc.ParseTime = ConnectTimeout, 30*time.Second, 30*time.Second, true
		switch c.SSLMode {
		case "disable":
		case "allow", "prefer":
			mc.TLSConfig = "preferred"
		case "require":
			mc.TLSConfig = "skip-verify"
		default: // verify-ca, verify-full
			mc.TLS = &tls.Config{ServerName: c.Host, MinVersion: tls.VersionTLS12}
		}
		var conn driver.Connector
		if conn, err = mysql.NewConnector(mc); err == nil {
			db = sql.OpenDB(conn)
		}
	default:
		return nil, fmt.Errorf("unsupported database type %q", c.Type)
	}
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(2)
	ctx, cancel := context.WithTimeout(ctx, ConnectTimeout+time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, reason(err)
	}
	return db, nil
}

// reason is the driver's error as a user can read it.
func reason(err error) error {
	var pe *pq.Error
	if errors.As(err, &pe) {
		if pe.Detail != "" {
			return errors.New(pe.Message + ": " + pe.Detail)
		}
		return errors.New(pe.Message)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no answer within %s", ConnectTimeout)
	}
	return DialError(err)
}

// Test connects and lists the schemas and the tables opts select.
func Test(ctx context.Context, c Config, opts Options) (*Info, error) {
	return read(ctx, c, opts, false)
}

// Introspect is Test with every selected table's columns and constraints.
func Introspect(ctx context.Context, c Config, opts Options) (*Info, error) {
	return read(ctx, c, opts, true)
}

func read(ctx context.Context, c Config, opts Options, columns bool) (*Info, error) {
	c.Normalize()
	info := &Info{}
	db, err := open(ctx, c, &info.Addr)
	if err != nil {
		return nil, err
	}
	defer func() { _ = db.Close() }()
	d := dialects[c.Type]
	if err := db.QueryRowContext(ctx, d.version).Scan(&info.Version); err != nil {
		return nil, reason(err)
	}
	if info.Schemas, err = strs(ctx, db, d.schemas); err != nil {
		return nil, reason(err)
	}
	want := opts.Schemas
	if len(want) == 0 {
		want = []string{d.defaultSchema(c)}
	}
	rows, err := db.QueryContext(ctx, d.tables)
	if err != nil {
		return nil, reason(err)
	}
	defer rows.Close()
	for rows.Next() {
		var t Table
		if err := rows.Scan(&t.Schema, &t.Name); err != nil {
			return nil, reason(err)
		}
		if slices.Contains(want, t.Schema) && !excluded(t, opts.ExcludeTables) {
			info.Tables = append(info.Tables, t)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, reason(err)
	}
	if columns {
		for i := range info.Tables {
			if err := d.describe(ctx, db, &info.Tables[i]); err != nil {
				return nil, reason(err)
			}
			applyChecks(&info.Tables[i])
		}
	}
	return info, nil
}

// excluded reports whether a pattern of exclude matches the table's name or schema.name.
func excluded(t Table, exclude []string) bool {
	for _, p := range exclude {
		for _, n := range []string{t.Name, t.Schema + "." + t.Name} {
			if ok, _ := path.Match(p, n); ok {
				return true
			}
		}
	}
	return false
}

func strs(ctx context.Context, db *sql.DB, q string, args ...any) ([]string, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

type dialect struct {
	version, schemas, tables string
	defaultSchema            func(Config) string
	describe                 func(ctx context.Context, db *sql.DB, t *Table) error
}

var dialects = map[string]dialect{
	"postgresql": {
		version: `SHOW server_version`,
		schemas: `SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg\_%' AND nspname <> 'information_schema'
			AND has_schema_privilege(oid, 'USAGE') ORDER BY 1`,
		tables: `SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE c.relkind IN ('r', 'v', 'm', 'p', 'f') AND NOT c.relispartition AND has_table_privilege(c.oid, 'SELECT')
			AND n.nspname NOT LIKE 'pg\_%' AND n.nspname <> 'information_schema' ORDER BY 1, 2`,
		defaultSchema: func(Config) string { return "public" },
		describe:      describePostgres,
	},
	"mysql": {
		version:       `SELECT VERSION()`,
		schemas:       `SELECT schema_name FROM information_schema.schemata WHERE schema_name NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys') ORDER BY 1`,
		tables:        `SELECT table_schema, table_name FROM information_schema.tables WHERE table_schema NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys') ORDER BY 1, 2`,
		defaultSchema: func(c Config) string { return c.Database },
		describe:      describeMySQL,
	},
}

func describePostgres(ctx context.Context, db *sql.DB, t *Table) error {
	rows, err := db.QueryContext(ctx, `SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
			pg_get_expr(d.adbin, d.adrelid), t.typtype = 'e', a.attidentity <> '' OR a.attgenerated <> '',
			COALESCE((SELECT array_agg(e.enumlabel ORDER BY e.enumsortorder) FROM pg_enum e WHERE e.enumtypid = a.atttypid), '{}')
		FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
		WHERE a.attrelid = (quote_ident($1) || '.' || quote_ident($2))::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, t.Schema, t.Name)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var name, typ string
		var notNull, isEnum, computed bool
		var def sql.NullString
		var labels pq.StringArray
		if err := rows.Scan(&name, &typ, &notNull, &def, &isEnum, &computed, &labels); err != nil {
			return err
		}
		c := Column{DatabaseType: typ}
		c.Original, c.Nullable, c.Type = name, !notNull, pgType(typ, isEnum)
		k := ingest.Constraints{}
		if isEnum {
			k.Enum = labels
		}
		if n := varcharLen(typ); n > 0 {
			k.MaxLength = &n
		}
		if def.Valid && !strings.EqualFold(strings.TrimSpace(def.String), "null") && !strings.HasPrefix(def.String, "NULL::") {
			v, expr := pgDefault(def.String, c.Type)
			if v != nil {
				k.Default = v
			} else {
				c.DefaultExpression = def.String // the description names what it cannot show
				computed = computed || expr      // a sequence or an expression: the database computes it
			}
		}
		c.Computed = computed
		if !k.Empty() {
			c.Constraints = &k
		}
		t.Columns = append(t.Columns, c)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	cons, err := db.QueryContext(ctx, `SELECT c.contype, a.attname, COALESCE(rn.nspname, ''), COALESCE(r.relname, ''), COALESCE(ra.attname, ''),
			pg_get_constraintdef(c.oid), cardinality(c.conkey)
		FROM pg_constraint c
		CROSS JOIN LATERAL unnest(c.conkey, COALESCE(c.confkey, c.conkey)) WITH ORDINALITY AS k(attnum, refnum, i)
		JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum
		LEFT JOIN pg_class r ON r.oid = c.confrelid LEFT JOIN pg_namespace rn ON rn.oid = r.relnamespace
		LEFT JOIN pg_attribute ra ON ra.attrelid = c.confrelid AND ra.attnum = k.refnum
		WHERE c.conrelid = (quote_ident($1) || '.' || quote_ident($2))::regclass AND c.contype IN ('p', 'u', 'f', 'c')
		ORDER BY c.contype, c.conname, k.i`, t.Schema, t.Name)
	if err != nil {
		return err
	}
	defer cons.Close()
	for cons.Next() {
		var typ, col, rs, rt, rc, def string
		var n int
		if err := cons.Scan(&typ, &col, &rs, &rt, &rc, &def, &n); err != nil {
			return err
		}
		switch typ {
		case "p":
			t.PrimaryKey = append(t.PrimaryKey, col)
		case "u":
			if n == 1 {
				t.column(col).constraints().Unique = true
			}
		case "f":
			if n == 1 {
				t.ForeignKeys = append(t.ForeignKeys, ForeignKey{Column: col, RefSchema: rs, RefTable: rt, RefColumn: rc})
			}
		case "c":
			if !slices.Contains(t.Checks, def) {
				t.Checks = append(t.Checks, def)
			}
		}
	}
	return cons.Err()
}

func describeMySQL(ctx context.Context, db *sql.DB, t *Table) error {
	rows, err := db.QueryContext(ctx, `SELECT column_name, column_type, data_type, is_nullable = 'YES', column_default, column_key,
			COALESCE(character_maximum_length, 0), extra
		FROM information_schema.columns WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position`, t.Schema, t.Name)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var name, colType, dataType, key string
		var nullable bool
		var def sql.NullString
		var maxLen int64
		var extra string
		if err := rows.Scan(&name, &colType, &dataType, &nullable, &def, &key, &maxLen, &extra); err != nil {
			return err
		}
		c := Column{DatabaseType: colType}
		c.Original, c.Nullable, c.Type = name, nullable, mysqlType(strings.ToLower(dataType), strings.ToLower(colType))
		k := ingest.Constraints{}
		if strings.HasPrefix(colType, "enum(") {
			k.Enum = enumLabels(colType)
		}
		if (dataType == "varchar" || dataType == "char") && maxLen > 0 {
			n := int(maxLen)
			k.MaxLength = &n
		}
		if def.Valid && def.String != "NULL" {
			if v, ok := literalDefault(def.String); ok {
				k.Default = boolDefault(c.Type, v)
			} else {
				c.Computed = true
			}
		}
		x := strings.ToLower(extra)
		c.Computed = c.Computed || strings.Contains(x, "auto_increment") || strings.Contains(x, "generated")
		switch key {
		case "PRI":
			t.PrimaryKey = append(t.PrimaryKey, name)
		case "UNI":
			k.Unique = true
		}
		if !k.Empty() {
			c.Constraints = &k
		}
		t.Columns = append(t.Columns, c)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	fks, err := db.QueryContext(ctx, `SELECT k.column_name, k.referenced_table_schema, k.referenced_table_name, k.referenced_column_name
		FROM information_schema.key_column_usage k
		WHERE k.table_schema = ? AND k.table_name = ? AND k.referenced_table_name IS NOT NULL
		AND (SELECT count(*) FROM information_schema.key_column_usage x WHERE x.constraint_schema = k.constraint_schema
			AND x.constraint_name = k.constraint_name AND x.table_name = k.table_name) = 1`, t.Schema, t.Name)
	if err != nil {
		return err
	}
	defer fks.Close()
	for fks.Next() {
		var f ForeignKey
		if err := fks.Scan(&f.Column, &f.RefSchema, &f.RefTable, &f.RefColumn); err != nil {
			return err
		}
		t.ForeignKeys = append(t.ForeignKeys, f)
	}
	if err := fks.Err(); err != nil {
		return err
	}
	checks, err := strs(ctx, db, `SELECT check_clause FROM information_schema.check_constraints c
		JOIN information_schema.table_constraints t ON t.constraint_schema = c.constraint_schema AND t.constraint_name = c.constraint_name
		WHERE t.table_schema = ? AND t.table_name = ? AND t.constraint_type = 'CHECK'`, t.Schema, t.Name)
	if err != nil {
		// MySQL before 8.0.16 has no check_constraints table: no CHECKs to report.
		var me *mysql.MySQLError
		if errors.As(err, &me) && me.Number == 1109 {
			return nil
		}
		return err
	}
	t.Checks = checks
	return nil
}

// boolDefault turns MySQL's 0 and 1 defaults of a boolean (tinyint(1)) column into false
// and true.
func boolDefault(t ingest.Type, v []byte) []byte {
	if t == ingest.Boolean {
		switch strings.Trim(string(v), `"`) {
		case "0":
			return []byte("false")
		case "1":
			return []byte("true")
		}
	}
	return v
}

func (t *Table) column(name string) *Column {
	if c := t.lookup(name); c != nil {
		return c
	}
	return &Column{}
}

func (c *Column) constraints() *ingest.Constraints {
	if c.Constraints == nil {
		c.Constraints = &ingest.Constraints{}
	}
	return c.Constraints
}
