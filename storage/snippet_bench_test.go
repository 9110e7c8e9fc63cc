package storage_test

import (
	"testing"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// BenchmarkSnippets is the cutting of a question's snippets as a search
// with feedback cuts them: for each of its 20 hits, from the whole content.
func BenchmarkSnippets(b *testing.B) {
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
			start := storagetest.CPUTime()
			for b.Loop() {
				s := storage.NewSnippets(storage.SearchQuery{Text: q.text})
				for _, h := range hits {
					s.Cut(h.Record.Content)
				}
				s.Release()
			}
			b.ReportMetric(float64(storagetest.CPUTime()-start)/1e6/float64(b.N), "cpu-ms/op")
		})
	}
}
