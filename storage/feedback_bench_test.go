package storage_test

import (
	"testing"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// BenchmarkFeedback is what feedback adds to a question's search as the
// server asks it (20 hits, the depth of its lists), on the records read for
// those hits.
func BenchmarkFeedback(b *testing.B) {
	db := benchDB(b, 10_000)
	for _, q := range []struct{ name, text string }{
		{"common", "how do we configure the service?"},
		{"mixed", "which database do we use for billing invoices?"},
	} {
		hits, err := db.Search(ctx, storage.SearchQuery{Text: q.text, Namespaces: []string{"global", "github/acme/api"}, Limit: 20})
		if err != nil || len(hits) < 20 {
			b.Fatalf("%d hits, %v", len(hits), err)
		}
		b.Run(q.name, func(b *testing.B) {
			work := make([]storage.Hit, len(hits))
			start := storagetest.CPUTime()
			for b.Loop() {
				copy(work, hits)
				storage.Feedback(q.text, work)
			}
			b.ReportMetric(float64(storagetest.CPUTime()-start)/1e6/float64(b.N), "cpu-ms/op")
		})
	}
}
