package storage_test

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/screen"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// bootstrapChain is the scope chain the bootstrap tests read.
var bootstrapChain = []string{"github/acme/api", "projects/platform", "global"}

// wantBootstrap lists what Bootstrap must return for chain, computed the
// slow way from every record (Timeline), its usage and its anchors: the
// oracle for the derived tables of migration 0005.
func wantBootstrap(tb testing.TB, db *storage.DB, chain []string) []storage.BootstrapItem {
	tb.Helper()
	recs, err := db.Timeline(ctx, storage.TimelineQuery{Namespaces: chain, Limit: 1 << 30})
	if err != nil {
		tb.Fatal(err)
	}
	typeRank := map[string]int{
		storage.TypeConstraint: 0, storage.TypeRequirement: 1, storage.TypePreference: 2,
		storage.TypeDecision: 3, storage.TypeProcedure: 4,
	}
	type entry struct {
		item           storage.BootstrapItem
		section, scope int
		typeRank, uses int
		confidence     float64
	}
	var all []entry
	for _, r := range recs {
		unavailable := slices.ContainsFunc(r.Anchors, func(a storage.Anchor) bool { return a.State == storage.AnchorUnavailable })
		e := entry{
			item:  storage.BootstrapItem{ID: r.ID, Namespace: r.Namespace, Type: r.Type, Title: r.Title},
			scope: slices.Index(chain, r.Namespace),
		}
		if f := r.Unavailable(); f != nil {
			e.item.Unavailable = *f
		}
		switch {
		case r.Status == storage.StatusCandidate:
			e.section, e.item.Reason = 1, storage.ReasonCandidate
		case r.Status != storage.StatusActive:
			continue
		case storage.IsDurable(r.Type):
			u, err := db.Usage(ctx, r.ID)
			if err != nil {
				tb.Fatal(err)
			}
			e.section, e.item.Reason = 2, storage.ReasonDurable
			e.typeRank, e.confidence, e.uses = typeRank[r.Type], r.EffectiveConfidence, u.Returned+u.Fetched
			if unavailable {
				e.item.Reason = storage.ReasonAnchorUnavailable
			}
		case unavailable:
			e.section, e.item.Reason = 3, storage.ReasonAnchorUnavailable
		default:
			continue
		}
		all = append(all, e)
	}
	slices.SortFunc(all, func(a, b entry) int {
		if c := cmp.Compare(a.section, b.section); c != 0 {
			return c
		}
		if a.section != 2 {
			return cmp.Or(cmp.Compare(a.scope, b.scope), cmp.Compare(b.item.ID, a.item.ID))
		}
		return cmp.Or(
			cmp.Compare(a.typeRank, b.typeRank),
			cmp.Compare(b.confidence, a.confidence),
			cmp.Compare(b.uses, a.uses),
			cmp.Compare(a.scope, b.scope),
			cmp.Compare(b.item.ID, a.item.ID),
		)
	})
	out := make([]storage.BootstrapItem, len(all))
	for i, e := range all {
		out[i] = e.item
	}
	return out
}

// checkBootstrap compares Bootstrap at several limits with the oracle.
func checkBootstrap(tb testing.TB, db *storage.DB, chain []string) {
	tb.Helper()
	want := wantBootstrap(tb, db, chain)
	for _, limit := range []int{1, 3, 10, 1000} {
		got, err := db.Bootstrap(ctx, storage.BootstrapQuery{Namespaces: chain, Limit: limit})
		if err != nil {
			tb.Fatalf("Bootstrap: %v", err)
		}
		if got.Total != len(want) {
			tb.Errorf("limit %d: Total: got %d, want %d", limit, got.Total, len(want))
		}
		w := want[:min(limit, len(want))]
		// The first item listed for an unavailable anchor follows a head
		// without one.
		unavailable := func(it storage.BootstrapItem) bool { return it.Reason == storage.ReasonAnchorUnavailable }
		if i := slices.IndexFunc(want, unavailable); i >= limit && !slices.ContainsFunc(w, unavailable) {
			w = append(slices.Clip(w), want[i])
		}
		if !slices.Equal(got.Items, w) {
			tb.Fatalf("limit %d: items:\ngot  %v\nwant %v", limit, got.Items, w)
		}
	}
}

// setAnchorState sets every anchor of id to state, as an anchor report or
// the sweep would (their own API is another package's).
func setAnchorState(tb testing.TB, db *storage.DB, id, state string) {
	tb.Helper()
	if err := db.ExecRaw(ctx, `UPDATE anchors SET state = ? WHERE record_id = ?`, state, id); err != nil {
		tb.Fatal(err)
	}
}

func TestDB_Bootstrap(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		db := storagetest.Open(t)
		db.Now, _ = steppingClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Second)
		store := func(ns, typ, status, title string, conf float64, anchors ...string) *storage.Record {
			return storagetest.Store(t, db, storage.NewRecord{
				Namespace: ns, Type: typ, Status: status, Title: text(t, title), Confidence: conf,
				Anchors: storagetest.Texts(t, anchors...),
			})
		}
		api, global, other := "github/acme/api", "global", "github/acme/web"
		globalCand := store(global, storage.TypeNote, storage.StatusCandidate, "global candidate", 0.8)
		oldCand := store(api, storage.TypeDecision, storage.StatusCandidate, "old candidate", 0.8)
		newCand := store(api, storage.TypeSummary, storage.StatusCandidate, "new candidate", 0.8)
		decision := store(api, storage.TypeDecision, storage.StatusActive, "decision", 0.9)
		procedure := store(global, storage.TypeProcedure, storage.StatusActive, "procedure", 1)
		prefLow := store(api, storage.TypePreference, storage.StatusActive, "preference low", 0.5)
		prefUsed := store(global, storage.TypePreference, storage.StatusActive, "preference used", 0.8)
		prefNew := store(global, storage.TypePreference, storage.StatusActive, "preference new", 0.8)
		prefAPI := store(api, storage.TypePreference, storage.StatusActive, "preference api", 0.8)
		constraint := store(api, storage.TypeConstraint, storage.StatusActive, "constraint", 0.3, "host:nas")
		requirement := store(global, storage.TypeRequirement, storage.StatusActive, "requirement", 0.8)
		note := store(api, storage.TypeNote, storage.StatusActive, "plain note", 0.8) // not listed
		flaggedNote := store(api, storage.TypeNote, storage.StatusActive, "note on the nas", 0.8, "host:nas")
		store(other, storage.TypeConstraint, storage.StatusActive, "another repository", 1)
		retired := store(api, storage.TypeConstraint, storage.StatusActive, "retired", 1)
		replacement := storagetest.Store(t, db, storage.NewRecord{Namespace: api, Type: storage.TypeNote,
			Title: text(t, "replacement note"), Supersedes: retired.ID})
		gone := store(api, storage.TypeConstraint, storage.StatusActive, "forgotten", 1)
		if _, err := db.Forget(ctx, gone.ID, 0, text(t, "test"), "test"); err != nil {
			t.Fatal(err)
		}
		if err := db.CountReturned(ctx, []string{prefUsed.ID, note.ID}); err != nil {
			t.Fatal(err)
		}
		setAnchorState(t, db, constraint.ID, storage.AnchorUnavailable)
		setAnchorState(t, db, flaggedNote.ID, storage.AnchorUnavailable)
		_ = replacement

		got, err := db.Bootstrap(ctx, storage.BootstrapQuery{Namespaces: []string{api, global}})
		if err != nil {
			t.Fatal(err)
		}
		item := func(r *storage.Record, reason string) storage.BootstrapItem {
			return storage.BootstrapItem{ID: r.ID, Namespace: r.Namespace, Type: r.Type, Title: r.Title, Reason: reason}
		}
		// The two records on the NAS are flagged with it, whatever their
		// section.
		flagged := func(it storage.BootstrapItem) storage.BootstrapItem {
			it.Unavailable = storage.AnchorFlag{Anchor: "host:nas", Count: 1}
			return it
		}
		want := []storage.BootstrapItem{
			item(newCand, storage.ReasonCandidate),
			item(oldCand, storage.ReasonCandidate),
			item(globalCand, storage.ReasonCandidate),
			flagged(item(constraint, storage.ReasonAnchorUnavailable)),
			item(requirement, storage.ReasonDurable),
			item(prefUsed, storage.ReasonDurable), // 0.8 and used once
			item(prefAPI, storage.ReasonDurable),  // 0.8, unused, earlier scope
			item(prefNew, storage.ReasonDurable),  // 0.8, unused, global, newer
			item(prefLow, storage.ReasonDurable),  // 0.5
			item(decision, storage.ReasonDurable),
			item(procedure, storage.ReasonDurable),
			flagged(item(flaggedNote, storage.ReasonAnchorUnavailable)),
		}
		if !slices.Equal(got.Items, want) {
			t.Errorf("items:\ngot  %v\nwant %v", got.Items, want)
		}
		if got.Total != len(want) {
			t.Errorf("Total: got %d, want %d", got.Total, len(want))
		}
		// A head of three candidates is followed by the first record listed
		// for an unavailable anchor.
		head, err := db.Bootstrap(ctx, storage.BootstrapQuery{Namespaces: []string{api, global}, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		if w := append(slices.Clone(want[:3]), want[3]); !slices.Equal(head.Items, w) {
			t.Errorf("limit 3:\ngot  %v\nwant %v", head.Items, w)
		}
		checkBootstrap(t, db, []string{api, global})
	})

	t.Run("Empty", func(t *testing.T) {
		db := storagetest.Open(t)
		got, err := db.Bootstrap(ctx, storage.BootstrapQuery{Namespaces: bootstrapChain})
		if err != nil || got.Total != 0 || len(got.Items) != 0 {
			t.Errorf("got %+v, %v; want nothing", got, err)
		}
		got, err = db.Bootstrap(ctx, storage.BootstrapQuery{})
		if err != nil || got.Total != 0 || len(got.Items) != 0 {
			t.Errorf("no chain: got %+v, %v; want nothing", got, err)
		}
	})

	// Random histories of every kind of write keep the derived tables equal
	// to the oracle: stores, updates, supersessions, forgets, evidence, use,
	// anchor states, renames and purges.
	t.Run("Oracle", func(t *testing.T) {
		for seed := range uint64(4) {
			t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
				db := storagetest.Open(t)
				randomHistory(t, db, rand.New(rand.NewPCG(seed, 99)), 300)
				checkBootstrap(t, db, bootstrapChain)
				checkBootstrap(t, db, []string{"global"})
			})
		}
	})

	// Migration 0005 fills its tables from the records already stored.
	t.Run("Backfill", func(t *testing.T) {
		storagetest.SQLiteOnly(t, "a SQLite migration applied to an older file")
		path := filepath.Join(t.TempDir(), "hearth.db")
		db, err := storage.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		randomHistory(t, db, rand.New(rand.NewPCG(7, 7)), 150)
		before, err := db.Bootstrap(ctx, storage.BootstrapQuery{Namespaces: bootstrapChain, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		// Undo the migration: its triggers, view and tables, and its row.
		for _, q := range []string{
			`DROP TRIGGER bootstrap_records_insert`, `DROP TRIGGER bootstrap_records_update`,
			`DROP TRIGGER bootstrap_records_delete`, `DROP TRIGGER bootstrap_anchors_insert`,
			`DROP TRIGGER bootstrap_anchors_update`, `DROP TRIGGER bootstrap_anchors_delete`,
			`DROP TRIGGER bootstrap_usage_insert`, `DROP TRIGGER bootstrap_usage_update`,
			`DROP TRIGGER bootstrap_usage_delete`, `DROP VIEW bootstrap_entries`,
			`DROP TABLE bootstrap_rank`, `DROP TABLE bootstrap_counts`,
			`DELETE FROM migrations WHERE name = '0005_bootstrap.sql'`,
		} {
			if err := db.ExecRaw(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		db = storagetest.OpenPath(t, path)
		after, err := db.Bootstrap(ctx, storage.BootstrapQuery{Namespaces: bootstrapChain, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if before.Total == 0 || after.Total != before.Total || !slices.Equal(after.Items, before.Items) {
			t.Errorf("after the backfill:\ngot  %d %v\nwant %d %v", after.Total, after.Items, before.Total, before.Items)
		}
		checkBootstrap(t, db, bootstrapChain)
	})
}

// randomHistory applies n random writes of every kind to db.
func randomHistory(tb testing.TB, db *storage.DB, r *rand.Rand, n int) {
	tb.Helper()
	namespaces := append(slices.Clone(bootstrapChain), "github/acme/web")
	clients := []string{"claude-code", "codex", "aider"}
	var ids []string
	pick := func() string { return ids[r.IntN(len(ids))] }
	for i := range n {
		op := r.IntN(12)
		if len(ids) < 5 {
			op = 0
		}
		switch op {
		case 0, 1, 2: // store, now and then superseding
			nr := storage.NewRecord{
				Namespace: namespaces[r.IntN(len(namespaces))], Type: storage.Types[r.IntN(len(storage.Types))],
				Title: text(tb, fmt.Sprintf("record %d", i)), Content: text(tb, "content"),
				Confidence: []float64{0.8, 0.8, 0.5, 1}[r.IntN(4)], Status: storage.StatusActive,
			}
			if r.IntN(3) == 0 {
				nr.Status = storage.StatusCandidate
			}
			for range r.IntN(3) {
				nr.Anchors = append(nr.Anchors, text(tb, fmt.Sprintf("host:h%d", r.IntN(4))))
			}
			if r.IntN(6) == 0 && nr.Status == storage.StatusActive {
				nr.Supersedes = pick()
			}
			nr.Writer = clients[r.IntN(len(clients))]
			if nr.Source = storage.SourceStore; nr.Supersedes != "" {
				// A refused supersession stores nothing; so be it.
				if rec, err := db.Store(ctx, nr); err == nil {
					ids = append(ids, rec.ID)
				}
				continue
			}
			ids = append(ids, storagetest.Store(tb, db, nr).ID)
		case 3: // status, type or confidence
			found, err := db.Get(ctx, []string{pick()})
			if err != nil {
				tb.Fatal(err)
			}
			if len(found) == 0 {
				continue // purged
			}
			cur := found[0]
			var ch storage.Changes
			switch r.IntN(3) {
			case 0:
				ch.Status = ptr([]string{storage.StatusActive, storage.StatusCandidate}[r.IntN(2)])
			case 1:
				ch.Type = ptr(storage.Types[r.IntN(len(storage.Types))])
			default:
				ch.Confidence = ptr([]float64{0.3, 0.8, 0.95}[r.IntN(3)])
			}
			_, _ = db.Update(ctx, cur.ID, cur.Revision, ch, "test") // superseded or deleted: refused
		case 4:
			_, _ = db.Forget(ctx, pick(), 0, text(tb, "gone"), "test")
		case 5:
			_, _ = db.Evidence(ctx, pick(), clients[r.IntN(len(clients))],
				[]string{storage.StanceCorroborates, storage.StanceContradicts}[r.IntN(2)], screen.Text{})
		case 6, 7:
			count := db.CountReturned
			if r.IntN(2) == 0 {
				count = db.CountFetched
			}
			if err := count(ctx, []string{pick(), pick()}); err != nil {
				tb.Fatal(err)
			}
		case 8, 9: // an anchor report or sweep, on one anchor
			state := []string{storage.AnchorAvailable, storage.AnchorUnavailable, storage.AnchorUnavailable, storage.AnchorUnknown}[r.IntN(4)]
			if err := db.ExecRaw(ctx, `UPDATE anchors SET state = ? WHERE record_id = ? AND anchor = ?`,
				state, pick(), fmt.Sprintf("host:h%d", r.IntN(4))); err != nil {
				tb.Fatal(err)
			}
		case 10: // a rename moves one record
			if err := db.ExecRaw(ctx, `UPDATE records SET namespace = ? WHERE id = ?`,
				namespaces[r.IntN(len(namespaces))], pick()); err != nil {
				tb.Fatal(err)
			}
		case 11: // purge forgotten records, delete any record, or drop usage rows
			q := `DELETE FROM records WHERE status = 'deleted'`
			switch r.IntN(3) {
			case 0:
				q = `DELETE FROM usage WHERE record_id = '` + pick() + `'`
			case 1:
				q = `DELETE FROM records WHERE id = '` + pick() + `'`
			}
			if err := db.ExecRaw(ctx, q); err != nil {
				tb.Fatal(err)
			}
		}
	}
}

// BenchmarkBootstrap reads the packet of a two-namespace chain over a store
// of HEARTH_BENCH_RECORDS records (default 10,000; 100,000 is the target).
func BenchmarkBootstrap(b *testing.B) {
	n := benchRecords(b)
	db := storagetest.Open(b)
	fill(b, db, n)
	b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
		for b.Loop() {
			if _, err := db.Bootstrap(ctx, storage.BootstrapQuery{Namespaces: []string{"github/acme/api", "global"}, Limit: 32}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
