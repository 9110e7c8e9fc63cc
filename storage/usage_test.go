package storage_test

import (
	"context"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

func TestDB_CountReturned(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	t0 := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	db.Now = func() time.Time { return now }
	a := storagetest.Store(t, db, rec(t, "global", "a", "c"))
	b := storagetest.Store(t, db, rec(t, "global", "b", "c"))

	t.Run("OK", func(t *testing.T) {
		before := ftsDigest(t, db)
		if err := db.CountReturned(ctx, []string{a.ID, b.ID, a.ID, "01NOSUCHRECORD000000000000"}); err != nil {
			t.Fatal(err)
		}
		now = t0.Add(time.Minute)
		if err := db.CountReturned(ctx, []string{a.ID}); err != nil {
			t.Fatal(err)
		}
		if err := db.CountFetched(ctx, []string{b.ID}); err != nil {
			t.Fatal(err)
		}
		ua, err := db.Usage(ctx, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if ua.Returned != 2 || ua.Fetched != 0 || !ua.LastReturnedAt.Equal(t0.Add(time.Minute)) || !ua.LastFetchedAt.IsZero() {
			t.Errorf("a: got %+v, want returned 2 (last %v), never fetched", ua, t0.Add(time.Minute))
		}
		ub, err := db.Usage(ctx, b.ID)
		if err != nil {
			t.Fatal(err)
		}
		if ub.Returned != 1 || ub.Fetched != 1 || !ub.LastReturnedAt.Equal(t0) || !ub.LastFetchedAt.Equal(t0.Add(time.Minute)) {
			t.Errorf("b: got %+v, want returned 1 at %v, fetched 1 at %v", ub, t0, t0.Add(time.Minute))
		}
		if got := get(t, db, a.ID); got.Revision != 1 || !got.UpdatedAt.Equal(t0) {
			t.Errorf("record: got revision %d updated %v, want 1, %v (counting is not a mutation)", got.Revision, got.UpdatedAt, t0)
		}
		if ftsDigest(t, db) != before {
			t.Errorf("counting touched the FTS index")
		}
	})

	t.Run("OKNeverCounted", func(t *testing.T) {
		c := storagetest.Store(t, db, rec(t, "global", "c", "c"))
		u, err := db.Usage(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if u != (storage.Usage{}) {
			t.Errorf("got %+v, want zero usage", u)
		}
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		_, err := db.Usage(ctx, "01NOSUCHRECORD000000000000")
		wantErr(t, err, storage.NotFound, "id")
	})
}

// TestDB_NoteReturned: a noted use is in memory at once (Usage shows it)
// and stored by Close, exactly once, without any write by the reader.
func TestDB_NoteReturned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := storagetest.Place(t)
	db := storagetest.OpenPath(t, path)
	r := storagetest.Store(t, db, storage.NewRecord{Title: storagetest.Text(t, "a"), Content: storagetest.Text(t, "b")})
	db.NoteReturned([]string{r.ID, r.ID})
	db.NoteReturned([]string{r.ID})
	db.NoteFetched([]string{r.ID})
	u, err := db.Usage(ctx, r.ID)
	if err != nil || u.Returned != 2 || u.Fetched != 1 || u.LastReturnedAt.IsZero() || u.LastFetchedAt.IsZero() {
		t.Fatalf("in memory: %+v, %v; want 2 returned, 1 fetched, with times", u, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = storagetest.OpenPath(t, path)
	u, err = db.Usage(ctx, r.ID)
	if err != nil || u.Returned != 2 || u.Fetched != 1 {
		t.Errorf("after Close: %+v, %v; want 2 returned, 1 fetched", u, err)
	}
}
