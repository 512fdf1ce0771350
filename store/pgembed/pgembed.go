// Package pgembed runs a private PostgreSQL cluster from the machine's server binaries: the
// default database of `dataplatform serve` and of the test suite.
//
// The postmaster runs as a child process on a free loopback port with no Unix socket. When the
// service runs as root the cluster runs as the unprivileged `postgres` user (PostgreSQL refuses
// root). The child gets SIGINT (fast shutdown) if this process dies, so a killed server does not
// leave a postmaster behind; a stale postmaster.pid from a crash is recovered on the next start.
package pgembed

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	_ "github.com/lib/pq"
)

// Options tune a cluster. The zero value is the production setting.
type Options struct {
	// Ephemeral trades durability for speed (no fsync): for test clusters only.
	Ephemeral bool
	Logger    *slog.Logger
	// LogFile receives the server's own log; default <dir>.log beside the data directory.
	LogFile string
}

// Cluster is a running postmaster.
type Cluster struct {
	Dir      string
	Port     int
	password string
	cmd      *exec.Cmd
	exited   chan struct{}
	waitErr  error
	log      *slog.Logger
}

// ErrNoBinaries means no PostgreSQL server binaries were found.
var ErrNoBinaries = errors.New("PostgreSQL server binaries (initdb, postgres) not found in PATH, `pg_config --bindir` or /usr/lib/postgresql/*/bin: install Debian's `postgresql` package (apt-get install postgresql) or set DATABASE_URL")

// FindBinaries returns the directory holding initdb and postgres.
func FindBinaries() (string, error) {
	ok := func(dir string) bool {
		for _, b := range []string{"initdb", "postgres", "pg_ctl"} {
			if st, err := os.Stat(filepath.Join(dir, b)); err != nil || st.IsDir() {
				return false
			}
		}
		return true
	}
	if p, err := exec.LookPath("postgres"); err == nil && ok(filepath.Dir(p)) {
		return filepath.Dir(p), nil
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		if d := strings.TrimSpace(string(out)); ok(d) {
			return d, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if ok(d) {
			return d, nil
		}
	}
	return "", ErrNoBinaries
}

func version(binDir string) float64 {
	v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(binDir)), 64)
	return v
}

// owner is who runs the cluster: nil for the current user, postgres when we are root.
func owner() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root: PostgreSQL refuses to run as root and there is no `postgres` user to run it as (install Debian's postgresql package, or run as an unprivileged user): %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// serverEnv is the environment of the server's processes: the caller's without libpq's PG*
// variables (a foreign server's connections must not pick up the caller's PGPASSWORD or
// PGSSLMODE) and, when the cluster runs as another user, with that user's HOME: libpq reads
// ~/.postgresql for client certificates, and an unreadable one fails every TLS connection.
func serverEnv(cred *syscall.Credential) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") && !(cred != nil && strings.HasPrefix(kv, "HOME=")) {
			env = append(env, kv)
		}
	}
	if cred != nil {
		if u, err := user.LookupId(strconv.Itoa(int(cred.Uid))); err == nil {
			env = append(env, "HOME="+u.HomeDir)
		}
	}
	return env
}

// Start initialises dir when it holds no cluster, recovers a stale postmaster left by a crash,
// starts the postmaster and waits until it accepts connections. The superuser password lives in
// passwordFile (created with mode 0600 on first start).
func Start(ctx context.Context, dir, passwordFile string, o Options) (*Cluster, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	bin, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	cred, err := owner()
	if err != nil {
		return nil, err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, err
	}
	if cred != nil {
		if err := reachable(filepath.Dir(dir)); err != nil {
			return nil, err
		}
	}
	password, err := loadPassword(passwordFile)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, "PG_VERSION")); errors.Is(err, os.ErrNotExist) {
		start := time.Now()
		if err := initdb(bin, dir, password, cred, o.Ephemeral); err != nil {
			return nil, err
		}
		o.Logger.Info("initialised embedded PostgreSQL cluster", "dir", dir, "ms", time.Since(start).Milliseconds())
	} else if err != nil {
		return nil, err
	}
	if err := recoverStale(dir, o.Logger); err != nil {
		return nil, err
	}
	if o.LogFile == "" {
		o.LogFile = dir + ".log"
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ { // a free port can be taken between probe and bind
		c, err := launch(ctx, bin, dir, password, cred, o)
		if err == nil {
			return c, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

// reachable checks that the postgres user can traverse every parent of dir.
func reachable(dir string) error {
	for d := dir; ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return err
		}
		if st.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("the postgres user cannot enter %s (mode %v), which holds the embedded cluster: make it traversable (chmod o+x) or choose another DP_DATA_DIR", d, st.Mode().Perm())
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

func loadPassword(path string) (string, error) {
	if b, err := os.ReadFile(path); err == nil {
		if p := strings.TrimSpace(string(b)); p != "" {
			return p, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	buf := make([]byte, 24)
	if _, err := rand.Read(buf); err != nil {
		return "", err
	}
	p := hex.EncodeToString(buf)
	if err := os.WriteFile(path, []byte(p+"\n"), 0o600); err != nil {
		return "", err
	}
	return p, nil
}

func chownTree(dir string, cred *syscall.Credential) error {
	if cred == nil {
		return nil
	}
	return filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(cred.Uid), int(cred.Gid))
	})
}

// initdb creates the cluster, with the C.UTF-8 locale when the machine has it and the portable
// C locale otherwise.
func initdb(bin, dir, password string, cred *syscall.Credential, ephemeral bool) error {
	var err error
	for _, locale := range []string{"--locale=C.UTF-8", "--no-locale"} {
		if err = initdbWith(bin, dir, password, cred, ephemeral, locale); err == nil {
			return nil
		}
		_ = os.RemoveAll(dir)
	}
	return err
}

func initdbWith(bin, dir, password string, cred *syscall.Credential, ephemeral bool, locale string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	// initdb reads the password from a file only the cluster owner can read, beside the data
	// directory and only while initdb runs.
	pwfile := dir + ".initdb-pw"
	if err := os.WriteFile(pwfile, []byte(password+"\n"), 0o600); err != nil {
		return err
	}
	defer func() { _ = os.Remove(pwfile) }()
	if err := chownTree(pwfile, cred); err != nil {
		return err
	}
	if err := chownTree(dir, cred); err != nil {
		return err
	}
	args := []string{"-D", dir, "-U", "postgres", "--pwfile", pwfile, "--auth=scram-sha-256", "-E", "UTF8", locale}
	if ephemeral {
		args = append(args, "--no-sync")
	}
	cmd := exec.Command(filepath.Join(bin, "initdb"), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	cmd.Dir, cmd.Env = "/", serverEnv(cred)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb failed: %v\n%s", err, out)
	}
	return nil
}

// recoverStale deals with a postmaster.pid left behind by a crash. A live postmaster of this
// data directory (a server killed with -9 before its child noticed) is shut down; a dead one's
// file is left for PostgreSQL, which removes stale lock files itself.
func recoverStale(dir string, log *slog.Logger) error {
	b, err := os.ReadFile(filepath.Join(dir, "postmaster.pid"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 {
		return os.Remove(filepath.Join(dir, "postmaster.pid"))
	}
	if !isPostgres(pid) {
		log.Warn("removing stale postmaster.pid", "pid", pid)
		return os.Remove(filepath.Join(dir, "postmaster.pid"))
	}
	log.Warn("a postmaster from an earlier run is still alive; shutting it down", "pid", pid)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGQUIT, syscall.SIGKILL} {
		_ = syscall.Kill(pid, sig)
		deadline := time.Now().Add(15 * time.Second)
		for time.Now().Before(deadline) {
			if !isPostgres(pid) {
				time.Sleep(100 * time.Millisecond) // let its backends go
				return nil
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return fmt.Errorf("could not stop the postmaster (pid %d) left running on %s", pid, dir)
}

func isPostgres(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err == nil {
		// A zombie (state Z) is dead for our purposes.
		if i := bytes.LastIndexByte(st, ')'); i > 0 && i+2 < len(st) && st[i+2] == 'Z' {
			return false
		}
	}
	return bytes.Contains(cmdline, []byte("postgres"))
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func launch(ctx context.Context, bin, dir, password string, cred *syscall.Credential, o Options) (*Cluster, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	args := []string{"-D", dir, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=",
		"-c", "max_connections=200",
		"-c", "shared_buffers=128MB",
	}
	if o.Ephemeral {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	logf, err := os.OpenFile(o.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return nil, err
	}
	defer func() { _ = logf.Close() }() // postgres holds its own descriptor of the log
	cmd := exec.Command(filepath.Join(bin, "postgres"), args...)
	cmd.Dir, cmd.Env = "/", serverEnv(cred)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Setpgid keeps a terminal's Ctrl-C away from the postmaster (we stop it ourselves);
	// Pdeathsig stops it if this process dies without doing so.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGINT}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	c := &Cluster{Dir: dir, Port: port, password: password, cmd: cmd, exited: make(chan struct{}), log: o.Logger}
	go func() { c.waitErr = cmd.Wait(); close(c.exited) }()

	db, err := sql.Open("postgres", c.URL("postgres"))
	if err != nil {
		_ = c.Stop()
		return nil, err
	}
	defer func() { _ = db.Close() }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err = db.PingContext(pctx)
		cancel()
		if err == nil {
			return c, nil
		}
		select {
		case <-c.exited:
			return nil, fmt.Errorf("postgres exited during start-up (%v); its log: %s\n%s", c.waitErr, o.LogFile, tail(o.LogFile, 20))
		case <-ctx.Done():
			_ = c.Stop()
			return nil, ctx.Err()
		case <-time.After(25 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = c.Stop()
			return nil, fmt.Errorf("postgres did not accept connections within 60s: %v; its log: %s", err, o.LogFile)
		}
	}
}

func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }()
	var lines []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		lines = append(lines, s.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// URL is the connection URL of database db as the superuser.
func (c *Cluster) URL(db string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword("postgres", c.password),
		Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(c.Port)), Path: "/" + db, RawQuery: "sslmode=disable"}
	return u.String()
}

// Stop shuts the cluster down (fast shutdown, then immediate after 30 seconds).
func (c *Cluster) Stop() error {
	select {
	case <-c.exited:
		return nil
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-c.exited:
		return nil
	case <-time.After(30 * time.Second):
	}
	_ = c.cmd.Process.Signal(syscall.SIGQUIT)
	<-c.exited
	return nil
}

// Running is the URL of database db of the cluster another process (a running server) has
// started in dir, or false when none runs there.
func Running(dir, passwordFile, db string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(dir, "postmaster.pid"))
	if err != nil {
		return "", false
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 4 {
		return "", false
	}
	pid, err1 := strconv.Atoi(strings.TrimSpace(lines[0]))
	port, err2 := strconv.Atoi(strings.TrimSpace(lines[3]))
	password, err3 := os.ReadFile(passwordFile)
	if err1 != nil || err2 != nil || err3 != nil || !isPostgres(pid) {
		return "", false
	}
	c := &Cluster{Port: port, password: strings.TrimSpace(string(password))}
	return c.URL(db), true
}

// Tool is the path of a client program of the same PostgreSQL as the server binaries
// (pg_dump, pg_restore): beside them, beside what they link to, or on PATH.
func Tool(name string) (string, error) {
	bin, err := FindBinaries()
	if err != nil {
		return "", err
	}
	dirs := []string{bin}
	if real, err := filepath.EvalSymlinks(filepath.Join(bin, "postgres")); err == nil {
		dirs = append(dirs, filepath.Dir(real))
	}
	for _, d := range dirs {
		if st, err := os.Stat(filepath.Join(d, name)); err == nil && !st.IsDir() {
			return filepath.Join(d, name), nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%s not found beside PostgreSQL's server programs (%s) or on PATH: install Debian's postgresql-client", name, bin)
}
