// Package backup writes one archive of a whole installation, and restores it into an empty
// one: the database (control plane and every organization's tables, by pg_dump's consistent
// snapshot, while the server runs), the data directory's files (uploads, exports), and the key
// that seals stored credentials.
//
// The archive (tar, gzip) holds manifest.json, database.dump (pg_dump's custom format, no
// owners), files/... and, flagged in the manifest, secret.key. Anyone holding the archive can
// read every credential the installation keeps: store it as the secret it is.
package backup

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"dataplatform/store/pgembed"

	"github.com/lib/pq"
)

// queryRole matches the name of an organization's query role (datasets.QueryRole).
var queryRole = regexp.MustCompile(`dp_query_org_[a-z0-9]+`)

// Format is the archive layout's version.
const Format = 1

// Manifest describes an archive.
type Manifest struct {
	Format     int       `json:"format"`
	CreatedAt  time.Time `json:"created_at"`
	Migration  int64     `json:"migration"` // the schema version of the database
	Files      int       `json:"files"`
	Bytes      int64     `json:"bytes"`
	SecretKey  bool      `json:"secret_key_included"`
	KeyWarning string    `json:"secret_key_warning,omitempty"`
}

// dirs are the data directory's folders an installation needs back.
var dirs = []string{"uploads", "exports"}

// Write archives the database at dbURL, the files of dataDir and the secret key (base64 text,
// or nil) to w.
func Write(ctx context.Context, dbURL, dataDir string, secretKey []byte, w io.Writer) (*Manifest, error) {
	pgDump, err := pgembed.Tool("pg_dump")
	if err != nil {
		return nil, err
	}
	m := &Manifest{Format: Format, CreatedAt: time.Now().UTC(), SecretKey: secretKey != nil}
	if m.SecretKey {
		m.KeyWarning = "secret.key decrypts every credential this installation stores: keep the archive as secret as the key"
	}
	db, err := sql.Open("postgres", dbURL)
	if err != nil {
		return nil, err
	}
	defer func() { _ = db.Close() }()
	if err := db.QueryRowContext(ctx, `SELECT COALESCE(max(version_id), 0) FROM goose_db_version WHERE is_applied`).Scan(&m.Migration); err != nil {
		return nil, fmt.Errorf("not a dataplatform database: %w", err)
	}
	tmp, err := os.MkdirTemp("", "dp-backup-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	dump := filepath.Join(tmp, "database.dump")
	// One snapshot of the whole database: every organization's tables as of the same moment
	// as the control plane that describes them.
	cmd := exec.CommandContext(ctx, pgDump, "--format=custom", "--no-owner", "--file="+dump, "--dbname="+dbURL)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("pg_dump: %v: %s", err, out)
	}
	// Files after the snapshot: uploads are written once under new names, so every file the
	// snapshot refers to is there (a file deleted meanwhile is the deletion's, and reported).
	var files []string
	for _, d := range dirs {
		err := filepath.WalkDir(filepath.Join(dataDir, d), func(p string, e fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				return err
			}
			if e.Type().IsRegular() {
				rel, _ := filepath.Rel(dataDir, p)
				files = append(files, rel)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	m.Files = len(files)
	zw := gzip.NewWriter(w)
	tw := tar.NewWriter(zw)
	put := func(name string, mode int64, r io.Reader, size int64) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: size, ModTime: m.CreatedAt, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := io.Copy(tw, r)
		return err
	}
	putFile := func(name, path string, mode int64) error {
		f, err := os.Open(path)
		if errors.Is(err, fs.ErrNotExist) && name != "database.dump" {
			return nil // removed since the walk
		}
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		st, err := f.Stat()
		if err != nil {
			return err
		}
		m.Bytes += st.Size()
		return put(name, mode, f, st.Size())
	}
	if err := putFile("database.dump", dump, 0o600); err != nil {
		return nil, err
	}
	for _, f := range files {
		if err := putFile("files/"+filepath.ToSlash(f), filepath.Join(dataDir, f), 0o600); err != nil {
			return nil, err
		}
	}
	if secretKey != nil {
		if err := put("secret.key", 0o600, strings.NewReader(string(secretKey)), int64(len(secretKey))); err != nil {
			return nil, err
		}
	}
	mj, _ := json.MarshalIndent(m, "", "  ")
	if err := put("manifest.json", 0o644, strings.NewReader(string(mj)), int64(len(mj))); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return m, zw.Close()
}

// Restore brings an archive into an empty database at dbURL and the data directory dataDir
// (its uploads and exports must not exist yet). The secret key goes to dataDir's key file
// unless keyFromEnv (DP_SECRET_KEY is set): then it must be that key.
func Restore(ctx context.Context, r io.Reader, dbURL, dataDir string, keyFromEnv []byte) (*Manifest, error) {
	pgRestore, err := pgembed.Tool("pg_restore")
	if err != nil {
		return nil, err
	}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(dataDir, d)); err == nil {
			return nil, fmt.Errorf("the data directory %s already holds %s: restore into an empty one", dataDir, d)
		}
	}
	db, err := sql.Open("postgres", dbURL)
	if err != nil {
		return nil, err
	}
	defer func() { _ = db.Close() }()
	var used bool
	if err := db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'platform')
		OR EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = 'public')`).Scan(&used); err != nil {
		return nil, err
	}
	if used {
		return nil, errors.New("the database is not empty (it has the platform schema or tables): restore into an empty database")
	}
	// Unpacked beside its destination, so that its folders move into place by renaming.
	if err := os.MkdirAll(dataDir, 0o711); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(dataDir, ".restore-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	m, key, err := unpack(r, tmp)
	if err != nil {
		return nil, err
	}
	if keyFromEnv != nil && key != nil && strings.TrimSpace(string(key)) != strings.TrimSpace(string(keyFromEnv)) {
		return nil, errors.New("DP_SECRET_KEY is set and is not the archive's key: stored credentials would not open; unset it or set it to the archive's key")
	}
	dump := filepath.Join(tmp, "database.dump")
	restore := func(section string) error {
		cmd := exec.CommandContext(ctx, pgRestore, "--section="+section, "--no-owner", "--exit-on-error",
			"--single-transaction", "--dbname="+dbURL, dump)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("pg_restore (%s): %v: %s", section, err, out)
		}
		return nil
	}
	// The organizations' query roles are the cluster's, not the database's: made again first,
	// since grants and row-level policies of the dump name them.
	script, err := exec.CommandContext(ctx, pgRestore, "--file=-", dump).Output()
	if err != nil {
		return nil, fmt.Errorf("pg_restore (reading the dump): %w", err)
	}
	roles := map[string]bool{}
	for _, r := range queryRole.FindAllString(string(script), -1) {
		roles[r] = true
	}
	for r := range roles {
		if _, err := db.ExecContext(ctx, `DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = `+pq.QuoteLiteral(r)+`) THEN
			CREATE ROLE `+pq.QuoteIdentifier(r)+` NOLOGIN NOINHERIT NOBYPASSRLS; END IF; END $$`); err != nil {
			return nil, err
		}
		if _, err := db.ExecContext(ctx, `GRANT `+pq.QuoteIdentifier(r)+` TO CURRENT_USER`); err != nil {
			return nil, err
		}
	}
	if err := restore("pre-data"); err != nil {
		return nil, err
	}
	if err := restore("data"); err != nil {
		return nil, err
	}
	if err := restore("post-data"); err != nil {
		return nil, err
	}
	for _, d := range dirs {
		if src := filepath.Join(tmp, "files", d); exists(src) {
			if err := os.Rename(src, filepath.Join(dataDir, d)); err != nil {
				return nil, err
			}
		}
	}
	if key != nil && keyFromEnv == nil {
		if err := os.WriteFile(filepath.Join(dataDir, "secret.key"), key, 0o600); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// unpack extracts an archive into dir and returns its manifest and secret key.
func unpack(r io.Reader, dir string) (*Manifest, []byte, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, nil, fmt.Errorf("not a dataplatform backup (gzip): %w", err)
	}
	tr := tar.NewReader(zr)
	var m *Manifest
	var key []byte
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("the archive is damaged: %w", err)
		}
		name := filepath.Clean(filepath.FromSlash(h.Name))
		if h.Typeflag != tar.TypeReg || filepath.IsAbs(name) || strings.HasPrefix(name, "..") {
			return nil, nil, fmt.Errorf("the archive has an unexpected entry %q", h.Name)
		}
		switch name {
		case "manifest.json":
			m = &Manifest{}
			if err := json.NewDecoder(tr).Decode(m); err != nil {
				return nil, nil, fmt.Errorf("manifest.json: %w", err)
			}
			continue
		case "secret.key":
			if key, err = io.ReadAll(io.LimitReader(tr, 1<<10)); err != nil {
				return nil, nil, err
			}
			continue
		}
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return nil, nil, err
		}
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o600)
		if err != nil {
			return nil, nil, err
		}
		_, err = io.Copy(f, tr)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, nil, err
		}
	}
	if m == nil || m.Format != Format {
		return nil, nil, errors.New("not a dataplatform backup of a format this version restores (manifest.json)")
	}
	if !exists(filepath.Join(dir, "database.dump")) {
		return nil, nil, errors.New("the archive has no database.dump")
	}
	return m, key, nil
}
