package storage_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ncruces/go-sqlite3"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/screen"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

var ctx = context.Background()

// steppingClock returns a clock for db.Now that moves on by step at each
// reading, safe for the concurrent readings of the writer loop (its
// background index work) and of reads, and at, which says where it stands
// without moving it.
func steppingClock(start time.Time, step time.Duration) (next, at func() time.Time) {
	var mu sync.Mutex
	now := start
	next = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(step)
		return now
	}
	at = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	return next, at
}

func text(tb testing.TB, s string) screen.Text {
	tb.Helper()
	return storagetest.Text(tb, s)
}

func textp(tb testing.TB, s string) *screen.Text {
	tb.Helper()
	t := storagetest.Text(tb, s)
	return &t
}

func ptr[T any](v T) *T { return &v }

// rec is a valid NewRecord in namespace ns.
func rec(tb testing.TB, ns, title, content string) storage.NewRecord {
	tb.Helper()
	return storage.NewRecord{
		Namespace: ns, Type: storage.TypeDecision, Title: text(tb, title), Content: text(tb, content),
		Confidence: 0.8, Writer: "claude-code", Source: storage.SourceStore, Status: storage.StatusActive,
	}
}

// get returns the record id, failing the test if it is missing.
func get(tb testing.TB, db *storage.DB, id string) *storage.Record {
	tb.Helper()
	recs, err := db.Get(ctx, []string{id})
	if err != nil {
		tb.Fatalf("Get(%s): %v", id, err)
	}
	if len(recs) != 1 {
		tb.Fatalf("Get(%s): got %d records, want 1", id, len(recs))
	}
	return recs[0]
}

// snapshot digests every table a mutation can touch (records, anchors, usage,
// audit, tokens and the FTS pages), once the writer's background work has
// settled (settle).
func snapshot(tb testing.TB, db *storage.DB) string {
	tb.Helper()
	settle(tb, db)
	s, err := db.Snapshot(ctx)
	if err != nil {
		tb.Fatalf("snapshot: %v", err)
	}
	return s
}

// settle does now what the writer does on its own in the background: it
// writes the usage and asks counted in memory (a second after they were
// counted) and merges the index's fuller levels (once the writer has been
// idle a quarter of a second). A test that compares two looks at the
// database around a call must settle before each, or that work, landing
// between them, reads as the call's (it did, once, under the race
// detector on a loaded machine). Settling after the call also writes out
// what the call counted in memory, so a call that must count nothing is
// held to it.
func settle(tb testing.TB, db *storage.DB) {
	tb.Helper()
	if err := db.FlushUsage(ctx); err != nil {
		tb.Fatalf("settle: flush usage: %v", err)
	}
	if err := db.FlushAsks(ctx); err != nil {
		tb.Fatalf("settle: flush asks: %v", err)
	}
	if _, err := db.TidyIndex(ctx); err != nil {
		tb.Fatalf("settle: tidy index: %v", err)
	}
}

// ftsDigest digests the full-text index's pages (FTSDigest), once the
// writer's background work has settled (settle).
func ftsDigest(tb testing.TB, db *storage.DB) string {
	tb.Helper()
	settle(tb, db)
	s, err := db.FTSDigest(ctx)
	if err != nil {
		tb.Fatalf("fts digest: %v", err)
	}
	return s
}

func auditCount(tb testing.TB, db *storage.DB) int {
	tb.Helper()
	var n int
	if err := db.QueryRaw(ctx, false, `SELECT COUNT(*) FROM audit`, &n); err != nil {
		tb.Fatal(err)
	}
	return n
}

// wantErr fails the test unless err is an *storage.Error with code and field.
func wantErr(tb testing.TB, err error, code storage.Code, field string) *storage.Error {
	tb.Helper()
	if got := storage.ErrorCode(err); got != code {
		tb.Fatalf("error: got %v (code %q), want code %q", err, got, code)
	}
	e := err.(*storage.Error)
	if e.Field != field {
		tb.Errorf("error field: got %q, want %q (%v)", e.Field, field, err)
	}
	return e
}

// unchanged runs f, which must fail with code and field, and checks that
// it wrote nothing at all.
func unchanged(tb testing.TB, db *storage.DB, code storage.Code, field string, f func() error) *storage.Error {
	tb.Helper()
	before := snapshot(tb, db)
	e := wantErr(tb, f(), code, field)
	if after := snapshot(tb, db); after != before {
		tb.Errorf("a refused call changed the database")
	}
	return e
}

// triggerAbort reports whether err is a trigger's refusal: SQLite's
// RAISE(ABORT) (SQLITE_CONSTRAINT_TRIGGER), or on PostgreSQL the trigger
// function's RAISE EXCEPTION (SQLSTATE P0001; docs/postgres.md, The schema).
func triggerAbort(err error) bool {
	if errors.Is(err, sqlite3.CONSTRAINT_TRIGGER) {
		return true
	}
	var pg interface{ SQLState() string }
	return errors.As(err, &pg) && pg.SQLState() == "P0001"
}
