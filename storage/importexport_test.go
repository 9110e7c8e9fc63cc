package storage_test

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// history fills db with what an export must carry: several namespaces,
// anchors with a check, evidence, a supersession, a candidate, an updated
// record and a forgotten one.
func history(t *testing.T, db *storage.DB) {
	t.Helper()
	next, clock := steppingClock(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC), time.Second)
	db.Now = next
	a := storagetest.Store(t, db, storage.NewRecord{Namespace: "github/acme/api", Type: storage.TypeDecision,
		Title: text(t, "Use Postgres"), Content: text(t, "The API stores orders in Postgres."),
		Topics: storagetest.Texts(t, "db"), Anchors: storagetest.Texts(t, "path:db/schema.sql", "host:db1")})
	storagetest.Store(t, db, storage.NewRecord{Namespace: "github/acme/api", Type: storage.TypeDecision,
		Title: text(t, "Use SQLite"), Content: text(t, "The API moved to SQLite."), Supersedes: a.ID})
	b := storagetest.Store(t, db, storage.NewRecord{Namespace: "github/acme/web", Type: storage.TypeConstraint,
		Title: text(t, "No inline scripts"), Content: text(t, "The CSP forbids inline scripts."), Confidence: 0.6})
	if _, err := db.Evidence(ctx, b.ID, "codex", storage.StanceCorroborates, text(t, "checked the header")); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Evidence(ctx, b.ID, "qa", storage.StanceContradicts, text(t, "")); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Update(ctx, b.ID, 3, storage.Changes{Title: textp(t, "No inline scripts or styles")}, "claude-code"); err != nil {
		t.Fatal(err)
	}
	storagetest.Store(t, db, storage.NewRecord{Namespace: "github/acme/web", Type: storage.TypeNote,
		Title: text(t, "A candidate"), Content: text(t, "Extracted from a session."), Status: storage.StatusCandidate, Source: storage.SourceExtraction})
	gone := storagetest.Store(t, db, storage.NewRecord{Namespace: "github/acme/web", Title: text(t, "Forgotten")})
	if _, err := db.Forget(ctx, gone.ID, 0, text(t, "wrong"), "claude-code"); err != nil {
		t.Fatal(err)
	}
	storagetest.Store(t, db, storage.NewRecord{Namespace: "github/acmecorp/x", Title: text(t, "Other owner")})
	storagetest.Store(t, db, storage.NewRecord{Namespace: "global", Title: text(t, "Global")})
	// An anchor check, as an anchor report would leave it.
	if err := db.ExecRaw(ctx, `UPDATE anchors SET state = 'unavailable', checked_at = ?, checked_by = 'codex' WHERE anchor = 'host:db1'`,
		clock().UnixMilli()); err != nil {
		t.Fatal(err)
	}
}

// exportAll pages through an export of prefix, limit records at a time.
func exportAll(t *testing.T, db *storage.DB, prefix string, limit int) []*storage.ExportedRecord {
	t.Helper()
	var out []*storage.ExportedRecord
	after := ""
	for {
		page, more, err := db.Export(ctx, storage.ExportQuery{Prefix: prefix, After: after, Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page...)
		if !more {
			return out
		}
		after = page[len(page)-1].ID
	}
}

// items turns exported records into import items, as a line would.
func items(t *testing.T, recs []*storage.ExportedRecord) []storage.ImportItem {
	t.Helper()
	var out []storage.ImportItem
	for _, r := range recs {
		it := storage.ImportItem{
			ID: r.ID, Namespace: r.Namespace, Type: r.Type, Title: text(t, r.Title), Content: text(t, r.Content),
			Confidence: r.Confidence, Status: r.Status, Revision: r.Revision, Writer: r.Writer, Source: r.Source,
			CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Supersedes: r.Supersedes, SupersededBy: r.SupersededBy,
		}
		for _, tp := range r.Topics {
			it.Topics = append(it.Topics, text(t, tp))
		}
		for _, a := range r.Anchors {
			it.Anchors = append(it.Anchors, storage.ImportAnchor{Anchor: text(t, a.Anchor), State: a.State, CheckedAt: a.CheckedAt, CheckedBy: a.CheckedBy})
		}
		for _, e := range r.Evidence {
			it.Evidence = append(it.Evidence, storage.ImportStance{Client: e.Client, Stance: e.Stance, Note: text(t, e.Note), At: e.At})
		}
		out = append(out, it)
	}
	return out
}

func outcomes(rs []storage.ImportResult) map[string]int {
	m := map[string]int{}
	for _, r := range rs {
		if r.Err != nil {
			m["error"]++
		} else {
			m[r.Outcome]++
		}
	}
	return m
}

func TestDB_Export(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	history(t, db)
	t.Run("OKPrefix", func(t *testing.T) {
		recs := exportAll(t, db, "github/acme", 2)
		var ns []string
		for _, r := range recs {
			ns = append(ns, r.Namespace)
			if r.Status == storage.StatusDeleted {
				t.Errorf("deleted record %s exported", r.ID)
			}
		}
		want := []string{"github/acme/api", "github/acme/api", "github/acme/web", "github/acme/web"}
		if !slices.Equal(ns, want) {
			t.Errorf("namespaces %v, want %v (not acmecorp, not the forgotten one)", ns, want)
		}
		if !slices.IsSortedFunc(recs, func(a, b *storage.ExportedRecord) int { return compare(a.ID, b.ID) }) {
			t.Errorf("not in id order")
		}
		if len(recs[2].Evidence) != 2 || recs[2].Evidence[0].Client != "codex" || recs[2].Evidence[1].Stance != storage.StanceContradicts {
			t.Errorf("evidence %+v, want codex then qa in arrival order", recs[2].Evidence)
		}
	})
	t.Run("OKEverything", func(t *testing.T) {
		if got := len(exportAll(t, db, "", 1000)); got != 6 {
			t.Errorf("got %d records, want 6 (every live or superseded one)", got)
		}
	})
	t.Run("ErrLimit", func(t *testing.T) {
		if _, _, err := db.Export(ctx, storage.ExportQuery{Limit: storage.MaxExportLimit + 1}); storage.ErrorCode(err) != storage.Invalid {
			t.Errorf("got %v, want Invalid", err)
		}
	})
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestDB_Import holds the round trip: an export imported as exported into
// another store reproduces every record field for field (ids, revisions,
// writers, times, anchors with their checks, evidence and its derived
// counts, supersession links), and a second import changes nothing.
func TestDB_Import(t *testing.T) {
	t.Parallel()
	src := storagetest.Open(t)
	history(t, src)
	exported := exportAll(t, src, "", 2)

	t.Run("OKAsExported", func(t *testing.T) {
		dst := storagetest.Open(t)
		// Reversed: the superseding record arrives before the one it
		// retired, so the link must wait for its other end.
		its := items(t, exported)
		slices.Reverse(its)
		res, err := dst.Import(ctx, its, storage.ImportOptions{Client: "admin", AsActive: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := outcomes(res); got[storage.Imported] != len(exported) {
			t.Fatalf("outcomes %v (%v), want %d imported", got, res, len(exported))
		}
		for _, want := range exported {
			got := get(t, dst, want.ID)
			if !reflect.DeepEqual(got, want.Record) {
				t.Errorf("record %s:\ngot  %+v\nwant %+v", want.ID, got, want.Record)
			}
		}
		again := exportAll(t, dst, "", 1000)
		for i := range again {
			if !reflect.DeepEqual(again[i].Evidence, exported[i].Evidence) {
				t.Errorf("evidence of %s: got %+v, want %+v", again[i].ID, again[i].Evidence, exported[i].Evidence)
			}
		}

		before := snapshot(t, dst)
		res, err = dst.Import(ctx, items(t, exported), storage.ImportOptions{Client: "admin", AsActive: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := outcomes(res); got[storage.Unchanged] != len(exported) {
			t.Errorf("second import: %v, want all unchanged", got)
		}
		if after := snapshot(t, dst); after != before {
			t.Errorf("a second import changed the store")
		}
	})

	t.Run("OKAsCandidates", func(t *testing.T) {
		dst := storagetest.Open(t)
		// The line's claimed creation time is not kept: the candidate is
		// made at the import (times are kept to the millisecond).
		before := time.Now().Truncate(time.Millisecond)
		res, err := dst.Import(ctx, items(t, exported), storage.ImportOptions{Client: "codex"})
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range res {
			want := exported[i]
			if want.Status == storage.StatusSuperseded {
				if storage.ErrorCode(r.Err) != storage.Invalid {
					t.Errorf("superseded %s: got %v, want Invalid", want.ID, r.Err)
				}
				continue
			}
			if r.Err != nil {
				t.Fatalf("%s: %v", want.ID, r.Err)
			}
			got := get(t, dst, want.ID)
			if got.Status != storage.StatusCandidate || got.Revision != 1 || got.Writer != "codex" || got.Source != storage.SourceImport ||
				got.Supersedes != "" || got.CreatedAt.Before(before) || got.Title != want.Title {
				t.Errorf("candidate %s = %+v", want.ID, got)
			}
			for _, a := range got.Anchors {
				if a.State != storage.AnchorUnknown || !a.CheckedAt.IsZero() {
					t.Errorf("anchor %+v: want unchecked", a)
				}
			}
			// Stances claimed by the lines are not the importer's to
			// give: none is kept, and confidence does not move.
			if got.ProofCount+got.RefutationCount != 0 || got.EffectiveConfidence != got.Confidence {
				t.Errorf("candidate %s: %d proofs, %d refutations, effective confidence %v of %v; want no evidence and no change",
					want.ID, got.ProofCount, got.RefutationCount, got.EffectiveConfidence, got.Confidence)
			}
		}
	})

	// An import as candidates does not shadow a later import of the same
	// lines as exported (issue 41 item 4): the admin's import replaces the
	// untouched candidates with the records as exported, evidence and all;
	// run again, it changes nothing.
	t.Run("OKAsActiveAfterCandidates", func(t *testing.T) {
		dst := storagetest.Open(t)
		var live []storage.ImportItem
		for _, it := range items(t, exported) {
			if it.Status != storage.StatusSuperseded && it.Supersedes == "" && it.SupersededBy == "" {
				live = append(live, it)
			}
		}
		if _, err := dst.Import(ctx, live, storage.ImportOptions{Client: "codex"}); err != nil {
			t.Fatal(err)
		}
		for pass, want := range []int{len(live), 0} {
			res, err := dst.Import(ctx, live, storage.ImportOptions{Client: "admin", AsActive: true})
			if err != nil {
				t.Fatal(err)
			}
			if got := outcomes(res); got[storage.Imported] != want || got[storage.Unchanged] != len(live)-want {
				t.Fatalf("pass %d: outcomes %v (%v), want %d imported", pass, got, res, want)
			}
		}
		for _, it := range live {
			got := get(t, dst, it.ID)
			if got.Status != it.Status || got.Writer != it.Writer || got.Source != it.Source ||
				got.ProofCount+got.RefutationCount != len(it.Evidence) {
				t.Errorf("%s after the import as exported = %+v, want status %s by %s with %d stances",
					it.ID, got, it.Status, it.Writer, len(it.Evidence))
			}
		}
	})

	t.Run("ErrOtherContent", func(t *testing.T) {
		dst := storagetest.Open(t)
		its := items(t, exported[:2])
		its[1].Supersedes = "" // a lone line, for this case
		if _, err := dst.Import(ctx, its[:1], storage.ImportOptions{Client: "admin", AsActive: true}); err != nil {
			t.Fatal(err)
		}
		changed := its[0]
		changed.Content = text(t, "Someone else's content under the same id.")
		changed.SupersededBy = ""
		res, err := dst.Import(ctx, []storage.ImportItem{changed, its[1]}, storage.ImportOptions{Client: "admin", AsActive: true})
		if err != nil {
			t.Fatal(err)
		}
		var se *storage.Error
		if storage.ErrorCode(res[0].Err) != storage.Exists || !asError(res[0].Err, &se) || se.Field != "id" {
			t.Errorf("same id, other content: got %v, want Exists naming id", res[0].Err)
		}
		if res[1].Err != nil || res[1].Outcome != storage.Imported {
			t.Errorf("the next item: got %+v, want imported", res[1])
		}
	})

	t.Run("ErrLinkToActive", func(t *testing.T) {
		dst := storagetest.Open(t)
		local := storagetest.Store(t, dst, storage.NewRecord{Namespace: "github/acme/api", Title: text(t, "Local and active")})
		it := storage.ImportItem{Namespace: "github/acme/api", Type: storage.TypeNote, Title: text(t, "Claims to retire it"),
			Content: text(t, "c"), Confidence: 0.8, Status: storage.StatusActive, Writer: "codex", Source: storage.SourceStore,
			Supersedes: local.ID}
		res, err := dst.Import(ctx, []storage.ImportItem{it}, storage.ImportOptions{Client: "admin", AsActive: true})
		if err != nil {
			t.Fatal(err)
		}
		var se *storage.Error
		if storage.ErrorCode(res[0].Err) != storage.Invalid || !asError(res[0].Err, &se) || se.Field != "supersedes" {
			t.Errorf("a link retiring an active record: got %v, want Invalid naming supersedes", res[0].Err)
		}
		if got := get(t, dst, local.ID); got.SupersededBy != "" || got.Status != storage.StatusActive {
			t.Errorf("the local record changed: %+v", got)
		}
	})

	t.Run("OKWithoutID", func(t *testing.T) {
		dst := storagetest.Open(t)
		it := storage.ImportItem{Namespace: "global", Type: storage.TypeNote, Title: text(t, "Hand made"),
			Content: text(t, "A line written by hand."), Confidence: 0.7, Status: storage.StatusActive}
		res, err := dst.Import(ctx, []storage.ImportItem{it, it}, storage.ImportOptions{Client: "codex"})
		if err != nil {
			t.Fatal(err)
		}
		if res[0].Outcome != storage.Imported || res[1].Outcome != storage.Unchanged || res[0].ID != res[1].ID {
			t.Errorf("got %+v, want one import and the repeat unchanged", res)
		}
	})
}

func asError(err error, target **storage.Error) bool {
	e, ok := err.(*storage.Error)
	if ok {
		*target = e
	}
	return ok
}
