package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/storage/internal/pgschema"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// Each test's database is its own and migrated: a row written in one is not
// in the other, and both have had every migration.
func TestOpen_OwnMigratedDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := Open(t), Open(t)
	for i, db := range []*sql.DB{a, b} {
		var names []string
		rows, err := db.QueryContext(ctx, `SELECT name FROM migrations ORDER BY name`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				t.Fatal(err)
			}
			names = append(names, n)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if want := pgschema.Names(); strings.Join(names, ",") != strings.Join(want, ",") {
			t.Errorf("database %d has had %v, want %v", i, names, want)
		}
	}
	if _, err := a.ExecContext(ctx, `INSERT INTO client_tokens (client, token_sha256, updated_at) VALUES ('c', 'x', 1)`); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := b.QueryRowContext(ctx, `SELECT count(*) FROM client_tokens`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("the second database holds %d client_tokens rows written in the first", n)
	}
}

// An empty database has had no migration.
func TestEmptyURL(t *testing.T) {
	t.Parallel()
	db, err := sql.Open("pgx", EmptyURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(context.Background(),
		`SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("an empty database has %d tables", n)
	}
}

// binDir finds the server's binaries where HEARTH_POSTGRES_BIN says, and
// names the variable when they are not there. Not parallel: it sets the
// environment.
func TestBinDir(t *testing.T) {
	empty := t.TempDir()
	t.Setenv("HEARTH_POSTGRES_BIN", empty)
	if _, err := binDir(); !errors.Is(err, errNoBinaries) || !strings.Contains(err.Error(), "HEARTH_POSTGRES_BIN="+empty) {
		t.Errorf("binDir with an empty HEARTH_POSTGRES_BIN: %v", err)
	}
	for _, b := range []string{"initdb", "postgres"} {
		if err := os.WriteFile(filepath.Join(empty, b), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if d, err := binDir(); err != nil || d != empty {
		t.Errorf("binDir = %q, %v; want %q", d, err, empty)
	}
}

// BenchmarkURL measures a test's database: created from the migrated
// template and dropped (docs/postgres.md, Tests). The server's start is
// paid before the timer, once per binary.
func BenchmarkURL(b *testing.B) {
	s := get(b)
	for b.Loop() {
		name, err := s.create(template)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.drop(name); err != nil {
			b.Fatal(err)
		}
	}
}
