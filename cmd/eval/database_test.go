package main

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/storage/storagetest"
)

func TestMain(m *testing.M) { os.Exit(storagetest.Main(m)) }

// Each daemon's database is new and empty, on the server of -database's
// URL, and gone once dropped; a URL that is not postgres:// is refused
// without being echoed (it may hold a password).
func TestNewDatabases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := storagetest.URL(t)
	next, err := newDatabases(base)
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	var drops []func() error
	for range 2 {
		u, drop, err := next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		urls, drops = append(urls, u), append(drops, drop)
	}
	if urls[0] == urls[1] {
		t.Fatalf("two daemons got the same database %s", redact(urls[0]))
	}
	name := func(u string) string {
		p, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimPrefix(p.Path, "/")
	}
	for _, u := range urls {
		db, err := sql.Open("pgx", u)
		if err != nil {
			t.Fatal(err)
		}
		var current string
		var tables int
		if err := db.QueryRowContext(ctx, `SELECT current_database(), (SELECT count(*) FROM pg_tables WHERE schemaname = 'public')`).Scan(&current, &tables); err != nil {
			t.Fatal(err)
		}
		db.Close()
		if current != name(u) || !strings.HasPrefix(current, "hearth_eval_") || tables != 0 {
			t.Errorf("database %s: current %s, %d tables; want a new, empty hearth_eval_ database", name(u), current, tables)
		}
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for i, drop := range drops {
		if err := drop(); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := admin.QueryRowContext(ctx, `SELECT count(*) FROM pg_database WHERE datname = $1`, name(urls[i])).Scan(&n); err != nil || n != 0 {
			t.Errorf("database %s after the drop: %d (%v)", name(urls[i]), n, err)
		}
	}

	for _, bad := range []string{"mysql://u:s3cret@host/db", "host=localhost password=s3cret", "postgres:///nohost?password=s3cret"} {
		_, err := newDatabases(bad)
		if !errors.As(err, new(usageError)) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("newDatabases(%q): %v; want a usage error without the password", bad, err)
		}
	}
}
