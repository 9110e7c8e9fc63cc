package storage_test

import (
	"testing"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// benchQuestion is a question of the feedback and snippet benchmarks,
// with the 20 hits (the depth of the server's lists) it finds on the
// benchmark store.
type benchQuestion struct {
	name, text string
	hits       []storage.Hit
}

func benchQuestions(b *testing.B) []benchQuestion {
	db := benchDB(b, 10_000)
	qs := []benchQuestion{
		{name: "common", text: "how do we configure the service?"},
		{name: "mixed", text: "which database do we use for billing invoices?"},
	}
	for i, q := range qs {
		hits, err := db.Search(ctx, storage.SearchQuery{Text: q.text, Namespaces: []string{"global", "github/acme/api"}, Limit: 20})
		if err != nil || len(hits) < 20 {
			b.Fatalf("%d hits, %v", len(hits), err)
		}
		qs[i].hits = hits
	}
	return qs
}

// BenchmarkFeedback is what feedback adds to a question's search as the
// server asks it, on the records read for its hits.
func BenchmarkFeedback(b *testing.B) {
	for _, q := range benchQuestions(b) {
		b.Run(q.name, func(b *testing.B) {
			work := make([]storage.Hit, len(q.hits))
			start := storagetest.CPUTime()
			for b.Loop() {
				copy(work, q.hits)
				storage.Feedback(q.text, work)
			}
			b.ReportMetric(float64(storagetest.CPUTime()-start)/1e6/float64(b.N), "cpu-ms/op")
		})
	}
}

// BenchmarkSnippets is the cutting of a question's snippets as a search
// with feedback cuts them: for each of its hits, from the whole content.
func BenchmarkSnippets(b *testing.B) {
	for _, q := range benchQuestions(b) {
		b.Run(q.name, func(b *testing.B) {
			start := storagetest.CPUTime()
			for b.Loop() {
				s := storage.NewSnippets(storage.SearchQuery{Text: q.text})
				for _, h := range q.hits {
					s.Cut(h.Record.Content)
				}
				s.Release()
			}
			b.ReportMetric(float64(storagetest.CPUTime()-start)/1e6/float64(b.N), "cpu-ms/op")
		})
	}
}
