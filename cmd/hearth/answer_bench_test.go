package main

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkAnswer measures memory_answer over gRPC on a prefilled store
// whose question has a standing answer: by question id and by text (the
// key lookup along the scope chain). It reports p50 and p95 (target p50
// ≤ 1 ms): one database read, no search, no model.
func BenchmarkAnswer(b *testing.B) {
	for _, n := range benchRecords() {
		td := prefilled(b, n)
		tok := td.tokens["claude-code"]
		const ns = "github/acme/repo1"
		c := newCorpus(uint64(n))
		text := "how do we handle " + c.words[0] + " " + c.words[1] + "?"
		if r := (restTransport{td}).call(b, tok, "memory_question_add", map[string]any{"namespace": ns, "text": text}); !r.ok {
			b.Fatalf("declare: %v", r)
		}
		a := awaitAnswer(b, td, tok, ns, text)
		id := str(restTransport{td}.call(b, tok, "memory_answer", map[string]any{"namespace": ns, "text": text}).body, "question", "id")
		g := grpcTransport{td: td}
		for _, by := range []struct {
			name string
			args map[string]any
		}{
			{"by-id", map[string]any{"question_id": id}},
			{"by-text", map[string]any{"namespace": ns, "text": text}},
		} {
			b.Run(fmt.Sprintf("records=%d/%s", n, by.name), func(b *testing.B) {
				lat := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					start := time.Now()
					r := g.call(b, tok, "memory_answer", by.args)
					lat = append(lat, time.Since(start))
					if !r.ok || str(r.body, "answer", "basis") != a["basis"] {
						b.Fatalf("answer: %v", r)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(percentile(lat, 0.5).Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(percentile(lat, 0.95).Microseconds())/1000, "p95-ms")
			})
		}
		if err := td.db.FlushAsks(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}
