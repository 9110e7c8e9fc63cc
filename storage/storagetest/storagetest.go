// Package storagetest opens real storage databases for tests: a SQLite file
// in the test's temporary directory, closed when the test ends.
package storagetest

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ncruces/go-sqlite3/driver"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/fileio"
	"github.com/hearth-memory/hearth/storage/internal/pgtest"
	_ "github.com/hearth-memory/hearth/storage/postgres" // pgx, for OpenPostgres
	"github.com/hearth-memory/hearth/storage/screen"
)

// BackendEnv is the variable that runs the tests on PostgreSQL: set to
// "postgres", Open opens a PostgreSQL database of the test's own
// (docs/postgres.md, "Tests"); unset or "sqlite", a SQLite file.
const BackendEnv = "HEARTH_STORAGE_BACKEND"

// Postgres reports whether the tests run on PostgreSQL (BackendEnv).
func Postgres() bool { return os.Getenv(BackendEnv) == storage.BackendPostgres }

// Main runs a test package's tests (its TestMain calls
// os.Exit(storagetest.Main(m))) and stops the private PostgreSQL the
// tests started, if any. A package whose tests may run on PostgreSQL
// (BackendEnv) must run them through Main.
func Main(m *testing.M) int {
	if b := os.Getenv(BackendEnv); b != "" && b != storage.BackendSQLite && b != storage.BackendPostgres {
		fmt.Fprintf(os.Stderr, "storagetest: %s=%q: want %q or %q\n", BackendEnv, b, storage.BackendSQLite, storage.BackendPostgres)
		return 2
	}
	return pgtest.Main(m)
}

// SQLiteOnly skips tb on PostgreSQL: what it tests is SQLite's alone
// (why says what, e.g. "the WAL's checkpoints"), a difference
// docs/postgres.md lists.
func SQLiteOnly(tb testing.TB, why string) {
	tb.Helper()
	if Postgres() {
		tb.Skipf("SQLite only: %s", why)
	}
}

// PostgresTODO skips tb on PostgreSQL because the PostgreSQL engine lacks
// what it needs yet (why): the to-do list of docs/postgres.md, found by
// grep. Unlike SQLiteOnly, it marks no real difference.
func PostgresTODO(tb testing.TB, why string) {
	tb.Helper()
	if Postgres() {
		tb.Skipf("TODO(postgres): %s", why)
	}
}

// Open opens a new, migrated database in tb.TempDir(). It is closed by
// tb.Cleanup; a failure to open or close fails the test. The file is a copy
// of one database migrated once per test binary (template): a fresh run of
// every migration costs each test far more than copying its result.
//
// On PostgreSQL (BackendEnv) it opens a new database of the test's own
// instead, copied from a migrated template and dropped when the test ends
// (pgtest.URL).
//
// opts are SQLite's (storage.Option); PostgreSQL's engine ignores them.
func Open(tb testing.TB, opts ...storage.Option) *storage.DB {
	tb.Helper()
	if Postgres() {
		return OpenURL(tb, pgtest.URL(tb))
	}
	src, err := template()
	if err != nil {
		tb.Fatalf("storagetest: the migrated template: %v", err)
	}
	path := filepath.Join(tb.TempDir(), "hearth.db")
	if err := os.WriteFile(path, src, 0o600); err != nil {
		tb.Fatal(err)
	}
	return OpenPath(tb, path, opts...)
}

// template returns the bytes of a database file that storage.Open created
// and migrated, then closed (so that the write-ahead log is folded into
// it), made once per test binary in a directory removed at once.
var template = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "hearth-template-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "hearth.db")
	db, err := storage.Open(context.Background(), path)
	if err != nil {
		return nil, err
	}
	if err := db.Close(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(path + "-wal"); err == nil {
		return nil, fmt.Errorf("%s-wal is left after Close: the copy would miss what it holds", path)
	}
	return os.ReadFile(path)
})

// Place returns where a test's database will be, for a test that opens it
// more than once (OpenPath): a file in tb.TempDir() on SQLite, a new
// migrated PostgreSQL database's URL under BackendEnv=postgres.
func Place(tb testing.TB) string {
	tb.Helper()
	if Postgres() {
		return URL(tb)
	}
	return filepath.Join(tb.TempDir(), "hearth.db")
}

// OpenPath opens the database at path (for tests that reopen one file),
// closing it by tb.Cleanup; a PostgreSQL URL from Place opens that
// database (OpenURL).
func OpenPath(tb testing.TB, path string, opts ...storage.Option) *storage.DB {
	tb.Helper()
	if strings.HasPrefix(path, "postgres://") {
		return OpenURL(tb, path)
	}
	db, err := storage.Open(context.Background(), path, opts...)
	if err != nil {
		tb.Fatalf("storage.Open(%q): %v", path, err)
	}
	tb.Cleanup(func() {
		if err := db.Close(); err != nil {
			tb.Errorf("close: %v", err)
		}
	})
	return db
}

// OpenURL opens the PostgreSQL database at url (storage.OpenPostgres),
// closing it by tb.Cleanup: for tests that open one database twice, as
// two front ends.
func OpenURL(tb testing.TB, url string) *storage.DB {
	tb.Helper()
	db, err := storage.OpenPostgres(context.Background(), url)
	if err != nil {
		tb.Fatalf("storage.OpenPostgres: %v", err)
	}
	tb.Cleanup(func() {
		if err := db.Close(); err != nil {
			tb.Errorf("close: %v", err)
		}
	})
	return db
}

// OpenRaw opens the database at place (a file, or a PostgreSQL URL from
// Place) through a connection pool of its own, not the store's, closed by
// tb.Cleanup: for a test that checks what the schema itself refuses to any
// client, or reads what the store wrote behind its back.
func OpenRaw(tb testing.TB, place string) *sql.DB {
	tb.Helper()
	var (
		raw *sql.DB
		err error
	)
	if strings.HasPrefix(place, "postgres://") {
		raw, err = sql.Open("pgx", place)
	} else {
		raw, err = driver.Open("file:" + place)
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { raw.Close() })
	return raw
}

// Contains reports whether the database at place (a file, or a PostgreSQL
// URL from Place) holds needle anywhere: in the bytes of the file, its WAL
// and shared memory on SQLite (close the store first, so that nothing is
// only in its memory); in any column of any row of any table of the
// database on PostgreSQL, read as text (bytea columns as their hex, which
// is searched too), where the server's own files are out of reach.
func Contains(tb testing.TB, place, needle string) bool {
	tb.Helper()
	if !strings.HasPrefix(place, "postgres://") {
		for _, p := range []string{place, place + "-wal", place + "-shm"} {
			b, err := os.ReadFile(p)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				tb.Fatal(err)
			}
			if bytes.Contains(b, []byte(needle)) {
				return true
			}
		}
		return false
	}
	ctx := context.Background()
	raw := OpenRaw(tb, place)
	rows, err := raw.QueryContext(ctx, `SELECT quote_ident(table_name) FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`)
	if err != nil {
		tb.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			tb.Fatal(err)
		}
		tables = append(tables, t)
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	rows.Close()
	if len(tables) == 0 {
		tb.Fatal("storagetest.Contains: the database has no tables")
	}
	for _, t := range tables {
		var found bool
		// A row as text holds each column's text; a bytea column's is
		// \x and its hex.
		q := `SELECT EXISTS (SELECT 1 FROM ` + t + ` x WHERE strpos(x::text, $1) > 0 OR strpos(x::text, $2) > 0)`
		if err := raw.QueryRowContext(ctx, q, needle, hex.EncodeToString([]byte(needle))).Scan(&found); err != nil {
			tb.Fatalf("%s: %v", t, err)
		}
		if found {
			return true
		}
	}
	return false
}

// URL is a new PostgreSQL database's URL, migrated, dropped when tb ends
// (pgtest.URL): for OpenURL.
func URL(tb testing.TB) string {
	tb.Helper()
	return pgtest.URL(tb)
}

// EmptyURL is a new PostgreSQL database's URL with no tables, dropped
// when tb ends (pgtest.EmptyURL): what an administrator creates for Hearth,
// which migrates it at its first start.
func EmptyURL(tb testing.TB) string {
	tb.Helper()
	return pgtest.EmptyURL(tb)
}

// StartPostgres starts a private PostgreSQL for a program that is not a
// test (cmd/eval's -postgres): pgtest.Start, the tests' own server. url
// is its postgres database's, as a superuser; stop shuts it down and
// removes its directory.
func StartPostgres() (url string, stop func() error, err error) {
	return pgtest.Start()
}

// Text screens s for a test, failing the test if the screen refuses it.
func Text(tb testing.TB, s string) screen.Text {
	tb.Helper()
	t, err := screen.Check("test", s)
	if err != nil {
		tb.Fatalf("screen.Check(%q): %v", s, err)
	}
	return t
}

// Texts screens each of ss with Text.
func Texts(tb testing.TB, ss ...string) []screen.Text {
	tb.Helper()
	out := make([]screen.Text, len(ss))
	for i, s := range ss {
		out[i] = Text(tb, s)
	}
	return out
}

// Store stores nr with defaults filled in for the fields tests rarely care
// about (namespace "global", type note, confidence 0.8, writer "test", source
// store, status active), failing the test on error.
func Store(tb testing.TB, db *storage.DB, nr storage.NewRecord) *storage.Record {
	tb.Helper()
	if nr.Namespace == "" {
		nr.Namespace = "global"
	}
	if nr.Type == "" {
		nr.Type = storage.TypeNote
	}
	if nr.Confidence == 0 {
		nr.Confidence = 0.8
	}
	if nr.Writer == "" {
		nr.Writer = "test"
	}
	if nr.Source == "" {
		nr.Source = storage.SourceStore
	}
	if nr.Status == "" {
		nr.Status = storage.StatusActive
	}
	if nr.Title.String() == "" {
		nr.Title = Text(tb, "untitled")
	}
	if nr.Content.String() == "" {
		nr.Content = Text(tb, "no content")
	}
	rec, err := db.Store(context.Background(), nr)
	if err != nil {
		tb.Fatalf("Store: %v", err)
	}
	return rec
}

// CopyFile copies from to a file to (0600), replacing it: the benchmarks'
// prefilled stores are copied into each run's directory.
func CopyFile(from, to string) error {
	if err := os.Remove(to); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return fileio.Copy(from, to)
}
