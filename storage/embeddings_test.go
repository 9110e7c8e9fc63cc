package storage_test

import (
	"math"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

func embedding(id, digest string, v ...float32) storage.Embedding {
	return storage.Embedding{RecordID: id, Digest: digest, Model: "m", Snapshot: "s1", Vector: v}
}

// feed reads the change feed above since and returns its entries by record
// id (the last entry of each) and the version it reached.
func feed(tb testing.TB, db *storage.DB, since int64, vectors bool) (map[string]storage.VectorChange, []storage.VectorChange, int64) {
	tb.Helper()
	byID := map[string]storage.VectorChange{}
	var all []storage.VectorChange
	v, err := db.VectorChanges(ctx, since, vectors, func(c storage.VectorChange) error {
		all = append(all, c)
		if !c.Gone {
			byID[c.ID] = c
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("VectorChanges: %v", err)
	}
	return byID, all, v
}

func TestDB_PutEmbeddings(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		db := storagetest.Open(t)
		a := storagetest.Store(t, db, rec(t, "global", "alpha", "first"))
		b := storagetest.Store(t, db, rec(t, "global", "beta", "second"))
		n, err := db.PutEmbeddings(ctx, []storage.Embedding{embedding(a.ID, "d1", 0.6, 0.8), embedding(b.ID, "d2", 1, 0)})
		if err != nil || n != 2 {
			t.Fatalf("PutEmbeddings = %d, %v; want 2, nil", n, err)
		}
		got, err := db.Embeddings(ctx, []string{a.ID, b.ID, "01J00000000000000000000000"})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[a.ID].Digest != "d1" || got[a.ID].Vector[0] != 0.6 || got[a.ID].Vector[1] != 0.8 {
			t.Fatalf("Embeddings = %+v, want a's d1 [0.6 0.8] and b's", got)
		}
		// Replacing keeps one row per record.
		if _, err := db.PutEmbeddings(ctx, []storage.Embedding{embedding(a.ID, "d3", 0, 1)}); err != nil {
			t.Fatal(err)
		}
		got, _ = db.Embeddings(ctx, []string{a.ID})
		if got[a.ID].Digest != "d3" || got[a.ID].Vector[1] != 1 {
			t.Errorf("after replace: %+v, want d3", got[a.ID])
		}
		var rows int
		if err := db.QueryRaw(ctx, false, `SELECT COUNT(*) FROM embeddings`, &rows); err != nil || rows != 2 {
			t.Errorf("embeddings rows = %d (%v), want 2", rows, err)
		}
	})
	t.Run("SkipsForgotten", func(t *testing.T) {
		db := storagetest.Open(t)
		a := storagetest.Store(t, db, rec(t, "global", "alpha", "first"))
		if _, err := db.Forget(ctx, a.ID, 0, text(t, ""), "claude-code"); err != nil {
			t.Fatal(err)
		}
		n, err := db.PutEmbeddings(ctx, []storage.Embedding{embedding(a.ID, "d1", 1)})
		if err != nil || n != 0 {
			t.Fatalf("PutEmbeddings of a forgotten record = %d, %v; want 0, nil", n, err)
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		db := storagetest.Open(t)
		a := storagetest.Store(t, db, rec(t, "global", "alpha", "first"))
		nan := float32(math.NaN())
		for name, e := range map[string]storage.Embedding{
			"vector": embedding(a.ID, "d", nan),
			"empty":  embedding(a.ID, "d"),
			"digest": embedding(a.ID, "", 1),
		} {
			field := "vector"
			if name == "digest" {
				field = "digest"
			}
			_, err := db.PutEmbeddings(ctx, []storage.Embedding{e})
			wantErr(t, err, storage.Invalid, field)
		}
	})
}

// TestDB_Embeddings_Dropped checks that forget and purge drop the vector
// (docs/design.md R-M10), whichever path forgets.
func TestDB_Embeddings_Dropped(t *testing.T) {
	t.Parallel()
	t.Run("Forget", func(t *testing.T) {
		db := storagetest.Open(t)
		a := storagetest.Store(t, db, rec(t, "global", "alpha", "first"))
		b := storagetest.Store(t, db, rec(t, "global", "beta", "second"))
		if _, err := db.PutEmbeddings(ctx, []storage.Embedding{embedding(a.ID, "d1", 1), embedding(b.ID, "d2", 1)}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Forget(ctx, a.ID, 0, text(t, "gone"), "claude-code"); err != nil {
			t.Fatal(err)
		}
		got, _ := db.Embeddings(ctx, []string{a.ID, b.ID})
		if _, ok := got[a.ID]; ok {
			t.Errorf("forgotten record still has a vector")
		}
		if _, ok := got[b.ID]; !ok {
			t.Errorf("the other record lost its vector")
		}
	})
	t.Run("Purge", func(t *testing.T) {
		db := storagetest.Open(t)
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		db.Now = func() time.Time { return now }
		a := storagetest.Store(t, db, rec(t, "global", "alpha", "first"))
		if _, err := db.PutEmbeddings(ctx, []storage.Embedding{embedding(a.ID, "d1", 1)}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Forget(ctx, a.ID, 0, text(t, ""), "claude-code"); err != nil {
			t.Fatal(err)
		}
		// Put a vector back under the table's feet, as a row surviving
		// forget would be, to see the purge drop it with the record.
		if err := db.ExecRaw(ctx, `INSERT INTO embeddings (record_id, digest, model, snapshot, vector, embedded_at) VALUES (?, 'x', 'm', 's', ?, 0)`, a.ID, []byte{0, 0, 0x80, 0x3f}); err != nil {
			t.Fatal(err)
		}
		now = now.Add(40 * 24 * time.Hour)
		rep, err := db.Maintain(ctx, storage.Maintenance{Retention: 30 * 24 * time.Hour})
		if err != nil || rep.RecordsPurged != 1 {
			t.Fatalf("Maintain = %+v, %v; want one record purged", rep, err)
		}
		var rows int
		if err := db.QueryRaw(ctx, false, `SELECT COUNT(*) FROM embeddings`, &rows); err != nil || rows != 0 {
			t.Errorf("embeddings rows after purge = %d (%v), want 0", rows, err)
		}
	})
}

// TestDB_VectorChanges checks the change feed: every change that matters
// to vector search moves the record to the feed's end, and nothing else
// does.
func TestDB_VectorChanges(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	a := storagetest.Store(t, db, rec(t, "global", "alpha", "first"))
	b := storagetest.Store(t, db, rec(t, "github/acme/api", "beta", "second"))
	byID, all, v0 := feed(t, db, 0, true)
	if len(all) != 2 || byID[a.ID].Title != "alpha" || byID[b.ID].Namespace != "github/acme/api" || byID[a.ID].Digest != "" {
		t.Fatalf("full feed = %+v, want a and b without vectors", all)
	}
	if _, all, v := feed(t, db, v0, false); len(all) != 0 || v != v0 {
		t.Fatalf("feed above %d = %d entries, version %d; want none and the same version", v0, len(all), v)
	}

	steps := []struct {
		name    string
		do      func()
		changed string // the record the step moves; "" for none
	}{
		{"vector put", func() {
			if _, err := db.PutEmbeddings(ctx, []storage.Embedding{embedding(a.ID, "d1", 0.6, 0.8)}); err != nil {
				t.Fatal(err)
			}
		}, a.ID},
		{"evidence does not count", func() {
			if _, err := db.Evidence(ctx, a.ID, "codex", storage.StanceCorroborates, text(t, "")); err != nil {
				t.Fatal(err)
			}
		}, ""},
		{"content edit", func() {
			if _, err := db.Update(ctx, b.ID, get(t, db, b.ID).Revision, storage.Changes{Content: textp(t, "changed")}, "claude-code"); err != nil {
				t.Fatal(err)
			}
		}, b.ID},
		{"type change", func() {
			if _, err := db.Update(ctx, b.ID, get(t, db, b.ID).Revision, storage.Changes{Type: ptr(storage.TypeProcedure)}, "claude-code"); err != nil {
				t.Fatal(err)
			}
		}, b.ID},
		{"forget", func() {
			if _, err := db.Forget(ctx, a.ID, 0, text(t, ""), "claude-code"); err != nil {
				t.Fatal(err)
			}
		}, a.ID},
	}
	v := v0
	for _, s := range steps {
		s.do()
		byID, all, next := feed(t, db, v, true)
		if s.changed == "" {
			if len(all) != 0 {
				t.Errorf("%s: feed has %+v, want nothing", s.name, all)
			}
			continue
		}
		c, ok := byID[s.changed]
		if !ok || next <= v {
			t.Errorf("%s: feed above %d = %+v (version %d), want %s", s.name, v, all, next, s.changed)
			continue
		}
		switch s.name {
		case "vector put":
			if c.Digest != "d1" || c.Model != "m" || c.Snapshot != "s1" || len(c.Vector) != 2 || c.Vector[1] != 0.8 {
				t.Errorf("%s: %+v, want digest d1 and the vector", s.name, c)
			}
		case "content edit":
			if c.Content != "changed" {
				t.Errorf("%s: content %q", s.name, c.Content)
			}
		case "type change":
			if c.Type != storage.TypeProcedure {
				t.Errorf("%s: type %q", s.name, c.Type)
			}
		case "forget":
			if c.Status != storage.StatusDeleted || c.Digest != "" {
				t.Errorf("%s: %+v, want deleted without a vector", s.name, c)
			}
		}
		v = next
	}
	if got, err := db.VectorVersion(ctx); err != nil || got != v {
		t.Errorf("VectorVersion = %d, %v; want %d", got, err, v)
	}
}
