package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/driver"
)

// oldDatabase makes a file at path that has had the first k migrations,
// as an older Hearth left it, and runs extra on it.
func oldDatabase(t *testing.T, path string, k int, extra ...string) {
	t.Helper()
	names, err := migrationNames()
	if err != nil {
		t.Fatal(err)
	}
	pool, err := driver.Open(dsn(path, "immediate", writerPragmas), (&Engine{cfg: Config{Funcs: testFuncs}}).initWriter)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	pool.SetMaxOpenConns(1)
	stmts := []string{migrationsTable}
	for _, name := range names[:k] {
		buf, err := fs.ReadFile(migrationFS, "migrations/"+name)
		if err != nil {
			t.Fatal(err)
		}
		stmts = append(stmts, string(buf), fmt.Sprintf(`INSERT INTO migrations (name, applied_at) VALUES ('%s', 0)`, name))
	}
	for _, s := range append(stmts, extra...) {
		if _, err := pool.Exec(s); err != nil {
			t.Fatalf("%.60s: %v", s, err)
		}
	}
}

// TestSchema_Upgrade holds that a file an older Hearth left (any prefix of
// the migrations) opens and is migrated, the check passing before and
// after; and that one with a trigger added is refused before any migration
// runs, so the trigger never fires on a migration's writes.
func TestSchema_Upgrade(t *testing.T) {
	t.Parallel()
	names, err := migrationNames()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{1, len(names) / 2, len(names) - 1} {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "hearth.db")
			oldDatabase(t, path, k)
			db, err := Open(context.Background(), testConfig(path))
			if err != nil {
				t.Fatalf("an older file after %d migrations: %v", k, err)
			}
			db.Close()
		})
	}
	t.Run("ExtraTrigger", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "hearth.db")
		k := len(names) / 2
		oldDatabase(t, path, k, `CREATE TRIGGER keep_out AFTER INSERT ON migrations BEGIN DELETE FROM records; END`)
		_, err := Open(context.Background(), testConfig(path))
		if err == nil || !strings.Contains(err.Error(), "extra trigger keep_out (on migrations)") {
			t.Fatalf("got %v, want a refusal naming the trigger", err)
		}
		pool, err := driver.Open(dsn(path, "deferred", readerPragmas))
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		var n int
		if err := pool.QueryRow(`SELECT count(*) FROM migrations`).Scan(&n); err != nil || n != k {
			t.Errorf("%d migrations recorded (%v), want still %d: nothing may run before the check", n, err, k)
		}
	})
}

// fuzzSchema is the fuzz target's database: every migration applied, and
// an authorizer that, while fuzzing is set, refuses what could leave the
// transaction or the file (transactions, savepoints, attach, pragmas).
var fuzzSchema struct {
	once    sync.Once
	pool    *sql.DB
	base    string
	err     error
	fuzzing atomic.Bool
}

func fuzzDB(tb testing.TB) (*sql.DB, string) {
	fuzzSchema.once.Do(func() {
		names, err := migrationNames()
		if err != nil {
			fuzzSchema.err = err
			return
		}
		init := func(c *sqlite3.Conn) error {
			if err := (&Engine{cfg: Config{Funcs: testFuncs}}).initWriter(c); err != nil {
				return err
			}
			return c.SetAuthorizer(func(action sqlite3.AuthorizerActionCode, _, _, _, _ string) sqlite3.AuthorizerReturnCode {
				if !fuzzSchema.fuzzing.Load() {
					return sqlite3.AUTH_OK
				}
				switch action {
				case sqlite3.AUTH_TRANSACTION, sqlite3.AUTH_SAVEPOINT, sqlite3.AUTH_ATTACH, sqlite3.AUTH_DETACH, sqlite3.AUTH_PRAGMA:
					return sqlite3.AUTH_DENY
				}
				return sqlite3.AUTH_OK
			})
		}
		// In memory, on one connection that is kept: the database lives
		// as long as the process.
		pool, err := driver.Open(":memory:", init)
		if err != nil {
			fuzzSchema.err = err
			return
		}
		pool.SetMaxOpenConns(1)
		pool.SetMaxIdleConns(1)
		pool.SetConnMaxLifetime(0)
		ctx := context.Background()
		if _, err := pool.ExecContext(ctx, migrationsTable); err != nil {
			fuzzSchema.err = err
			return
		}
		for _, name := range names {
			buf, _ := fs.ReadFile(migrationFS, "migrations/"+name)
			if _, err := pool.ExecContext(ctx, string(buf)); err != nil {
				fuzzSchema.err = err
				return
			}
			if _, err := pool.ExecContext(ctx, `INSERT INTO migrations (name, applied_at) VALUES (?, 0)`, name); err != nil {
				fuzzSchema.err = err
				return
			}
		}
		fuzzSchema.pool = pool
		fuzzSchema.base, fuzzSchema.err = dumpSchema(ctx, pool)
	})
	if fuzzSchema.err != nil {
		tb.Fatal(fuzzSchema.err)
	}
	return fuzzSchema.pool, fuzzSchema.base
}

// dumpSchema is q's sqlite_schema as sorted text, read without the check's
// own code.
func dumpSchema(ctx context.Context, q queryer) (string, error) {
	rows, err := q.QueryContext(ctx, `SELECT type || ' ' || name || ' ' || tbl_name || ' ' || coalesce(sql, '')
		FROM sqlite_schema WHERE NOT (type = 'table' AND name LIKE 'sqlite_stat%') ORDER BY 1`)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return "", err
		}
		lines = append(lines, s)
	}
	return strings.Join(lines, "\n"), rows.Err()
}

// FuzzSchemaCheck runs any SQL on a migrated database, inside a
// transaction it rolls back, and holds that the schema check passes
// exactly when sqlite_schema is unchanged, and that what it names is among
// the objects that changed.
func FuzzSchemaCheck(f *testing.F) {
	for _, s := range []string{
		``,
		`SELECT 1`,
		`CREATE TRIGGER t AFTER INSERT ON records BEGIN DELETE FROM audit; END`,
		`CREATE VIEW v AS SELECT title FROM records`,
		`CREATE TABLE x (a); CREATE INDEX xi ON x (a)`,
		`DROP TRIGGER records_fts_insert`,
		`DROP INDEX records_supersedes_idx; CREATE INDEX records_supersedes_idx ON records (superseded_by)`,
		`ALTER TABLE records ADD COLUMN extra TEXT`,
		`ALTER TABLE audit RENAME TO audit2`,
		`CREATE TEMP TRIGGER tt AFTER INSERT ON main.records BEGIN SELECT 1; END`,
		`CREATE TABLE "sqlite_stat1x" (a)`,
		`INSERT INTO migrations (name, applied_at) VALUES ('9999_future.sql', 0)`,
		`DELETE FROM migrations WHERE name = '0005_bootstrap.sql'`,
		`PRAGMA writable_schema = 1`,
		`COMMIT; CREATE TABLE y (a)`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, stmt string) {
		pool, base := fuzzDB(t)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		// The transaction is begun without ctx: database/sql discards the
		// connection of a transaction whose context ends, and with it this
		// in-memory database, which every later input shares. ctx bounds
		// the statements only.
		tx, err := pool.BeginTx(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			// A statement ctx interrupted may have rolled the transaction
			// back already (SQLite ends it on an interrupted write); the
			// check below that nothing stayed holds either way.
			if err := tx.Rollback(); err != nil && ctx.Err() == nil {
				t.Fatalf("rollback: %v", err)
			}
			if now, err := dumpSchema(context.Background(), pool); err != nil || now != base {
				t.Fatalf("the fuzz database changed for good after %q (%v)", stmt, err)
			}
		}()
		applied := func() string {
			var s sql.NullString
			_ = tx.QueryRowContext(ctx, `SELECT group_concat(name, ' ') FROM (SELECT name FROM migrations ORDER BY name)`).Scan(&s)
			return s.String
		}
		before := applied()
		fuzzSchema.fuzzing.Store(true)
		_, _ = tx.ExecContext(ctx, stmt)
		fuzzSchema.fuzzing.Store(false)
		if applied() != before {
			// The file claims other migrations: another expected schema,
			// compared by TestSchema_Upgrade; here only that the check
			// does not panic.
			_ = checkSchema(ctx, tx, testFuncs)
			return
		}
		after, err := dumpSchema(ctx, tx)
		if err != nil {
			return // the statement broke the schema past reading, or ran out of time
		}
		checkErr := checkSchema(ctx, tx, testFuncs)
		if ctx.Err() != nil {
			return // out of time: an interrupted check says nothing of the schema
		}
		var se *SchemaError
		errors.As(checkErr, &se)
		switch {
		case after == base && checkErr != nil:
			t.Fatalf("%q left the schema as it was, yet the check refused: %v", stmt, checkErr)
		case after != base && se == nil:
			t.Fatalf("%q changed the schema, yet the check passed (%v):\n%s", stmt, checkErr, after)
		case se != nil:
			for _, d := range slices.Concat(se.Extra, se.Altered, se.Missing) {
				name := strings.Fields(d)[1]
				if !strings.Contains(after, " "+name+" ") && !strings.Contains(base, " "+name+" ") {
					t.Fatalf("%q: the check names %s, which is in neither schema", stmt, d)
				}
			}
		}
	})
}

// BenchmarkCheckSchema measures the check every start runs on a database
// at the current migrations, the expected schema already built.
func BenchmarkCheckSchema(b *testing.B) {
	pool, _ := fuzzDB(b)
	ctx := context.Background()
	if err := checkSchema(ctx, pool, testFuncs); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if err := checkSchema(ctx, pool, testFuncs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuildSchema measures building the expected schema, which a
// process does once.
func BenchmarkBuildSchema(b *testing.B) {
	names, err := migrationNames()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := buildSchema(context.Background(), names, testFuncs); err != nil {
			b.Fatal(err)
		}
	}
}
