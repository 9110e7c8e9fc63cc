package storage_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// bootstrapDrift counts the rows bootstrap_rank and the definition it
// keeps, bootstrap_entries, disagree on, both ways.
func bootstrapDrift(t *testing.T, db *storage.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRaw(ctx, true, `
		SELECT (SELECT COUNT(*) FROM (
			SELECT record_id, namespace, section, type_rank, confidence, uses FROM bootstrap_rank
			EXCEPT SELECT record_id, namespace, section, type_rank, confidence, uses FROM bootstrap_entries WHERE section IS NOT NULL) AS a)
		+ (SELECT COUNT(*) FROM (
			SELECT record_id, namespace, section, type_rank, confidence, uses FROM bootstrap_entries WHERE section IS NOT NULL
			EXCEPT SELECT record_id, namespace, section, type_rank, confidence, uses FROM bootstrap_rank) AS b)`, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestStoreTriggers: the triggers a store fires (migration 0083) file a new
// record in the session-start packet where bootstrap_entries does, for
// every type and status, and move it to the end of the vector change feed
// once, also when its seq is taken again after a purge.
func TestStoreTriggers(t *testing.T) {
	t.Parallel()
	t.Run("Bootstrap", func(t *testing.T) {
		db := storagetest.Open(t)
		for _, typ := range storage.Types {
			for _, status := range []string{storage.StatusActive, storage.StatusCandidate} {
				storagetest.Store(t, db, storage.NewRecord{Type: typ, Status: status, Title: text(t, typ+" "+status),
					Confidence: 0.7, Anchors: nil})
			}
		}
		if n := bootstrapDrift(t, db); n != 0 {
			t.Errorf("%d rows of bootstrap_rank differ from bootstrap_entries after stores", n)
		}
		randomHistory(t, db, rand.New(rand.NewPCG(3, 3)), 200)
		if n := bootstrapDrift(t, db); n != 0 {
			t.Errorf("%d rows of bootstrap_rank differ from bootstrap_entries after a random history", n)
		}
	})
	t.Run("VectorChanges", func(t *testing.T) {
		db := storagetest.Open(t)
		// QueryRaw takes no arguments: ids are ULIDs, safe in a literal.
		version := func(id string) (v, top int64) {
			t.Helper()
			if err := db.QueryRaw(ctx, true, `
				SELECT (SELECT c.version FROM vector_changes AS c JOIN records AS r ON r.seq = c.record_seq WHERE r.id = '`+id+`'),
					(SELECT MAX(version) FROM vector_changes)`, &v, &top); err != nil {
				t.Fatal(err)
			}
			return v, top
		}
		store := func(title string) (id string, v, top int64) {
			r := storagetest.Store(t, db, storage.NewRecord{Title: text(t, title)})
			v, top = version(r.ID)
			return r.ID, v, top
		}
		_, v1, _ := store("one")
		last, v2, top := store("two")
		if v2 != v1+1 || top != v2 {
			t.Errorf("versions %d then %d (top %d), want one apart, the last on top", v1, v2, top)
		}
		// Purged, its seq comes back with the next record: its row moves
		// to the end once.
		var seq int64
		if err := db.QueryRaw(ctx, false, `SELECT seq FROM records WHERE id = '`+last+`'`, &seq); err != nil {
			t.Fatal(err)
		}
		if err := db.ExecRaw(ctx, `DELETE FROM records WHERE id = ?`, last); err != nil {
			t.Fatal(err)
		}
		var before int64
		if err := db.QueryRaw(ctx, true, `SELECT MAX(version) FROM vector_changes`, &before); err != nil {
			t.Fatal(err)
		}
		id, v3, top := store("three")
		var seq3, rows int64
		if err := db.QueryRaw(ctx, false, `SELECT r.seq, (SELECT COUNT(*) FROM vector_changes WHERE record_seq = r.seq) FROM records AS r WHERE r.id = '`+id+`'`, &seq3, &rows); err != nil {
			t.Fatal(err)
		}
		// PostgreSQL's identity never hands a seq out twice (docs/postgres.md,
		// The schema): there the new record's seq is a new one.
		if pg := storagetest.Postgres(); pg && (seq3 <= seq || rows != 1) {
			t.Fatalf("the new record has seq %d (%d feed rows); want one above the purged one's, %d, with one row", seq3, rows, seq)
		} else if !pg && (seq3 != seq || rows != 1) {
			t.Fatalf("the new record has seq %d (%d feed rows); want the purged one's, %d, with one row", seq3, rows, seq)
		}
		if v3 != before+1 || top != v3 {
			t.Errorf("version %d after a top of %d (now %d); want it moved to the end once", v3, before, top)
		}
	})
}

// TestDB_SupersedeIndexes: the foreign keys of supersedes and superseded_by
// find a purged record's referrers through their partial indexes (migration
// 0084), not by reading every record, and a purge clears the references.
func TestDB_SupersedeIndexes(t *testing.T) {
	storagetest.SQLiteOnly(t, "SQLite's query plans (EXPLAIN QUERY PLAN)")
	t.Parallel()
	db := storagetest.Open(t)
	for _, col := range []string{"supersedes", "superseded_by"} {
		// The plan's one row: the lookup the foreign key's action makes.
		var id, parent, unused int
		var plan string
		if err := db.QueryRaw(ctx, false, `EXPLAIN QUERY PLAN UPDATE records SET `+col+` = NULL WHERE `+col+` = 'x'`,
			&id, &parent, &unused, &plan); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(plan, "USING COVERING INDEX records_"+col+"_idx") {
			t.Errorf("%s: plan %q, want its index", col, plan)
		}
	}
	old := storagetest.Store(t, db, storage.NewRecord{Type: storage.TypeDecision, Title: text(t, "Old")})
	repl := storagetest.Store(t, db, storage.NewRecord{Type: storage.TypeDecision, Title: text(t, "New"), Supersedes: old.ID})
	if err := db.ExecRaw(ctx, `DELETE FROM records WHERE id = ?`, old.ID); err != nil {
		t.Fatal(err)
	}
	if got := get(t, db, repl.ID); got.Supersedes != "" {
		t.Errorf("after the purge supersedes = %q, want it cleared", got.Supersedes)
	}
}
