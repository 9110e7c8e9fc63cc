package workers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/server/encoder"
	"github.com/hearth-memory/hearth/server/models/modeltest"
	"github.com/hearth-memory/hearth/server/retrieval"
	"github.com/hearth-memory/hearth/server/workers"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// BenchmarkEmbedder_Backfill measures a first embedding pass over stored
// records with 1024-d vectors, the encoder a llama-server test server that
// answers at once (records/s: client, JSON and store included).
func BenchmarkEmbedder_Backfill(b *testing.B) {
	const n = 2000
	srv := modeltest.New(b, modeltest.LlamaServer, modeltest.Model{Path: "/models/emb.gguf", Dim: 1024})
	b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
		var total time.Duration
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			db := storagetest.Open(b)
			for j := range n {
				storagetest.Store(b, db, storage.NewRecord{Namespace: "global", Type: storage.TypeDecision,
					Title: storagetest.Text(b, fmt.Sprintf("record %d", j)), Content: storagetest.Text(b, fmt.Sprintf("content of record %d, about as long as a note", j)),
					Confidence: 0.8, Writer: "bench", Source: storage.SourceImport, Status: storage.StatusActive})
			}
			enc, err := encoder.New(encoder.Config{URL: srv.URL, Model: "qwen3-emb-0.6b"})
			if err != nil {
				b.Fatal(err)
			}
			enc.Poll(context.Background())
			emb := workers.NewEmbedder(workers.EmbedderConfig{DB: db, Encoder: enc, Index: retrieval.NewIndex(db)})
			b.StartTimer()
			start := time.Now()
			got, err := emb.Pass(context.Background())
			total += time.Since(start)
			if err != nil || got != n {
				b.Fatalf("pass stored %d, %v; want %d", got, err, n)
			}
		}
		b.ReportMetric(float64(n*b.N)/total.Seconds(), "records/s")
	})
}
