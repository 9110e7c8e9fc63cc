package storage_test

import (
	"slices"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

const day = 24 * time.Hour

func TestDB_StartUsage(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		db := storagetest.Open(t)
		t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
		now := t0
		db.Now = func() time.Time { return now }
		since, err := db.StartUsage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !since.Equal(t0) {
			t.Errorf("since: got %v, want %v", since, t0)
		}
		// A later start keeps the first mark.
		now = t0.Add(40 * day)
		if since, err = db.StartUsage(ctx); err != nil || !since.Equal(t0) {
			t.Errorf("second start: got %v, %v, want %v", since, err, t0)
		}
		log, err := db.AuditLog(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(log) != 1 || log[0].Action != storage.ActionUsageStart || log[0].Client != "hearth" || !log[0].At.Equal(t0) {
			t.Errorf("audit: got %+v, want one usage-start row by hearth at %v", log, t0)
		}
	})

	t.Run("OKNeverStarted", func(t *testing.T) {
		db := storagetest.Open(t)
		storagetest.Store(t, db, rec(t, "global", "a", "c"))
		recs, since, ready, err := db.Unused(ctx, "", time.Now().Add(365*day), 0)
		if err != nil {
			t.Fatal(err)
		}
		if recs != nil || !since.IsZero() || ready {
			t.Errorf("got %v, %v, %v, want nothing, zero, not ready", recs, since, ready)
		}
	})
}

func TestDB_Unused(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	now := t0.Add(-60 * day)
	db.Now = func() time.Time { return now }
	store := func(ns, title string, at time.Time) *storage.Record {
		t.Helper()
		now = at
		return storagetest.Store(t, db, rec(t, ns, title, "content"))
	}
	// Records from before counting began, and one after.
	old := store("github/acme/api", "old", t0.Add(-60*day))
	other := store("github/acme/web", "other namespace", t0.Add(-50*day))
	returned := store("github/acme/api", "returned", t0.Add(-40*day))
	fetched := store("github/acme/api", "fetched", t0.Add(-35*day))
	forgotten := store("github/acme/api", "forgotten", t0.Add(-34*day))
	candidate := store("github/acme/api", "candidate", t0.Add(-33*day))
	replaced := store("github/acme/api", "replaced", t0.Add(-32*day))
	young := store("github/acme/api", "young", t0.Add(5*day))

	now = t0
	if _, err := db.StartUsage(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Forget(ctx, forgotten.ID, 0, text(t, ""), "claude-code"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Update(ctx, candidate.ID, 1, storage.Changes{Status: ptr(storage.StatusCandidate)}, "claude-code"); err != nil {
		t.Fatal(err)
	}
	nr := rec(t, "github/acme/api", "replacement", "content")
	nr.Supersedes = replaced.ID
	replacement := storagetest.Store(t, db, nr)
	now = t0.Add(20 * day)
	if err := db.CountReturned(ctx, []string{returned.ID}); err != nil {
		t.Fatal(err)
	}
	now = t0.Add(25 * day)
	if err := db.CountFetched(ctx, []string{fetched.ID}); err != nil {
		t.Fatal(err)
	}

	unused := func(ns string, at time.Time, limit int) ([]string, bool) {
		t.Helper()
		recs, since, ready, err := db.Unused(ctx, ns, at, limit)
		if err != nil {
			t.Fatal(err)
		}
		if !since.Equal(t0) {
			t.Errorf("counting since: got %v, want %v", since, t0)
		}
		var ids []string
		for _, r := range recs {
			ids = append(ids, r.ID)
		}
		return ids, ready
	}

	t.Run("OKNotReady", func(t *testing.T) {
		// Counting has run 30 days less a millisecond: nothing is known yet.
		ids, ready := unused("", t0.Add(30*day-time.Millisecond), 0)
		if ready || ids != nil {
			t.Errorf("got %v, ready %v, want nothing, not ready", ids, ready)
		}
	})

	t.Run("OK", func(t *testing.T) {
		// At t0+31d returned (11 days ago) was used; fetched was only fetched
		// by id (6 days ago), which is not use (R-K6); young is 26 days old,
		// and replacement is 31 days old and unused.
		ids, ready := unused("", t0.Add(31*day), 0)
		if want := []string{old.ID, other.ID, fetched.ID, replacement.ID}; !ready || !slices.Equal(ids, want) {
			t.Errorf("got %v, ready %v, want %v (old, other, fetched, replacement), ready", ids, ready, want)
		}
		recs, _, _, _ := db.Unused(ctx, "", t0.Add(31*day), 1)
		if len(recs) != 1 {
			t.Fatalf("limit 1: got %d records", len(recs))
		}
		if r := recs[0]; r.ID != old.ID || r.Namespace != "github/acme/api" || r.Type != storage.TypeDecision ||
			r.Title != "old" || !r.CreatedAt.Equal(t0.Add(-60*day)) || !r.LastReturnedAt.IsZero() || !r.LastFetchedAt.IsZero() {
			t.Errorf("got %+v, want the old record, never used", r)
		}
	})

	t.Run("OKUseExpires", func(t *testing.T) {
		// 30 days after its last use, returned is unused again;
		// young is 51 days old by then.
		ids, _ := unused("", t0.Add(56*day), 0)
		want := []string{old.ID, other.ID, returned.ID, fetched.ID, replacement.ID, young.ID}
		if !slices.Equal(ids, want) {
			t.Errorf("got %v, want %v", ids, want)
		}
		recs, _, _, _ := db.Unused(ctx, "github/acme/api", t0.Add(56*day), 3)
		if len(recs) != 3 || recs[1].ID != returned.ID || !recs[1].LastReturnedAt.Equal(t0.Add(20*day)) ||
			recs[2].ID != fetched.ID || !recs[2].LastFetchedAt.Equal(t0.Add(25*day)) {
			t.Errorf("got %+v, want old, returned (last returned t0+20d), fetched (last fetched t0+25d)", recs)
		}
	})

	t.Run("OKNamespace", func(t *testing.T) {
		ids, _ := unused("github/acme/web", t0.Add(31*day), 0)
		if want := []string{other.ID}; !slices.Equal(ids, want) {
			t.Errorf("got %v, want %v", ids, want)
		}
		if ids, _ := unused("github/acme/none", t0.Add(31*day), 0); ids != nil {
			t.Errorf("unknown namespace: got %v, want nothing", ids)
		}
	})

	t.Run("OKClock", func(t *testing.T) {
		// A zero now reads the clock.
		now = t0.Add(31 * day)
		ids, ready := unused("", time.Time{}, 0)
		if !ready || len(ids) != 4 {
			t.Errorf("got %v, ready %v, want 4 records, ready", ids, ready)
		}
	})
}

// BenchmarkDB_Unused lists unused records among 10,000 (every one old, a
// tenth of them recently returned), all namespaces and one namespace.
func BenchmarkDB_Unused(b *testing.B) {
	db := storagetest.Open(b)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	db.Now = func() time.Time { return now }
	if _, err := db.StartUsage(ctx); err != nil {
		b.Fatal(err)
	}
	fill(b, db, 10_000)
	recent, _, _, err := db.Unused(ctx, "", t0.Add(40*day), 1000)
	if err != nil {
		b.Fatal(err)
	}
	var ids []string
	for i, r := range recent {
		if i%10 == 0 {
			ids = append(ids, r.ID)
		}
	}
	now = t0.Add(39 * day)
	if err := db.CountReturned(ctx, ids); err != nil {
		b.Fatal(err)
	}
	for _, ns := range []string{"", "github/acme/api"} {
		b.Run("namespace="+ns, func(b *testing.B) {
			for b.Loop() {
				if recs, _, ready, err := db.Unused(ctx, ns, t0.Add(40*day), storage.DefaultUnusedLimit); err != nil || !ready || len(recs) == 0 {
					b.Fatalf("got %d records, ready %v, err %v", len(recs), ready, err)
				}
			}
		})
	}
}
