// Package pgtest gives tests a private PostgreSQL: started once per test
// binary from the installed server's binaries (initdb and postgres, run as
// the postgres user when the tests run as root) in a temporary directory,
// listening on a loopback port, stopped and removed when the tests end. Each
// test gets a database of its own, a copy of one migrated template, as
// storagetest gives each a copy of a migrated SQLite file
// (docs/postgres.md, Tests).
//
// A test package that uses it runs its tests through Main. Without the
// binaries its tests skip, unless HEARTH_REQUIRE_POSTGRES is set (.ci/run
// and make test set it), when they fail.
package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"

	"github.com/hearth-memory/hearth/storage/internal/pgschema"
)

// RequireEnv is the variable that turns a missing PostgreSQL from a skip
// into a failure.
const RequireEnv = "HEARTH_REQUIRE_POSTGRES"

// template is the migrated database every test's database copies.
const template = "hearth_template"

// errNoBinaries says the server's binaries are not installed.
var errNoBinaries = errors.New("pgtest: no PostgreSQL server binaries (initdb and postgres): " +
	"install Debian's postgresql package (make postgres does), or set HEARTH_POSTGRES_BIN to their directory")

var (
	mainRan  atomic.Bool
	serverMu sync.Mutex
	running  *server
	startErr error
	started  bool
	dbSeq    atomic.Int64
)

// Main runs m's tests and then stops the server if one was started; a test
// package's TestMain calls os.Exit(pgtest.Main(m)).
func Main(m *testing.M) int {
	mainRan.Store(true)
	code := m.Run()
	serverMu.Lock()
	defer serverMu.Unlock()
	if running != nil {
		if err := running.stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			if code == 0 {
				code = 1
			}
		}
		running = nil
	}
	return code
}

// get returns the running server, starting it on first use.
func get(tb testing.TB) *server {
	tb.Helper()
	if !mainRan.Load() {
		tb.Fatal("pgtest: the package's TestMain must run its tests through pgtest.Main, which stops the server")
	}
	serverMu.Lock()
	defer serverMu.Unlock()
	if !started {
		started = true
		running, startErr = start()
	}
	switch {
	case errors.Is(startErr, errNoBinaries) && os.Getenv(RequireEnv) == "":
		tb.Skipf("%v; %s=1 makes this a failure", startErr, RequireEnv)
	case startErr != nil:
		tb.Fatal(startErr)
	}
	return running
}

// URL returns the connection URL of a new database, migrated, dropped when
// tb ends (with any connection to it still open).
func URL(tb testing.TB) string {
	tb.Helper()
	return get(tb).database(tb, template)
}

// EmptyURL returns the connection URL of a new, empty database (no
// migration), dropped when tb ends.
func EmptyURL(tb testing.TB) string {
	tb.Helper()
	return get(tb).database(tb, "template0")
}

// Open opens a new migrated database through database/sql and pgx, closed
// and dropped when tb ends.
func Open(tb testing.TB) *sql.DB {
	tb.Helper()
	db, err := sql.Open("pgx", URL(tb))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := db.Close(); err != nil {
			tb.Errorf("pgtest: close: %v", err)
		}
	})
	return db
}

// Start starts a private PostgreSQL of its own, as the tests' (the same
// binaries, cluster and settings, the template included), for a program
// that is not a test: cmd/eval's -postgres. It returns the URL of its
// postgres database, as the hearth superuser, who may create databases,
// and stop, which shuts the server down and removes its directory. On
// Linux the server is stopped as well when the calling process dies.
func Start() (url string, stop func() error, err error) {
	s, err := start()
	if err != nil {
		return "", nil, err
	}
	return s.url("postgres"), s.stop, nil
}

// server is one running postgres.
type server struct {
	dir      string // removed by stop
	port     int
	password string
	cmd      *exec.Cmd
	exited   chan struct{} // closed when cmd has exited
	waitErr  error
	admin    *sql.DB // the postgres database, for CREATE and DROP DATABASE
}

func (s *server) url(database string) string {
	u := url.URL{
		Scheme: "postgres",
		User:   url.UserPassword("hearth", s.password),
		Host:   net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)),
		Path:   "/" + database,
	}
	return u.String() + "?sslmode=disable"
}

// database creates a database copied from from, dropped when tb ends.
func (s *server) database(tb testing.TB, from string) string {
	tb.Helper()
	name, err := s.create(from)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.drop(name); err != nil {
			tb.Error(err)
		}
	})
	return s.url(name)
}

// create makes a new database copied from from and returns its name.
// FILE_COPY copies the template's files (a checkpoint, cheap with fsync
// off) where PostgreSQL 15's default, WAL_LOG, logs every block: 0.14 to
// 0.22 s a database against 0.49 to 0.55 s (BenchmarkURL).
func (s *server) create(from string) (string, error) {
	name := fmt.Sprintf("hearth_test_%d", dbSeq.Add(1))
	if _, err := s.admin.ExecContext(context.Background(), `CREATE DATABASE `+name+` TEMPLATE `+from+` STRATEGY FILE_COPY`); err != nil {
		return "", fmt.Errorf("pgtest: create database: %w", err)
	}
	return name, nil
}

// drop drops database name, closing any connection to it still open.
func (s *server) drop(name string) error {
	if _, err := s.admin.ExecContext(context.Background(), `DROP DATABASE `+name+` WITH (FORCE)`); err != nil {
		return fmt.Errorf("pgtest: drop database %s: %w", name, err)
	}
	return nil
}

// start finds the binaries, makes a cluster in a new temporary directory,
// starts postgres on a free loopback port and migrates the template.
func start() (*server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	owner, err := serverUser()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "hearth-pg-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	s := &server{dir: dir}
	ok := false
	defer func() {
		if !ok {
			_ = s.stop()
		}
	}()
	if err := owner.chown(dir); err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	pw := make([]byte, 16)
	if _, err := rand.Read(pw); err != nil {
		return nil, err
	}
	s.password = hex.EncodeToString(pw)
	pwFile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwFile, []byte(s.password+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	if err := owner.chown(pwFile); err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "hearth", "--pwfile="+pwFile,
		"--auth=scram-sha-256", "--encoding=UTF8", "--locale=C", "--no-sync", "--no-instructions")
	initdb.SysProcAttr = owner.attr()
	initdb.Dir = dir
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("pgtest: initdb: %v: %s", err, out)
	}
	// A port taken between the probe and postgres's bind fails the start:
	// try a few.
	for try := 0; ; try++ {
		err = s.run(bin, data, owner)
		if err == nil {
			break
		}
		if try == 3 {
			return nil, err
		}
	}
	if err := s.makeTemplate(); err != nil {
		return nil, err
	}
	ok = true
	return s, nil
}

// run starts postgres and waits until it takes connections; on failure
// postgres is stopped.
func (s *server) run(bin, data string, owner serverOwner) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	s.port = port
	logPath := filepath.Join(s.dir, "postgres.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer logf.Close()
	// The settings trade durability for speed: the cluster lives as long as
	// the test binary.
	s.cmd = exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port),
		"-k", s.dir, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off",
		"-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=300",
		"-c", "shared_buffers=32MB")
	s.cmd.SysProcAttr = owner.attr()
	s.cmd.Dir = s.dir
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("pgtest: start postgres: %w", err)
	}
	s.exited = make(chan struct{})
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.exited)
	}()
	if s.admin, err = sql.Open("pgx", s.url("postgres")); err != nil {
		return err
	}
	s.admin.SetMaxOpenConns(4)
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err = s.admin.PingContext(ctx)
		cancel()
		if err == nil {
			break
		}
		select {
		case <-s.exited:
			log, _ := os.ReadFile(logPath)
			s.admin.Close()
			return fmt.Errorf("pgtest: postgres exited (%v): %s", s.waitErr, tail(log))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logPath)
			s.admin.Close()
			_ = s.cmd.Process.Kill()
			<-s.exited
			return fmt.Errorf("pgtest: postgres takes no connection after a minute: %v: %s", err, tail(log))
		}
	}
	return nil
}

// makeTemplate creates the template database and migrates it; no
// connection to it stays open, so that CREATE DATABASE can copy it.
func (s *server) makeTemplate() error {
	ctx := context.Background()
	if _, err := s.admin.ExecContext(ctx, `CREATE DATABASE `+template); err != nil {
		return fmt.Errorf("pgtest: template: %w", err)
	}
	db, err := sql.Open("pgx", s.url(template))
	if err != nil {
		return err
	}
	defer db.Close()
	if err := pgschema.Migrate(ctx, db, time.Now); err != nil {
		return fmt.Errorf("pgtest: template: %w", err)
	}
	return db.Close()
}

// stop shuts postgres down (fast shutdown, then a kill after 30 s) and
// removes its directory.
func (s *server) stop() error {
	var errs []error
	if s.admin != nil {
		s.admin.Close()
	}
	if s.cmd != nil && s.cmd.Process != nil && s.exited != nil {
		_ = s.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-s.exited:
		case <-time.After(30 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
			errs = append(errs, errors.New("pgtest: postgres did not stop within 30 s of SIGINT: killed"))
		}
	}
	if err := os.RemoveAll(s.dir); err != nil {
		errs = append(errs, fmt.Errorf("pgtest: %w", err))
	}
	return errors.Join(errs...)
}

// binDir finds the directory holding initdb and postgres: HEARTH_POSTGRES_BIN,
// else initdb's on PATH (links followed: Debian's postgres is not on PATH),
// else the newest of Debian's /usr/lib/postgresql/N/bin.
func binDir() (string, error) {
	has := func(dir string) bool {
		for _, b := range []string{"initdb", "postgres"} {
			if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.IsDir() {
				return false
			}
		}
		return true
	}
	if d := os.Getenv("HEARTH_POSTGRES_BIN"); d != "" {
		if has(d) {
			return d, nil
		}
		return "", fmt.Errorf("%w: HEARTH_POSTGRES_BIN=%s holds neither", errNoBinaries, d)
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil && has(filepath.Dir(real)) {
			return filepath.Dir(real), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return version(b) - version(a) })
	for _, d := range dirs {
		if has(d) {
			return d, nil
		}
	}
	return "", errNoBinaries
}

// version is the major version in a Debian bin directory's path.
func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

// freePort returns a loopback port free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tail is the end of a log, for an error message.
func tail(log []byte) string {
	s := strings.TrimSpace(string(log))
	if len(s) > 2000 {
		s = "..." + s[len(s)-2000:]
	}
	return s
}
