package storage_test

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/screen"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// timelineStore fills a store with records of every namespace, type and
// status, three to an instant (so the cursor goes on by id), and returns
// it with every record as stored.
//
// The store is filled once per test binary (the tests that use it only
// read it): each caller opens its own copy of the file. On PostgreSQL each
// caller fills a database of its own.
func timelineStore(t *testing.T) (*storage.DB, []*storage.Record, []string) {
	t.Helper()
	if storagetest.Postgres() {
		db := storagetest.Open(t)
		all, namespaces := fillTimelineDB(t, db)
		return db, all, namespaces
	}
	timeline.once.Do(func() { timeline.fixture = fillTimeline(t) })
	f := timeline.fixture
	if f == nil {
		t.Fatal("the shared timeline store was not built: the test that built it says why")
	}
	path := filepath.Join(t.TempDir(), "hearth.db")
	if err := os.WriteFile(path, f.file, 0o600); err != nil {
		t.Fatal(err)
	}
	return storagetest.OpenPath(t, path), f.all, slices.Clone(f.namespaces)
}

// timeline holds the store timelineStore fills, made once.
var timeline struct {
	once    sync.Once
	fixture *timelineFixture
}

// timelineFixture is a filled store's file, closed (its log folded in),
// with every record as stored and the namespaces used.
type timelineFixture struct {
	file       []byte
	all        []*storage.Record
	namespaces []string
}

// fillTimeline fills a store in a directory of its own (it outlives tb)
// as timelineStore describes, closes it and returns its file.
func fillTimeline(tb testing.TB) *timelineFixture {
	dir, err := os.MkdirTemp("", "hearth-timeline-")
	if err != nil {
		tb.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "hearth.db")
	db, err := storage.Open(ctx, path)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	all, namespaces := fillTimelineDB(tb, db)
	if err := db.Close(); err != nil {
		tb.Fatal(err)
	}
	file, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return &timelineFixture{file: file, all: all, namespaces: namespaces}
}

// fillTimelineDB fills db as timelineStore describes and returns every
// record as stored and the namespaces used.
func fillTimelineDB(tb testing.TB, db *storage.DB) ([]*storage.Record, []string) {
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	clk := newClock(db, t0)
	namespaces := []string{"global", "projects/x", "topics/go"}
	for i := range 6 {
		namespaces = append(namespaces, fmt.Sprintf("github/acme/repo%d", i))
	}
	rng := rand.New(rand.NewPCG(7, 11))
	var ids []string
	active := map[string][]string{} // by namespace, the active records that can be superseded
	for i := range 240 {
		if i > 0 && i%3 == 0 {
			clk.Add(time.Minute)
		}
		ns := namespaces[rng.IntN(len(namespaces))]
		nr := rec(tb, ns, fmt.Sprintf("r%d", i), "c")
		nr.Type = storage.Types[rng.IntN(len(storage.Types))]
		if rng.IntN(4) == 0 {
			nr.Status = storage.StatusCandidate
		} else if old := active[ns]; len(old) > 0 && rng.IntN(5) == 0 {
			j := rng.IntN(len(old))
			nr.Supersedes = old[j]
			active[ns] = slices.Delete(old, j, j+1)
		}
		id := storagetest.Store(tb, db, nr).ID
		ids = append(ids, id)
		if nr.Status == storage.StatusActive {
			active[ns] = append(active[ns], id)
		}
	}
	for _, i := range rng.Perm(len(ids))[:40] {
		if _, err := db.Forget(ctx, ids[i], 0, text(tb, "gone"), "test"); err != nil {
			tb.Fatal(err)
		}
	}
	all, err := db.Get(ctx, ids)
	if err != nil || len(all) != len(ids) {
		tb.Fatalf("Get: %d of %d records, %v", len(all), len(ids), err)
	}
	seen := map[string]bool{}
	for _, r := range all {
		seen[r.Status] = true
	}
	if len(seen) != 4 {
		tb.Fatalf("statuses %v, want all four", seen)
	}
	return all, namespaces
}

// wantTimeline is the timeline of q over all, worked out record by record.
func wantTimeline(all []*storage.Record, q storage.TimelineQuery) []string {
	statuses := q.Statuses
	if len(statuses) == 0 {
		statuses = []string{storage.StatusActive, storage.StatusCandidate, storage.StatusSuperseded}
	}
	byTime := func(a, b *storage.Record) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), strings.Compare(b.ID, a.ID))
	}
	var after *storage.Record
	for _, r := range all {
		if r.ID == q.After {
			after = r
		}
	}
	var out []*storage.Record
	for _, r := range all {
		if (len(q.Namespaces) > 0 && !slices.Contains(q.Namespaces, r.Namespace)) ||
			(len(q.Types) > 0 && !slices.Contains(q.Types, r.Type)) ||
			!slices.Contains(statuses, r.Status) ||
			(!q.Since.IsZero() && r.CreatedAt.UnixMilli() < q.Since.UnixMilli()) ||
			(!q.Until.IsZero() && r.CreatedAt.UnixMilli() >= q.Until.UnixMilli()) ||
			(after != nil && byTime(r, after) <= 0) {
			continue
		}
		out = append(out, r)
	}
	slices.SortFunc(out, byTime)
	limit := q.Limit
	if limit <= 0 {
		limit = storage.DefaultTimelineLimit
	}
	var ids []string
	for _, r := range out[:min(limit, len(out))] {
		ids = append(ids, r.ID)
	}
	return ids
}

func timelineIDs(t *testing.T, db *storage.DB, q storage.TimelineQuery) []string {
	t.Helper()
	recs, err := db.Timeline(ctx, q)
	if err != nil {
		t.Fatalf("Timeline(%+v): %v", q, err)
	}
	var ids []string
	for _, r := range recs {
		ids = append(ids, r.ID)
	}
	return ids
}

// pick returns up to n entries of from, repeats and order as chance has it.
func pick(rng *rand.Rand, from []string, n int) []string {
	var out []string
	for range rng.IntN(n + 1) {
		out = append(out, from[rng.IntN(len(from))])
	}
	return out
}

// TestDB_TimelineMatchesEveryFilter holds the timeline to the same
// timeline worked out record by record, for random combinations of every
// filter: namespaces (few, so each namespace and status is walked, or more
// than MaxTimelineWalks allows, so each status is), types, statuses, time
// range, cursor and limit, with repeats, an unknown namespace and an empty
// one.
func TestDB_TimelineMatchesEveryFilter(t *testing.T) {
	t.Parallel()
	db, all, namespaces := timelineStore(t)
	namespaces = append(namespaces, "github/acme/none", "")
	statuses := []string{storage.StatusActive, storage.StatusCandidate, storage.StatusSuperseded, storage.StatusDeleted}
	first, last := all[0].CreatedAt, all[len(all)-1].CreatedAt
	rng := rand.New(rand.NewPCG(3, 5))
	walkedEachStatus := 0
	for i := range 600 {
		q := storage.TimelineQuery{
			Namespaces: pick(rng, namespaces, 1+rng.IntN(10)),
			Types:      pick(rng, storage.Types, 3),
			Statuses:   pick(rng, statuses, 2+rng.IntN(3)),
			Limit:      rng.IntN(60),
		}
		if rng.IntN(3) == 0 {
			q.Since = first.Add(time.Duration(rng.Int64N(int64(last.Sub(first)))))
		}
		if rng.IntN(3) == 0 {
			q.Until = first.Add(time.Duration(rng.Int64N(int64(last.Sub(first) + time.Minute))))
		}
		if rng.IntN(3) == 0 {
			q.After = all[rng.IntN(len(all))].ID
		}
		n := max(1, len(q.Statuses))
		if len(q.Statuses) == 0 {
			n = 3
		}
		if len(q.Namespaces)*n > storage.MaxTimelineWalks {
			walkedEachStatus++
		}
		if got, want := timelineIDs(t, db, q), wantTimeline(all, q); !slices.Equal(got, want) {
			t.Fatalf("query %d %+v:\ngot  %v\nwant %v", i, q, got, want)
		}
	}
	if walkedEachStatus < 30 {
		t.Errorf("only %d queries named more namespaces than are walked one by one", walkedEachStatus)
	}
}

// TestDB_TimelinePages: following after_id page by page lists the whole
// timeline once, in order, for filters that walk each namespace and status
// and for those that walk each status.
func TestDB_TimelinePages(t *testing.T) {
	t.Parallel()
	db, all, namespaces := timelineStore(t)
	for _, q := range []storage.TimelineQuery{
		{},
		{Statuses: []string{storage.StatusDeleted, storage.StatusCandidate}},
		{Namespaces: namespaces[:2]},
		{Namespaces: namespaces, Types: []string{storage.TypeNote, storage.TypeDecision}},
	} {
		q.Limit = 1000
		want := wantTimeline(all, q)
		if len(want) < 20 {
			t.Fatalf("%+v: %d records, too few to page", q, len(want))
		}
		var got []string
		q.Limit = 7
		for range len(want) {
			page := timelineIDs(t, db, q)
			if len(page) == 0 {
				break
			}
			got = append(got, page...)
			q.After = page[len(page)-1]
		}
		if !slices.Equal(got, want) {
			t.Errorf("%+v: paged\n%v\nwant\n%v", q, got, want)
		}
	}
}

// TestDB_TimelinePage: a page read a few records at a time holds the
// records Timeline returns, in order, and fn's error comes back.
func TestDB_TimelinePage(t *testing.T) {
	t.Parallel()
	db, _, namespaces := timelineStore(t)
	for _, q := range []storage.TimelineQuery{
		{},
		{Limit: 50, Statuses: []string{storage.StatusDeleted, storage.StatusSuperseded}},
		{Limit: 37, Namespaces: namespaces[:3], Types: storage.Types[:4]},
		{Namespaces: []string{"github/acme/none"}},
	} {
		want, err := db.Timeline(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		got, n := pageRecords(t, db, q, 3)
		if n != len(want) {
			t.Errorf("%+v: page of %d, Timeline %d", q, n, len(want))
		}
		if !slices.EqualFunc(got, want, func(a, b *storage.Record) bool {
			return a.ID == b.ID && a.Revision == b.Revision && slices.Equal(a.Anchors, b.Anchors)
		}) {
			t.Errorf("%+v: read in threes %d records, Timeline %d, not the same", q, len(got), len(want))
		}
	}
	gone := errors.New("gone")
	if err := db.TimelinePage(ctx, storage.TimelineQuery{}, func(*storage.Page) error { return gone }); err != gone {
		t.Errorf("fn's error: got %v", err)
	}
}

// TestDB_TimelinePlan: every filter combination walks the timeline indexes
// of migration 0072 in their order and sorts nothing. A plan that sorts
// every match (a filter of a few records among many took tens of
// milliseconds at 100,000 records) fails here.
func TestDB_TimelinePlan(t *testing.T) {
	storagetest.SQLiteOnly(t, "SQLite's query plans (EXPLAIN QUERY PLAN)")
	t.Parallel()
	db := storagetest.Open(t)
	many := []string{"a", "b", "c", "d", "e", "f"}
	for _, q := range []storage.TimelineQuery{
		{},
		{Namespaces: []string{"global"}},
		{Namespaces: []string{"github/acme/api", "global"}, Types: []string{storage.TypeNote}},
		{Namespaces: many},
		{Namespaces: many, Types: []string{storage.TypeNote}, Statuses: []string{storage.StatusActive}},
		{Types: []string{storage.TypeNote}, Statuses: []string{storage.StatusActive}},
		{Statuses: []string{storage.StatusDeleted}},
		{Types: []string{storage.TypeNote, storage.TypeDecision}},
		{Since: time.Unix(1, 0), Until: time.Unix(2, 0), After: "x"},
		{Namespaces: []string{"global"}, Statuses: []string{storage.StatusCandidate}, After: "x"},
	} {
		plan, err := db.TimelinePlan(ctx, q)
		if err != nil {
			t.Fatalf("%+v: %v", q, err)
		}
		sorts, walks := 0, 0
		for _, d := range plan {
			switch {
			case strings.Contains(d, "TEMP B-TREE"):
				sorts++
			case strings.HasPrefix(d, "SEARCH t ") || strings.HasPrefix(d, "SCAN t "):
				walks++
				if !strings.Contains(d, "COVERING INDEX records_status_timeline_idx (status=?") &&
					!strings.Contains(d, "COVERING INDEX records_namespace_status_timeline_idx (namespace=? AND status=?") {
					t.Errorf("%+v: %q, want a walk of a timeline index", q, d)
				}
			}
		}
		if sorts != 0 || walks == 0 {
			t.Errorf("%+v: %d sorts and %d walks, want no sort and a walk:\n%s", q, sorts, walks, strings.Join(plan, "\n"))
		}
	}
}

// TestPage_RecordsAsGet: a page's records, read in batches of any size, are
// the records Get returns for the same ids, field for field, anchors (in
// their order, on the right record) included. Some records have several
// anchors, some one, most none: a page reads anchors only for records
// that have any, and puts rows in the page's order itself.
func TestPage_RecordsAsGet(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	db.Now = func() time.Time { return now }
	for i := range 30 {
		now = t0.Add(time.Duration(i/2) * time.Minute) // two to an instant: ties go by id
		nr := rec(t, "global", fmt.Sprintf("r%d", i), "c")
		if i%5 == 0 {
			// Topics on some records only: one record's must not stay
			// for the next read in the same batch.
			nr.Topics = []screen.Text{text(t, fmt.Sprintf("topic-%d", i))}
		}
		for a := range i % 4 {
			if i%3 != 0 {
				nr.Anchors = append(nr.Anchors, text(t, fmt.Sprintf("host:h%d-%d", i, 3-a)))
			}
		}
		storagetest.Store(t, db, nr)
	}
	for _, batch := range []int{1, 4, 7, 30} {
		var ids []string
		got, _ := pageRecords(t, db, storage.TimelineQuery{Limit: 30}, batch)
		for _, r := range got {
			ids = append(ids, r.ID)
		}
		want, err := db.Get(ctx, ids)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 30 || !reflect.DeepEqual(got, want) {
			t.Errorf("batches of %d: got %d records, not those Get returns", batch, len(got))
		}
		anchored := 0
		for i, r := range got {
			if len(r.Anchors) > 0 {
				anchored++
			}
			var n int
			fmt.Sscanf(r.Title, "r%d", &n)
			var topics []string
			if n%5 == 0 {
				topics = []string{fmt.Sprintf("topic-%d", n)}
			}
			if !slices.Equal(r.Topics, topics) {
				t.Errorf("batches of %d: %s has topics %q, want %q", batch, r.Title, r.Topics, topics)
			}
			if i > 0 && cmp.Or(r.CreatedAt.Compare(got[i-1].CreatedAt), strings.Compare(r.ID, got[i-1].ID)) >= 0 {
				t.Errorf("batches of %d: record %d is not older than the one before", batch, i)
			}
		}
		if anchored < 10 {
			t.Errorf("batches of %d: %d records with anchors, want some", batch, anchored)
		}
	}
}

// pageRecords reads the timeline page of q batch records at a time, as
// memory_timeline does, and returns them with the page's length.
func pageRecords(t *testing.T, db *storage.DB, q storage.TimelineQuery, batch int) (got []*storage.Record, n int) {
	t.Helper()
	err := db.TimelinePage(ctx, q, func(p *storage.Page) error {
		n = p.Len()
		for i := 0; i < p.Len(); i += batch {
			recs, err := p.Records(i, min(i+batch, p.Len()))
			if err != nil {
				return err
			}
			got = append(got, recs...)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got, n
}
