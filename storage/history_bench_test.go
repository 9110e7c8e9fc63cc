package storage_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// benchRecords is how many records the benchmarks prefill their store with:
// HEARTH_BENCH_RECORDS, 10,000 when unset (100,000 is the target size).
func benchRecords(tb testing.TB) int {
	tb.Helper()
	n := 10_000
	if v := os.Getenv("HEARTH_BENCH_RECORDS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			tb.Fatalf("HEARTH_BENCH_RECORDS=%q: want a positive integer", v)
		}
	}
	return n
}

// BenchmarkTimeline lists a page of 100 records over a prefilled store of
// HEARTH_BENCH_RECORDS records (default 10,000), as the record browser
// asks: every namespace, one namespace, by type and status, and a page
// deep in the list (after_id). With HEARTH_BENCH_CACHE the prefilled store
// is kept there (benchDB).
func BenchmarkTimeline(b *testing.B) {
	n := benchRecords(b)
	db := benchDB(b, n)
	deep, err := db.Timeline(ctx, storage.TimelineQuery{Limit: n / 2})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		q    storage.TimelineQuery
	}{
		{"all", storage.TimelineQuery{}},
		{"namespace", storage.TimelineQuery{Namespaces: []string{"github/acme/api"}}},
		{"type+status", storage.TimelineQuery{Types: []string{storage.TypeNote}, Statuses: []string{storage.StatusActive}}},
		{"rare-status", storage.TimelineQuery{Statuses: []string{storage.StatusDeleted}}},
		{"after", storage.TimelineQuery{After: deep[len(deep)-1].ID}},
	} {
		c.q.Limit = 100
		b.Run(fmt.Sprintf("%s/n=%d", c.name, n), func(b *testing.B) {
			start := storagetest.CPUTime()
			for b.Loop() {
				if _, err := db.Timeline(ctx, c.q); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(storagetest.CPUTime()-start)/1e6/float64(b.N), "cpu-ms/op")
		})
	}
}

// BenchmarkHistory reads a record with 200 audit rows and 3 stances, the
// latest 100 rows, in a store of HEARTH_BENCH_RECORDS records.
func BenchmarkHistory(b *testing.B) {
	db := storagetest.Open(b)
	fill(b, db, benchRecords(b))
	r := storagetest.Store(b, db, rec(b, "global", "Often changed", "v"))
	for i := range 196 {
		var err error
		if r, err = db.Update(ctx, r.ID, r.Revision, storage.Changes{Confidence: ptr(0.5 + float64(i%40)/100)}, "codex"); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []string{"codex", "gemini", "aider"} {
		if _, err := db.Evidence(ctx, r.ID, c, storage.StanceCorroborates, text(b, "checked")); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		h, err := db.History(ctx, r.ID, 100)
		if err != nil || len(h.Entries) != 100 || h.Total != 200 {
			b.Fatalf("history: %d of %d rows, %v", len(h.Entries), h.Total, err)
		}
	}
}
