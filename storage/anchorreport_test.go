package storage_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// anchored stores an active record with the given anchors.
func anchored(tb testing.TB, db *storage.DB, title string, anchors ...string) *storage.Record {
	tb.Helper()
	return storagetest.Store(tb, db, storage.NewRecord{Namespace: "github/acme/api", Title: text(tb, title),
		Anchors: storagetest.Texts(tb, anchors...)})
}

// anchorOf returns the named anchor of record id as stored.
func anchorOf(tb testing.TB, db *storage.DB, id, name string) storage.Anchor {
	tb.Helper()
	for _, a := range get(tb, db, id).Anchors {
		if a.Anchor == name {
			return a
		}
	}
	tb.Fatalf("record %s has no anchor %s", id, name)
	return storage.Anchor{}
}

// auditOf returns the audit rows of action, newest first.
func auditOf(tb testing.TB, db *storage.DB, action storage.Action) []storage.AuditEntry {
	tb.Helper()
	all, err := db.AuditLog(ctx, 1000)
	if err != nil {
		tb.Fatal(err)
	}
	var out []storage.AuditEntry
	for _, e := range all {
		if e.Action == action {
			out = append(out, e)
		}
	}
	return out
}

func fixedClock(db *storage.DB) *time.Time {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	db.Now = func() time.Time { return now }
	return &now
}

func TestDB_ReportAnchors(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		db := storagetest.Open(t)
		now := fixedClock(db)
		r := anchored(t, db, "values", "path:deploy/values.yaml", "host:nas")
		*now = now.Add(time.Minute)
		results, rec, err := db.ReportAnchors(ctx, "claude-code", []storage.AnchorReport{
			{ID: r.ID, Anchor: "path:deploy/values.yaml", State: storage.AnchorUnavailable, Detail: text(t, "deleted in 3f2a1c")},
		})
		if err != nil {
			t.Fatal(err)
		}
		want := storage.AnchorResult{ID: r.ID, Anchor: "path:deploy/values.yaml", State: storage.AnchorUnavailable, Changed: true, Revision: 2}
		if len(results) != 1 || results[0] != want {
			t.Errorf("results: got %+v, want [%+v]", results, want)
		}
		if rec.Revision != 2 || !rec.UpdatedAt.Equal(*now) {
			t.Errorf("record: revision %d updated %v, want 2 at %v", rec.Revision, rec.UpdatedAt, *now)
		}
		got := anchorOf(t, db, r.ID, "path:deploy/values.yaml")
		wantAnchor := storage.Anchor{Anchor: "path:deploy/values.yaml", State: storage.AnchorUnavailable, CheckedAt: *now,
			CheckedBy: "claude-code", Detail: "deleted in 3f2a1c"}
		if got != wantAnchor {
			t.Errorf("anchor: got %+v, want %+v", got, wantAnchor)
		}
		if other := anchorOf(t, db, r.ID, "host:nas"); other.State != storage.AnchorUnknown || !other.CheckedAt.IsZero() {
			t.Errorf("the other anchor changed: %+v", other)
		}
		audit := auditOf(t, db, storage.ActionAnchor)
		if len(audit) != 1 || audit[0].Client != "claude-code" || audit[0].RecordID != r.ID || audit[0].Namespace != r.Namespace ||
			audit[0].Detail.String() != "path:deploy/values.yaml unknown→unavailable (deleted in 3f2a1c)" {
			t.Errorf("audit: got %+v", audit)
		}
		if f := rec.Unavailable(); f == nil || *f != (storage.AnchorFlag{Anchor: "path:deploy/values.yaml", Since: *now, Count: 1}) {
			t.Errorf("flag: got %+v", f)
		}
	})

	t.Run("RepeatChangesNothing", func(t *testing.T) {
		db := storagetest.Open(t)
		now := fixedClock(db)
		r := anchored(t, db, "values", "path:deploy/values.yaml")
		report := []storage.AnchorReport{{ID: r.ID, Anchor: "path:deploy/values.yaml", State: storage.AnchorAvailable}}
		if _, _, err := db.ReportAnchors(ctx, "claude-code", report); err != nil {
			t.Fatal(err)
		}
		first := anchorOf(t, db, r.ID, "path:deploy/values.yaml")
		before := snapshot(t, db)
		*now = now.Add(time.Hour)
		// The same state again, from another client with another detail.
		report[0].Detail = text(t, "still there")
		results, rec, err := db.ReportAnchors(ctx, "codex", report)
		if err != nil {
			t.Fatal(err)
		}
		if snapshot(t, db) != before {
			t.Errorf("a repeated report changed the database")
		}
		if results[0].Changed || results[0].Revision != 2 || rec.Revision != 2 {
			t.Errorf("got %+v, revision %d; want unchanged at revision 2", results[0], rec.Revision)
		}
		if got := anchorOf(t, db, r.ID, "path:deploy/values.yaml"); got != first {
			t.Errorf("anchor: got %+v, want it as first reported %+v", got, first)
		}
	})

	t.Run("OneRevisionPerRecord", func(t *testing.T) {
		db := storagetest.Open(t)
		fixedClock(db)
		a := anchored(t, db, "a", "path:a.go", "host:nas", "url:https://ci.example.com/a")
		b := anchored(t, db, "b", "path:b.go")
		results, _, err := db.ReportAnchors(ctx, "claude-code", []storage.AnchorReport{
			{ID: a.ID, Anchor: "url:https://ci.example.com/a", State: storage.AnchorUnavailable, Field: "reports[0]."},
			{ID: b.ID, Anchor: "path:b.go", State: storage.AnchorAvailable, Field: "reports[1]."},
			{ID: a.ID, Anchor: "path:a.go", State: storage.AnchorAvailable, Field: "reports[2]."},
			{ID: a.ID, Anchor: "host:nas", State: storage.AnchorUnavailable, Field: "reports[3]."},
			// Reported twice in one call, ending where it began: no change.
			{ID: a.ID, Anchor: "host:nas", State: storage.AnchorUnknown, Field: "reports[4]."},
		})
		if err == nil {
			t.Fatalf("unknown is not a state a client reports; got %+v", results)
		}
		wantErr(t, err, storage.Invalid, "reports[4].state")

		results, rec, err := db.ReportAnchors(ctx, "claude-code", []storage.AnchorReport{
			{ID: a.ID, Anchor: "url:https://ci.example.com/a", State: storage.AnchorUnavailable},
			{ID: b.ID, Anchor: "path:b.go", State: storage.AnchorAvailable},
			{ID: a.ID, Anchor: "path:a.go", State: storage.AnchorAvailable},
			{ID: a.ID, Anchor: "host:nas", State: storage.AnchorUnavailable},
			{ID: a.ID, Anchor: "host:nas", State: storage.AnchorAvailable},
		})
		if err != nil {
			t.Fatal(err)
		}
		if rec.ID != a.ID || rec.Revision != 2 {
			t.Errorf("first record: got %s at %d, want %s at 2", rec.ID, rec.Revision, a.ID)
		}
		for i, want := range []storage.AnchorResult{
			{ID: a.ID, Anchor: "url:https://ci.example.com/a", State: storage.AnchorUnavailable, Changed: true, Revision: 2},
			{ID: b.ID, Anchor: "path:b.go", State: storage.AnchorAvailable, Changed: true, Revision: 2},
			{ID: a.ID, Anchor: "path:a.go", State: storage.AnchorAvailable, Changed: true, Revision: 2},
			{ID: a.ID, Anchor: "host:nas", State: storage.AnchorAvailable, Changed: true, Revision: 2},
			{ID: a.ID, Anchor: "host:nas", State: storage.AnchorAvailable, Changed: true, Revision: 2},
		} {
			if results[i] != want {
				t.Errorf("result %d: got %+v, want %+v", i, results[i], want)
			}
		}
		audit := auditOf(t, db, storage.ActionAnchor)
		if len(audit) != 2 {
			t.Fatalf("audit: got %d rows, want one per record", len(audit))
		}
		for _, e := range audit {
			if e.RecordID == a.ID {
				want := "path:a.go unknown→available; host:nas unknown→available; url:https://ci.example.com/a unknown→unavailable"
				if e.Detail.String() != want {
					t.Errorf("audit detail:\ngot  %s\nwant %s", e.Detail.String(), want)
				}
			}
		}
		// Back and forth in one call leaves it as it was.
		before := snapshot(t, db)
		results, _, err = db.ReportAnchors(ctx, "claude-code", []storage.AnchorReport{
			{ID: b.ID, Anchor: "path:b.go", State: storage.AnchorUnavailable},
			{ID: b.ID, Anchor: "path:b.go", State: storage.AnchorAvailable},
		})
		if err != nil {
			t.Fatal(err)
		}
		if snapshot(t, db) != before || results[0].Changed || results[1].Changed {
			t.Errorf("a report undone in the same call changed something: %+v", results)
		}
	})

	t.Run("ErrClient", func(t *testing.T) {
		db := storagetest.Open(t)
		r := anchored(t, db, "x", "path:x.go")
		unchanged(t, db, storage.Invalid, "client", func() error {
			_, _, err := db.ReportAnchors(ctx, "", []storage.AnchorReport{{ID: r.ID, Anchor: "path:x.go", State: storage.AnchorAvailable}})
			return err
		})
		unchanged(t, db, storage.Invalid, "reports", func() error {
			_, _, err := db.ReportAnchors(ctx, "claude-code", nil)
			return err
		})
	})

	for _, c := range []struct {
		name   string
		report func(id string) storage.AnchorReport
		code   storage.Code
		field  string
	}{
		{"ErrEntity", func(id string) storage.AnchorReport {
			return storage.AnchorReport{ID: id, Anchor: "entity:light.kitchen", State: storage.AnchorUnavailable}
		}, storage.Invalid, "reports[1].anchor"},
		{"ErrAnchorForm", func(id string) storage.AnchorReport {
			return storage.AnchorReport{ID: id, Anchor: "path:../x", State: storage.AnchorUnavailable}
		}, storage.Invalid, "reports[1].anchor"},
		{"ErrState", func(id string) storage.AnchorReport {
			return storage.AnchorReport{ID: id, Anchor: "path:x.go", State: "gone"}
		}, storage.Invalid, "reports[1].state"},
		{"ErrNoRecord", func(string) storage.AnchorReport {
			return storage.AnchorReport{ID: "01JD3M5ZK9Q8W7E6R5T4Y3X2V1", Anchor: "path:x.go", State: storage.AnchorAvailable}
		}, storage.NotFound, "reports[1].id"},
		{"ErrNoAnchor", func(id string) storage.AnchorReport {
			return storage.AnchorReport{ID: id, Anchor: "path:y.go", State: storage.AnchorAvailable}
		}, storage.NotFound, "reports[1].anchor"},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := storagetest.Open(t)
			r := anchored(t, db, "x", "path:x.go", "entity:light.kitchen")
			// The first report is good: the refusal of the second undoes it.
			good := storage.AnchorReport{ID: r.ID, Anchor: "path:x.go", State: storage.AnchorUnavailable, Field: "reports[0]."}
			bad := c.report(r.ID)
			bad.Field = "reports[1]."
			e := unchanged(t, db, c.code, c.field, func() error {
				_, _, err := db.ReportAnchors(ctx, "claude-code", []storage.AnchorReport{good, bad})
				return err
			})
			if strings.Contains(e.Message, bad.Anchor) {
				t.Errorf("the error echoes the anchor: %v", e)
			}
		})
	}

	t.Run("ErrNotLive", func(t *testing.T) {
		db := storagetest.Open(t)
		r := anchored(t, db, "x", "path:x.go")
		if _, err := db.Forget(ctx, r.ID, 0, text(t, "gone"), "test"); err != nil {
			t.Fatal(err)
		}
		unchanged(t, db, storage.Invalid, "id", func() error {
			_, _, err := db.ReportAnchors(ctx, "claude-code", []storage.AnchorReport{{ID: r.ID, Anchor: "path:x.go", State: storage.AnchorAvailable}})
			return err
		})
	})
}

func TestDB_Store_AnchorForm(t *testing.T) {
	t.Parallel()
	t.Run("ErrStore", func(t *testing.T) {
		db := storagetest.Open(t)
		nr := rec(t, "global", "t", "c")
		nr.Anchors = storagetest.Texts(t, "path:ok.go", "path:/etc/passwd")
		unchanged(t, db, storage.Invalid, "anchors[1]", func() error {
			_, err := db.Store(ctx, nr)
			return err
		})
	})
	t.Run("ErrUpdate", func(t *testing.T) {
		db := storagetest.Open(t)
		r := anchored(t, db, "x", "path:x.go")
		as := storagetest.Texts(t, "host:NAS")
		unchanged(t, db, storage.Invalid, "changes.anchors[0]", func() error {
			_, err := db.Update(ctx, r.ID, r.Revision, storage.Changes{Anchors: &as}, "test")
			return err
		})
	})
	t.Run("UpdateKeepsState", func(t *testing.T) {
		db := storagetest.Open(t)
		r := anchored(t, db, "x", "path:x.go")
		if _, _, err := db.ReportAnchors(ctx, "codex", []storage.AnchorReport{{ID: r.ID, Anchor: "path:x.go", State: storage.AnchorUnavailable, Detail: text(t, "gone")}}); err != nil {
			t.Fatal(err)
		}
		was := anchorOf(t, db, r.ID, "path:x.go")
		as := storagetest.Texts(t, "host:nas", "path:x.go")
		up, err := db.Update(ctx, r.ID, 2, storage.Changes{Anchors: &as}, "test")
		if err != nil {
			t.Fatal(err)
		}
		if up.Anchors[1] != was || up.Anchors[0].State != storage.AnchorUnknown {
			t.Errorf("anchors after update: %+v; want path:x.go kept as %+v", up.Anchors, was)
		}
	})
}

// BenchmarkDB_ReportAnchors applies a batch of 100 reports (50 records, two
// path anchors each) in one transaction: flip changes every anchor each
// time (50 revisions, 50 audit rows), repeat reports the states they have.
func BenchmarkDB_ReportAnchors(b *testing.B) {
	for _, flip := range []bool{true, false} {
		name := map[bool]string{true: "flip", false: "repeat"}[flip]
		b.Run(name, func(b *testing.B) {
			db := storagetest.Open(b)
			var reports []storage.AnchorReport
			for i := range 50 {
				r := anchored(b, db, fmt.Sprintf("r%d", i), fmt.Sprintf("path:src/a%d.go", i), fmt.Sprintf("path:src/b%d.go", i))
				for _, a := range r.Anchors {
					reports = append(reports, storage.AnchorReport{ID: r.ID, Anchor: a.Anchor, State: storage.AnchorAvailable})
				}
			}
			if _, _, err := db.ReportAnchors(ctx, "claude-code", reports); err != nil {
				b.Fatal(err)
			}
			state := storage.AnchorAvailable
			for b.Loop() {
				if flip {
					state = map[string]string{storage.AnchorAvailable: storage.AnchorUnavailable, storage.AnchorUnavailable: storage.AnchorAvailable}[state]
					for i := range reports {
						reports[i].State = state
					}
				}
				res, _, err := db.ReportAnchors(ctx, "claude-code", reports)
				if err != nil {
					b.Fatal(err)
				}
				if res[0].Changed != flip {
					b.Fatalf("changed %v, want %v", res[0].Changed, flip)
				}
			}
		})
	}
}
