package pgschema_test

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage/internal/pgschema"
	"github.com/hearth-memory/hearth/storage/internal/pgtest"
)

func openURL(t *testing.T, url string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Front ends starting at once on an empty database migrate it together:
// each migration applies once, and a later Migrate changes nothing.
func TestMigrate_ConcurrentThenAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.EmptyURL(t)
	at := time.UnixMilli(1_700_000_000_000)
	now := func() time.Time { return at }
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		db := openURL(t, url)
		wg.Go(func() { errs[i] = pgschema.Migrate(ctx, db, now) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("front end %d: %v", i, err)
		}
	}
	db := openURL(t, url)
	if err := pgschema.Migrate(ctx, db, func() time.Time { return at.Add(time.Hour) }); err != nil {
		t.Fatal(err)
	}
	rows := query(t, db, `SELECT name, applied_at FROM migrations ORDER BY name`)
	if len(rows) != len(pgschema.Names()) {
		t.Fatalf("migrations holds %v, want one row for each of %v", rows, pgschema.Names())
	}
	for i, r := range rows {
		if r[0] != pgschema.Names()[i] || r[1] != "1700000000000" {
			t.Errorf("migrations row %v, want %s applied at 1700000000000", r, pgschema.Names()[i])
		}
	}
	if n := query(t, db, `SELECT count(*) FROM digest_keys`)[0][0]; n != "1" {
		t.Errorf("digest_keys holds %s rows, want the one key made once", n)
	}
}

// A database that has had a migration this build does not know is refused
// and left as it was.
func TestMigrate_RefusesNewerDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.Open(t)
	if _, err := db.ExecContext(ctx, `INSERT INTO migrations (name, applied_at) VALUES ('9999_future.sql', 1)`); err != nil {
		t.Fatal(err)
	}
	err := pgschema.Migrate(ctx, db, time.Now)
	if err == nil || !strings.Contains(err.Error(), "9999_future.sql") || !strings.Contains(err.Error(), "newer Hearth") {
		t.Fatalf("Migrate on a newer database: %v", err)
	}
}
