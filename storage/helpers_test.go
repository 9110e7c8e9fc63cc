package storage_test

import (
	"context"
	"testing"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/screen"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

var ctx = context.Background()

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
// audit, tokens and the FTS pages).
func snapshot(tb testing.TB, db *storage.DB) string {
	tb.Helper()
	s, err := db.Snapshot(ctx)
	if err != nil {
		tb.Fatalf("snapshot: %v", err)
	}
	return s
}

func ftsDigest(tb testing.TB, db *storage.DB) string {
	tb.Helper()
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
