package storage_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// entryLine renders a history row for comparison.
func entryLine(e storage.HistoryEntry) string {
	return fmt.Sprintf("%s %s r%d %s", e.Client, e.Action, e.Revision, e.Detail.String())
}

func TestDB_History(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		db := storagetest.Open(t)
		t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
		db.Now, _ = steppingClock(t0, time.Minute)

		r := storagetest.Store(t, db, rec(t, "global", "Retry budget", "Three attempts."))
		other := storagetest.Store(t, db, rec(t, "global", "Unrelated", "Not in this history."))
		r, err := db.Update(ctx, r.ID, 1, storage.Changes{Title: textp(t, "Retry budget v2")}, "codex")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Evidence(ctx, r.ID, "codex", storage.StanceCorroborates, text(t, "checked the config")); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Evidence(ctx, r.ID, "laptop", storage.StanceContradicts, text(t, "")); err != nil {
			t.Fatal(err)
		}
		// A stale write refused against revision 4 names the record too.
		if err := db.Refuse(ctx, storage.RefusalEntry{Client: "codex", Action: storage.ActionRefuseConflict,
			Namespace: "global", RecordID: r.ID, Detail: "revision 1 is stale"}); err != nil {
			t.Fatal(err)
		}
		if err := db.CountReturned(ctx, []string{r.ID}); err != nil {
			t.Fatal(err)
		}
		if err := db.CountFetched(ctx, []string{r.ID, r.ID}); err != nil {
			t.Fatal(err)
		}
		before := snapshot(t, db)

		h, err := db.History(ctx, r.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if after := snapshot(t, db); after != before {
			t.Error("History wrote to the database")
		}
		if h.Record == nil || h.Record.ID != r.ID || h.Record.Revision != 4 || h.Record.Title != "Retry budget v2" {
			t.Fatalf("record %+v, want %s at revision 4", h.Record, r.ID)
		}
		var got []string
		for _, e := range h.Entries {
			got = append(got, entryLine(e))
			if e.RecordID != r.ID || e.Namespace != "global" {
				t.Errorf("row %+v names another record or namespace", e)
			}
		}
		want := []string{
			"codex refuse.conflict r4 revision 1 is stale",
			"laptop evidence r4 contradicts",
			"codex evidence r3 corroborates: checked the config",
			"codex update r2 changed title",
			"claude-code store r1 decision active",
		}
		if !slices.Equal(got, want) {
			t.Errorf("entries\n got %q\nwant %q", got, want)
		}
		if h.Total != 5 {
			t.Errorf("total %d, want 5", h.Total)
		}
		for i := 1; i < len(h.Entries); i++ {
			if h.Entries[i].At.After(h.Entries[i-1].At) {
				t.Errorf("row %d is newer than row %d: not newest first", i, i-1)
			}
		}
		wantEv := []storage.Stance{
			{Client: "codex", Stance: "corroborates", Note: "checked the config"},
			{Client: "laptop", Stance: "contradicts"},
		}
		if len(h.Evidence) != 2 {
			t.Fatalf("evidence %+v, want 2 stances", h.Evidence)
		}
		for i, s := range h.Evidence {
			if s.Client != wantEv[i].Client || s.Stance != wantEv[i].Stance || s.Note != wantEv[i].Note || s.At.IsZero() {
				t.Errorf("stance %d: got %+v, want %+v with a time", i, s, wantEv[i])
			}
		}
		if u := h.Usage; u.Returned != 1 || u.Fetched != 1 || u.LastReturnedAt.IsZero() || u.LastFetchedAt.IsZero() {
			t.Errorf("usage %+v, want returned 1, fetched 1 (a repeated id counts once), both times set", u)
		}

		// The other record's history is its own.
		oh, err := db.History(ctx, other.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(oh.Entries) != 1 || oh.Total != 1 || len(oh.Evidence) != 0 || oh.Usage != (storage.Usage{}) {
			t.Errorf("other record: %+v", oh)
		}
	})

	t.Run("OKLimit", func(t *testing.T) {
		db := storagetest.Open(t)
		r := storagetest.Store(t, db, rec(t, "global", "Often changed", "v0"))
		for i := 1; i <= 4; i++ {
			var err error
			if r, err = db.Update(ctx, r.ID, r.Revision, storage.Changes{Content: textp(t, fmt.Sprintf("v%d", i))}, "codex"); err != nil {
				t.Fatal(err)
			}
		}
		h, err := db.History(ctx, r.ID, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(h.Entries) != 2 || h.Total != 5 || h.Entries[0].Revision != 5 || h.Entries[1].Revision != 4 {
			t.Errorf("got %d rows of %d (revisions %v), want the latest 2 of 5", len(h.Entries), h.Total, h.Entries)
		}
	})

	t.Run("OKSupersededAndForgotten", func(t *testing.T) {
		db := storagetest.Open(t)
		old := storagetest.Store(t, db, rec(t, "global", "Old way", "Before."))
		nr := rec(t, "global", "New way", "After.")
		nr.Supersedes = old.ID
		repl := storagetest.Store(t, db, nr)
		h, err := db.History(ctx, old.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if h.Record.Status != storage.StatusSuperseded || len(h.Entries) != 2 ||
			entryLine(h.Entries[0]) != "claude-code supersede r2 superseded by "+repl.ID {
			t.Errorf("superseded: %+v / %+v", h.Record, h.Entries)
		}
		if _, err := db.Forget(ctx, repl.ID, 0, text(t, "wrong after all"), "laptop"); err != nil {
			t.Fatal(err)
		}
		h, err = db.History(ctx, repl.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if h.Record.Status != storage.StatusDeleted || entryLine(h.Entries[0]) != "laptop forget r2 wrong after all" {
			t.Errorf("forgotten: %+v / %+v", h.Record, h.Entries)
		}
	})

	t.Run("OKPurged", func(t *testing.T) {
		db := storagetest.Open(t)
		t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
		now := t0
		db.Now = func() time.Time { return now }
		r := storagetest.Store(t, db, rec(t, "global", "Gone soon", "x"))
		if _, err := db.Evidence(ctx, r.ID, "codex", storage.StanceCorroborates, text(t, "")); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Forget(ctx, r.ID, 0, text(t, "done"), "laptop"); err != nil {
			t.Fatal(err)
		}
		now = t0.Add(31 * 24 * time.Hour)
		if rep, err := db.Maintain(ctx, storage.Maintenance{Retention: 30 * 24 * time.Hour}); err != nil || rep.RecordsPurged != 1 {
			t.Fatalf("maintain: %+v %v", rep, err)
		}
		h, err := db.History(ctx, r.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if h.Record != nil || len(h.Entries) != 3 || h.Total != 3 || h.Evidence != nil || h.Usage != (storage.Usage{}) {
			t.Errorf("purged: got %+v, want no record and its 3 audit rows", h)
		}
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		db := storagetest.Open(t)
		storagetest.Store(t, db, rec(t, "global", "Some record", "x"))
		_, err := db.History(ctx, "01JD3M5ZK9Q8W7E6R5T4Y3X2V1", 0)
		wantErr(t, err, storage.NotFound, "id")
	})
}

// TestDB_AuditRevision: rows that name no record keep no revision, and
// memory_audit's reading of the log is unchanged by the new column.
func TestDB_AuditRevision(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	r := storagetest.Store(t, db, rec(t, "global", "A record", "x"))
	if err := db.Audit(ctx, storage.AuditEntry{Client: "hearth", Action: storage.ActionMaintenance, Detail: text(t, "run")}); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRaw(ctx, false, `SELECT COUNT(*) FROM audit WHERE revision IS NULL AND record_id = ''`, &n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("%d rows without a record and without a revision, want 1", n)
	}
	if err := db.QueryRaw(ctx, false, `SELECT revision FROM audit WHERE record_id = '`+r.ID+`'`, &n); err != nil || n != 1 {
		t.Errorf("store row revision %d (%v), want 1", n, err)
	}
	rows, err := db.AuditLog(ctx, 10)
	if err != nil || len(rows) != 2 || rows[0].Action != storage.ActionMaintenance || rows[1].RecordID != r.ID {
		t.Errorf("audit log %+v %v", rows, err)
	}
}

func TestDB_TimelineFilters(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	db.Now = func() time.Time { return now }
	// Records 0..5, one hour apart: a decision, a note, a candidate note, a
	// superseded decision (by 4) and a deleted note (5), across namespaces.
	mk := func(i int, ns, typ, status string) *storage.Record {
		now = t0.Add(time.Duration(i) * time.Hour)
		nr := rec(t, ns, fmt.Sprintf("r%d", i), "c")
		nr.Type, nr.Status = typ, status
		return storagetest.Store(t, db, nr)
	}
	r0 := mk(0, "global", storage.TypeDecision, storage.StatusActive)
	mk(1, "projects/x", storage.TypeNote, storage.StatusActive)
	mk(2, "global", storage.TypeNote, storage.StatusCandidate)
	r3 := mk(3, "projects/x", storage.TypeDecision, storage.StatusActive)
	now = t0.Add(4 * time.Hour)
	nr := rec(t, "projects/x", "r4", "c")
	nr.Supersedes = r3.ID
	storagetest.Store(t, db, nr)
	r5 := mk(5, "global", storage.TypeNote, storage.StatusActive)
	if _, err := db.Forget(ctx, r5.ID, 0, text(t, "x"), "test"); err != nil {
		t.Fatal(err)
	}
	timeline := func(t *testing.T, q storage.TimelineQuery) []string {
		t.Helper()
		recs, err := db.Timeline(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range recs {
			got = append(got, r.Title)
		}
		return got
	}
	for _, tc := range []struct {
		name string
		q    storage.TimelineQuery
		want []string
	}{
		{"OKDefault", storage.TimelineQuery{}, []string{"r4", "r3", "r2", "r1", "r0"}},
		{"OKTypes", storage.TimelineQuery{Types: []string{storage.TypeNote}}, []string{"r2", "r1"}},
		{"OKStatuses", storage.TimelineQuery{Statuses: []string{storage.StatusSuperseded, storage.StatusCandidate}}, []string{"r3", "r2"}},
		{"OKDeletedOnlyWhenAsked", storage.TimelineQuery{Statuses: []string{storage.StatusDeleted}}, []string{"r5"}},
		{"OKEveryStatus", storage.TimelineQuery{Statuses: []string{"active", "candidate", "superseded", "deleted"}}, []string{"r5", "r4", "r3", "r2", "r1", "r0"}},
		{"OKCombined", storage.TimelineQuery{Namespaces: []string{"projects/x"}, Types: []string{storage.TypeDecision}, Statuses: []string{storage.StatusActive}}, []string{"r4"}},
		{"OKAfter", storage.TimelineQuery{After: r3.ID, Limit: 2}, []string{"r2", "r1"}},
		{"OKAfterLast", storage.TimelineQuery{After: r0.ID}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := timeline(t, tc.q); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("OKAfterSameInstant", func(t *testing.T) {
		// Records created in one transaction share created_at: the cursor
		// goes on by id, never skipping or repeating one.
		db := storagetest.Open(t)
		at := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
		db.Now = func() time.Time { return at }
		var all []string
		for i := range 7 {
			all = append(all, storagetest.Store(t, db, rec(t, "global", fmt.Sprintf("s%d", i), "c")).ID)
		}
		slices.Reverse(all) // id descending
		var got []string
		after := ""
		for range 10 {
			recs, err := db.Timeline(ctx, storage.TimelineQuery{After: after, Limit: 3})
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) == 0 {
				break
			}
			for _, r := range recs {
				got = append(got, r.ID)
			}
			after = recs[len(recs)-1].ID
		}
		if !slices.Equal(got, all) {
			t.Errorf("paged %v, want %v", got, all)
		}
	})
	t.Run("ErrAfterUnknown", func(t *testing.T) {
		_, err := db.Timeline(ctx, storage.TimelineQuery{After: "01JD3M5ZK9Q8W7E6R5T4Y3X2V1"})
		wantErr(t, err, storage.NotFound, "after_id")
	})
	t.Run("ErrType", func(t *testing.T) {
		_, err := db.Timeline(ctx, storage.TimelineQuery{Types: []string{"note", "memo"}})
		wantErr(t, err, storage.Invalid, "types[1]")
	})
	t.Run("ErrStatus", func(t *testing.T) {
		_, err := db.Timeline(ctx, storage.TimelineQuery{Statuses: []string{"gone"}})
		wantErr(t, err, storage.Invalid, "statuses[0]")
	})
}
