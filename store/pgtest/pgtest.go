// Package pgtest gives each test package one PostgreSQL cluster (the embedded launcher, or the
// server of DATABASE_URL when set) holding a migrated template database, and each test its own
// database cloned from that template.
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//	func TestX(t *testing.T) { url := pgtest.NewDatabase(t) ... }
package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"dataplatform/store"
	"dataplatform/store/pgembed"

	_ "github.com/lib/pq"
)

var (
	adminURL string // a maintenance database of the cluster
	template string // migrated template database
	admin    *sql.DB
	counter  atomic.Int64
	prefix   string
	fileCopy bool
)

// Main starts the cluster, builds the template, runs the tests and cleans up.
func Main(m *testing.M) int {
	ctx := context.Background()
	prefix = fmt.Sprintf("dpt%d", os.Getpid())
	var cluster *pgembed.Cluster
	if u := os.Getenv("DATABASE_URL"); u != "" {
		adminURL = u
	} else {
		dir, err := os.MkdirTemp("", "dp-pgtest-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
			return 1
		}
		defer func() { _ = os.RemoveAll(dir) }()
		if err := os.Chmod(dir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
			return 1
		}
		cluster, err = pgembed.Start(ctx, dir+"/postgres", dir+"/password", pgembed.Options{Ephemeral: true})
		if err != nil {
			fmt.Fprintln(os.Stderr, "pgtest: start embedded PostgreSQL:", err)
			return 1
		}
		defer func() { _ = cluster.Stop() }()
		adminURL = cluster.URL("postgres")
	}
	var err error
	if admin, err = sql.Open("postgres", adminURL); err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		return 1
	}
	defer func() { _ = admin.Close() }()
	var version int
	if err := admin.QueryRowContext(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		fmt.Fprintln(os.Stderr, "pgtest: connect:", err)
		return 1
	}
	fileCopy = version >= 150000
	template = prefix + "_template"
	if err := buildTemplate(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "pgtest: template:", err)
		return 1
	}
	code := m.Run()
	dropAll(ctx)
	return code
}

func buildTemplate(ctx context.Context) error {
	if _, err := admin.ExecContext(ctx, `CREATE DATABASE `+template); err != nil {
		return err
	}
	db, err := sql.Open("postgres", WithDatabase(adminURL, template))
	if err != nil {
		return err
	}
	defer func() { _ = db.Close() }()
	if err := store.Migrate(ctx, db); err != nil {
		return err
	}
	return db.Close()
}

func dropAll(ctx context.Context) {
	rows, err := admin.QueryContext(ctx, `SELECT datname FROM pg_database WHERE datname LIKE $1`, prefix+"\\_%")
	if err != nil {
		return
	}
	var names []string
	for rows.Next() {
		var n string
		if rows.Scan(&n) == nil {
			names = append(names, n)
		}
	}
	rows.Close()
	for _, n := range names {
		_, _ = admin.ExecContext(ctx, `DROP DATABASE IF EXISTS `+n+` WITH (FORCE)`)
	}
}

// WithDatabase returns url u pointing at database name.
func WithDatabase(u, name string) string {
	pu, err := url.Parse(u)
	if err != nil {
		panic(err)
	}
	pu.Path = "/" + name
	return pu.String()
}

// NewDatabase clones the template into a fresh database for t and returns its URL. The
// database is dropped when the test ends.
func NewDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("%s_%d", prefix, counter.Add(1))
	q := `CREATE DATABASE ` + name + ` TEMPLATE ` + template
	if fileCopy {
		q += ` STRATEGY FILE_COPY`
	}
	if _, err := admin.Exec(q); err != nil {
		t.Fatalf("pgtest: clone template: %v", err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`); err != nil && !strings.Contains(err.Error(), "does not exist") {
			t.Logf("pgtest: drop %s: %v", name, err)
		}
	})
	return WithDatabase(adminURL, name)
}

// AdminURL is the URL of the cluster's maintenance database.
func AdminURL() string { return adminURL }

// Tenant makes, in st, an owner, their organization and a project in it, as at now, and
// returns their ids: what a test of data in an organization starts from.
func Tenant(t testing.TB, st *store.Store, now time.Time) (usr, org, prj string) {
	t.Helper()
	ctx := context.Background()
	usr, org, prj = store.NewID("usr"), store.NewID("org"), store.NewID("prj")
	if err := store.CreateUser(ctx, st.DB, &store.User{ID: usr, Email: usr + "@example.com", Name: "Owner", Status: "active", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if err := store.CreateOrganization(ctx, st.DB, &store.Organization{ID: org, Name: "Org", Slug: org, PlanTier: "free", CreatedAt: now, UpdatedAt: now}, usr); err != nil {
		t.Fatal(err)
	}
	if err := store.CreateProject(ctx, st.DB, &store.Project{ID: prj, OrgID: org, Name: "P", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	return usr, org, prj
}
