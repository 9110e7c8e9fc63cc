package storage_test

import (
	"math"
	"testing"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/screen"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// evidence gives stance on id as client, failing the test on error.
func evidence(tb testing.TB, db *storage.DB, id, client, stance, note string) *storage.Record {
	tb.Helper()
	r, err := db.Evidence(ctx, id, client, stance, text(tb, note))
	if err != nil {
		tb.Fatalf("Evidence(%s, %s, %s): %v", id, client, stance, err)
	}
	return r
}

// wantWitness checks a record's evidence fields; effective to 4 places.
func wantWitness(tb testing.TB, r *storage.Record, effective float64, proofs, refutations, revision int) {
	tb.Helper()
	if math.Abs(r.EffectiveConfidence-effective) > 5e-5 || r.ProofCount != proofs ||
		r.RefutationCount != refutations || r.Revision != revision {
		tb.Errorf("effective, proofs, refutations, revision: got %.4f, %d, %d, %d, want %.4f, %d, %d, %d",
			r.EffectiveConfidence, r.ProofCount, r.RefutationCount, r.Revision, effective, proofs, refutations, revision)
	}
}

func evidenceRows(tb testing.TB, db *storage.DB) int {
	tb.Helper()
	var n int
	if err := db.QueryRaw(ctx, false, `SELECT COUNT(*) FROM evidence`, &n); err != nil {
		tb.Fatal(err)
	}
	return n
}

// witnessed stores a record at confidence c, written by claude-code.
func witnessed(tb testing.TB, db *storage.DB, c float64) *storage.Record {
	tb.Helper()
	nr := rec(tb, "github/acme/api", "Use PostgreSQL", "We chose PostgreSQL 16 for billing.")
	nr.Confidence = c
	return storagetest.Store(tb, db, nr)
}

func TestDB_Evidence(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		// The example of the issue: 0.6 → 0.7333 → 0.8222 → 0.4111.
		db := storagetest.Open(t)
		r := witnessed(t, db, 0.6)
		before := ftsDigest(t, db)
		got := evidence(t, db, r.ID, "codex", storage.StanceCorroborates, "checked the schema")
		wantWitness(t, got, 0.7333, 1, 0, 2)
		got = evidence(t, db, r.ID, "gemini", storage.StanceCorroborates, "")
		wantWitness(t, got, 0.8222, 2, 0, 3)
		got = evidence(t, db, r.ID, "aider", storage.StanceContradicts, "billing moved to MySQL")
		wantWitness(t, got, 0.4111, 2, 1, 4)
		if got.Confidence != 0.6 {
			t.Errorf("asserted confidence: got %v, want 0.6 (evidence never changes it)", got.Confidence)
		}
		if again := get(t, db, r.ID); !equalRecords(again, got) {
			t.Errorf("Get: got %+v, want %+v", again, got)
		}
		if ftsDigest(t, db) != before {
			t.Errorf("evidence reindexed the record's text")
		}
		log, err := db.AuditLog(ctx, 3)
		if err != nil {
			t.Fatal(err)
		}
		want := []struct{ client, detail string }{
			{"aider", "contradicts: billing moved to MySQL"},
			{"gemini", "corroborates"},
			{"codex", "corroborates: checked the schema"},
		}
		for i, w := range want {
			e := log[i]
			if e.Action != storage.ActionEvidence || e.Client != w.client || e.Detail.String() != w.detail ||
				e.RecordID != r.ID || e.Namespace != r.Namespace {
				t.Errorf("audit[%d]: got %+v, want action evidence by %s, detail %q", i, e, w.client, w.detail)
			}
		}
	})

	t.Run("OKArrivalOrder", func(t *testing.T) {
		// The same stances in the other order: a contradiction first halves
		// 0.6, and the corroboration then closes a third of the larger gap.
		db := storagetest.Open(t)
		r := witnessed(t, db, 0.6)
		evidence(t, db, r.ID, "aider", storage.StanceContradicts, "")
		got := evidence(t, db, r.ID, "codex", storage.StanceCorroborates, "")
		wantWitness(t, got, 0.5333, 1, 1, 3)
	})

	t.Run("OKOneStancePerClient", func(t *testing.T) {
		db := storagetest.Open(t)
		r := witnessed(t, db, 0.6)
		evidence(t, db, r.ID, "codex", storage.StanceCorroborates, "")
		got := evidence(t, db, r.ID, "aider", storage.StanceContradicts, "")
		wantWitness(t, got, 0.3667, 1, 1, 3)

		// Repeating a stance (same note) to inflate the record changes nothing.
		audits, rows := auditCount(t, db), evidenceRows(t, db)
		for range 5 {
			got = evidence(t, db, r.ID, "codex", storage.StanceCorroborates, "")
		}
		wantWitness(t, got, 0.3667, 1, 1, 3)
		if auditCount(t, db) != audits || evidenceRows(t, db) != rows {
			t.Errorf("a repeated stance wrote rows")
		}

		// A changed stance replaces the earlier one.
		got = evidence(t, db, r.ID, "codex", storage.StanceContradicts, "wrong after all")
		wantWitness(t, got, 0.15, 0, 2, 4)
		// Changing back moves codex's stance after aider's: 0.6/2, then +1/3 of the gap.
		got = evidence(t, db, r.ID, "codex", storage.StanceCorroborates, "right again")
		wantWitness(t, got, 0.5333, 1, 1, 5)
		// A new note on the same stance is a new call too: it moves to the end.
		evidence(t, db, r.ID, "aider", storage.StanceContradicts, "still wrong")
		got = get(t, db, r.ID)
		wantWitness(t, got, 0.3667, 1, 1, 6)
		if n := evidenceRows(t, db); n != 2 {
			t.Errorf("evidence rows: got %d, want 2 (one per client)", n)
		}
	})

	t.Run("OKWriterOwnRecord", func(t *testing.T) {
		// The writer's corroboration does not count; its contradiction does.
		db := storagetest.Open(t)
		r := witnessed(t, db, 0.6)
		got := evidence(t, db, r.ID, r.Writer, storage.StanceCorroborates, "I stand by it")
		wantWitness(t, got, 0.6, 0, 0, 2)
		log, _ := db.AuditLog(ctx, 1)
		if d := log[0].Detail.String(); d != "corroborates (own record, not counted): I stand by it" {
			t.Errorf("audit detail: got %q", d)
		}
		got = evidence(t, db, r.ID, r.Writer, storage.StanceContradicts, "")
		wantWitness(t, got, 0.3, 0, 1, 3)
		// Corroborating again withdraws the contradiction and adds nothing.
		got = evidence(t, db, r.ID, r.Writer, storage.StanceCorroborates, "")
		wantWitness(t, got, 0.6, 0, 0, 4)
		// Another client's corroboration counts as usual.
		got = evidence(t, db, r.ID, "codex", storage.StanceCorroborates, "")
		wantWitness(t, got, 0.7333, 1, 0, 5)
	})

	t.Run("OKCandidate", func(t *testing.T) {
		db := storagetest.Open(t)
		nr := rec(t, "global", "t", "c")
		nr.Status, nr.Confidence = storage.StatusCandidate, 0.5
		r := storagetest.Store(t, db, nr)
		got := evidence(t, db, r.ID, "codex", storage.StanceCorroborates, "")
		wantWitness(t, got, 0.6667, 1, 0, 2)
		if got.Status != storage.StatusCandidate {
			t.Errorf("status: got %s, want candidate (evidence does not review)", got.Status)
		}
	})

	t.Run("OKUpdateConfidence", func(t *testing.T) {
		// A new asserted confidence keeps the evidence and replays it in
		// arrival order: 0.9 halved, then a third of the gap closed.
		db := storagetest.Open(t)
		r := witnessed(t, db, 0.6)
		evidence(t, db, r.ID, "aider", storage.StanceContradicts, "")
		evidence(t, db, r.ID, "codex", storage.StanceCorroborates, "")
		evidence(t, db, r.ID, r.Writer, storage.StanceCorroborates, "")
		got, err := db.Update(ctx, r.ID, 4, storage.Changes{Confidence: ptr(0.9)}, r.Writer)
		if err != nil {
			t.Fatal(err)
		}
		wantWitness(t, got, 0.6333, 1, 1, 5)
		if got.Confidence != 0.9 {
			t.Errorf("confidence: got %v, want 0.9", got.Confidence)
		}
		// Other changes leave the derived values alone.
		got, err = db.Update(ctx, r.ID, 5, storage.Changes{Title: textp(t, "Use PostgreSQL 16")}, r.Writer)
		if err != nil {
			t.Fatal(err)
		}
		wantWitness(t, got, 0.6333, 1, 1, 6)
	})

	t.Run("OKPersists", func(t *testing.T) {
		path := storagetest.Place(t)
		db := storagetest.OpenPath(t, path)
		r := witnessed(t, db, 0.6)
		evidence(t, db, r.ID, "codex", storage.StanceCorroborates, "")
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		db = storagetest.OpenPath(t, path)
		// After a reopen the order still holds: codex's stance came first.
		got := evidence(t, db, r.ID, "aider", storage.StanceContradicts, "")
		wantWitness(t, got, 0.3667, 1, 1, 3)
	})

	t.Run("OKGoesWithTheRecord", func(t *testing.T) {
		db := storagetest.Open(t)
		r := witnessed(t, db, 0.6)
		evidence(t, db, r.ID, "codex", storage.StanceCorroborates, "")
		if err := db.ExecRaw(ctx, `DELETE FROM records WHERE id = ?`, r.ID); err != nil {
			t.Fatal(err)
		}
		if n := evidenceRows(t, db); n != 0 {
			t.Errorf("evidence rows after a purge: got %d, want 0", n)
		}
	})

	t.Run("ErrInvalid", func(t *testing.T) {
		db := storagetest.Open(t)
		r := witnessed(t, db, 0.6)
		del := storagetest.Store(t, db, rec(t, "global", "gone", "c"))
		if _, err := db.Forget(ctx, del.ID, 0, text(t, ""), "claude-code"); err != nil {
			t.Fatal(err)
		}
		old := storagetest.Store(t, db, rec(t, "global", "old", "c"))
		repl := rec(t, "global", "new", "c")
		repl.Supersedes = old.ID
		storagetest.Store(t, db, repl)
		for _, tt := range []struct {
			name, id, client, stance, field string
		}{
			{"Stance", r.ID, "codex", "agrees", "stance"},
			{"EmptyStance", r.ID, "codex", "", "stance"},
			{"Client", r.ID, "", storage.StanceCorroborates, "client"},
			{"Deleted", del.ID, "codex", storage.StanceCorroborates, "id"},
			{"Superseded", old.ID, "codex", storage.StanceContradicts, "id"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				rows := evidenceRows(t, db)
				unchanged(t, db, storage.Invalid, tt.field, func() error {
					_, err := db.Evidence(ctx, tt.id, tt.client, tt.stance, screen.Text{})
					return err
				})
				if evidenceRows(t, db) != rows {
					t.Errorf("a refused call wrote evidence")
				}
			})
		}
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		db := storagetest.Open(t)
		unchanged(t, db, storage.NotFound, "id", func() error {
			_, err := db.Evidence(ctx, "01NOSUCHRECORD000000000000", "codex", storage.StanceCorroborates, screen.Text{})
			return err
		})
		if n := evidenceRows(t, db); n != 0 {
			t.Errorf("evidence rows: got %d, want 0", n)
		}
	})
}

// BenchmarkDB_Evidence measures one stance on a record that already holds
// 20 stances, alternating clients (the recomputation reads them all).
func BenchmarkDB_Evidence(b *testing.B) {
	db := storagetest.Open(b)
	r := witnessed(b, db, 0.6)
	for i := range 20 {
		evidence(b, db, r.ID, "client-"+string(rune('a'+i)), storage.StanceCorroborates, "")
	}
	stances := []string{storage.StanceCorroborates, storage.StanceContradicts}
	for i := 0; b.Loop(); i++ {
		if _, err := db.Evidence(ctx, r.ID, "bench", stances[i%2], screen.Text{}); err != nil {
			b.Fatal(err)
		}
	}
}
