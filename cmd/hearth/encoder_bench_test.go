package main

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/server/encoder"
	"github.com/hearth-memory/hearth/server/models/modeltest"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
	"github.com/hearth-memory/hearth/storage/testwait"
)

// benchDim is Qwen3-Embedding-0.6B's dimension.
const benchDim = 1024

// BenchmarkSearchFused measures memory_search over gRPC with fusion (R-K3)
// on a store of n records, each with a current 1024-d vector, the encoder a
// llama-server test server that answers at once: p50 and p95 (targets p50
// ≤ 10 ms at 10k, ≤ 50 ms at 100k). scope=repo searches one repository's
// chain (the records spread over 50 repositories, as BenchmarkSearch);
// scope=hub searches from a hub, whose reach is every record.
func BenchmarkSearchFused(b *testing.B) {
	srv := modeltest.New(b, modeltest.LlamaServer, modeltest.Model{Path: "/models/emb.gguf", Dim: benchDim})
	for _, n := range benchRecords() {
		dir, err := os.MkdirTemp("", "hearth-bench-fused-")
		if err != nil {
			b.Fatal(err)
		}
		opts := testOptions()
		opts.EmbedURL, opts.EmbedModel = srv.URL, "qwen3-emb-0.6b"
		opts.Hubs = []string{"projects/hub"}
		td := openDaemon(b, &Daemon{Config: Config{DataDir: dir, Options: opts}}, false)
		fill(b, td.db, n, newCorpus(uint64(n)))
		putVectors(b, td.db, "qwen3-emb-0.6b", "emb.gguf")
		tok := td.tokens["claude-code"]
		g := grpcTransport{td: td}
		testwait.WaitFor(b, "current vectors", func() bool {
			st := encoderStatus(b, g, tok)
			return encNum(st["vectors_current"]) == n
		})
		qs := queries(newCorpus(uint64(n)), 200)
		for _, scope := range []string{"repo", "hub"} {
			b.Run(fmt.Sprintf("records=%d/scope=%s", n, scope), func(b *testing.B) {
				lat := make([]time.Duration, 0, b.N)
				fused := 0
				b.ResetTimer()
				cpu := storagetest.CPUTime()
				for i := 0; i < b.N; i++ {
					ns := fmt.Sprintf("github/acme/repo%d", i%50)
					if scope == "hub" {
						ns = "projects/hub"
					}
					start := time.Now()
					r := g.call(b, tok, "memory_search", map[string]any{"namespace": ns, "query": qs[i%len(qs)]})
					lat = append(lat, time.Since(start))
					if !r.ok {
						b.Fatalf("search: %v", r)
					}
					if r.body["ranking"] == "rrf" {
						fused++
					}
				}
				b.StopTimer()
				// The process's CPU time per search (the scan runs on
				// every processor): it moves less with this machine's
				// speed than the latencies.
				b.ReportMetric(float64(storagetest.CPUTime()-cpu)/1e6/float64(b.N), "cpu-ms/op")
				if fused != b.N {
					b.Fatalf("%d of %d searches fused", fused, b.N)
				}
				b.ReportMetric(float64(percentile(lat, 0.5).Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(percentile(lat, 0.95).Microseconds())/1000, "p95-ms")
			})
		}
		td.conn.Close()
		td.Close(context.Background())
		os.RemoveAll(dir)
	}
}

// putVectors stores, for every live record, the vector the test server
// gives its text, keyed as the embedder would key it (the backfill itself is
// measured by BenchmarkEmbedder_Backfill).
func putVectors(b *testing.B, db *storage.DB, model, snapshot string) {
	b.Helper()
	ctx := context.Background()
	var all []storage.Embedding
	_, err := db.VectorChanges(ctx, 0, false, func(c storage.VectorChange) error {
		if c.Gone || c.Status == storage.StatusDeleted {
			return nil
		}
		text := encoder.RecordText(c.Title, c.Content)
		all = append(all, storage.Embedding{RecordID: c.ID, Digest: encoder.Digest(model, snapshot, text),
			Model: model, Snapshot: snapshot, Vector: modeltest.Vector(text, benchDim)})
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < len(all); i += 1000 {
		if _, err := db.PutEmbeddings(ctx, all[i:min(i+1000, len(all))]); err != nil {
			b.Fatal(err)
		}
	}
}
