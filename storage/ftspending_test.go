package storage

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage/screen"
)

func screened(t *testing.T, s string) screen.Text {
	t.Helper()
	v, err := screen.Check("test", s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// storeNote stores an active note in ns with the title, content and
// anchors given.
func storeNote(t *testing.T, db *DB, ns, title, content string, anchors ...string) *Record {
	t.Helper()
	var as []screen.Text
	for _, a := range anchors {
		as = append(as, screened(t, a))
	}
	r, err := db.Store(context.Background(), NewRecord{Namespace: ns, Type: TypeNote, Title: screened(t, title),
		Content: screened(t, content), Anchors: as, Confidence: 0.8, Writer: "test", Source: SourceStore, Status: StatusActive})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestWrite_GroupIndex: the records a group stores reach the full-text
// index once, at its commit (migration 0082), as they stand then: a record
// changed or deleted later in the same group is indexed changed, or not at
// all; a write that fails leaves nothing in the index; no note outlives the
// commit and FTS5 finds the index true to the records.
func TestWrite_GroupIndex(t *testing.T) {
	ctx := context.Background()
	db := openGroupDB(t)
	nr := func(title string) NewRecord {
		return NewRecord{Namespace: "global", Type: TypeNote, Title: screened(t, title), Content: screened(t, "some content"),
			Confidence: 0.8, Writer: "test", Source: SourceStore, Status: StatusActive}
	}
	store := func(title string, then func(tx *txn, rec *Record) error) func(tx *txn) error {
		return func(tx *txn) error {
			rec, err := db.storeTx(ctx, tx, nr(title))
			if err != nil || then == nil {
				return err
			}
			return then(tx, rec)
		}
	}
	exec := func(tx *txn, q string, args ...any) error {
		_, err := tx.ExecContext(ctx, q, args...)
		return err
	}
	fns := []func(tx *txn) error{
		store("alpha", nil),
		// Stored, then retitled in the same transaction.
		store("bravo", func(tx *txn, rec *Record) error {
			return exec(tx, `UPDATE records SET title = 'charlie' WHERE id = ?`, rec.ID)
		}),
		// Stored, then deleted.
		store("delta", func(tx *txn, rec *Record) error {
			return exec(tx, `DELETE FROM records WHERE id = ?`, rec.ID)
		}),
		// Stored, then failed: undone with its savepoint.
		store("echo", func(*txn, *Record) error { return errors.New("refused") }),
		store("foxtrot", nil),
	}
	release := holdWriter(t, db)
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Go(func() { errs[i] = db.writeGrouped(ctx, "store", fn) })
	}
	for queuedWrites(db) < len(fns) {
		time.Sleep(time.Millisecond)
	}
	release()
	wg.Wait()
	for i, err := range errs {
		if (err != nil) != (i == 3) {
			t.Errorf("write %d: %v", i, err)
		}
	}

	for _, tt := range []struct {
		query string
		want  []string
	}{
		{"alpha", []string{"alpha"}},
		{"bravo", nil},
		{"charlie", []string{"charlie"}},
		{"delta", nil},
		{"echo", nil},
		{"foxtrot", []string{"foxtrot"}},
	} {
		hits, err := db.Search(ctx, SearchQuery{Text: tt.query, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, h := range hits {
			got = append(got, h.Record.Title)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%q: found %v, want %v", tt.query, got, tt.want)
		}
	}
	var pending int
	if err := db.QueryRaw(ctx, true, `SELECT COUNT(*) FROM records_fts_pending`, &pending); err != nil || pending != 0 {
		t.Errorf("%d notes after the commit (%v), want none", pending, err)
	}
	if err := db.ExecRaw(ctx, `INSERT INTO records_fts (records_fts, rank) VALUES ('integrity-check', 1)`); err != nil {
		t.Errorf("integrity-check: %v", err)
	}
	// A later change of an indexed record goes through the index as before.
	if err := db.writeGrouped(ctx, "update", func(tx *txn) error {
		return exec(tx, `UPDATE records SET title = 'golf' WHERE title = 'alpha'`)
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.ExecRaw(ctx, `INSERT INTO records_fts (records_fts, rank) VALUES ('integrity-check', 1)`); err != nil {
		t.Errorf("integrity-check after an update: %v", err)
	}
}

// TestWrite_GroupIndexOneSegment: a group whose records belong to several
// namespaces, reaching the writer in interleaved order, still adds one
// segment to the full-text index. FTS5 flushes what it holds whenever a
// rowid is not above the last, and a record's rowid starts with its
// namespace's key, so the group's rows must reach it in rowid order.
func TestWrite_GroupIndexOneSegment(t *testing.T) {
	ctx := context.Background()
	db := openGroupDB(t)
	namespaces := []string{"github/acme/api", "global", "github/acme/web"}
	// Each namespace holds a record first, so every one has its key.
	for _, ns := range namespaces {
		storeNote(t, db, ns, "seed", "seed content")
	}
	before, err := db.IndexSegments(ctx)
	if err != nil {
		t.Fatal(err)
	}
	release := holdWriter(t, db)
	const n = 12
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		// Queued one at a time, so the group takes them in this order:
		// namespaces alternate and their keys go down and up.
		wg.Go(func() {
			_, errs[i] = db.Store(ctx, NewRecord{Namespace: namespaces[i%len(namespaces)], Type: TypeNote,
				Title: screened(t, "grouped"), Content: screened(t, "grouped content"),
				Confidence: 0.8, Writer: "test", Source: SourceStore, Status: StatusActive})
		})
		for queuedWrites(db) < i+1 {
			time.Sleep(time.Millisecond)
		}
	}
	release()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("store %d: %v", i, err)
		}
	}
	after, err := db.IndexSegments(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after != before+1 {
		t.Errorf("the group of %d stores in %d namespaces added %d segments, want 1", n, len(namespaces), after-before)
	}
	hits, err := db.Search(ctx, SearchQuery{Text: "grouped", Limit: 20})
	if err != nil || len(hits) != n {
		t.Errorf("found %d grouped records (%v), want %d", len(hits), err, n)
	}
}
