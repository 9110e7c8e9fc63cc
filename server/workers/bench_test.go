package workers_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/server/models"
	"github.com/hearth-memory/hearth/server/models/modeltest"
	"github.com/hearth-memory/hearth/server/models/wire"
	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/server/workers"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// timedTransport adds up the time requests spend on the wire and in the
// model server: from sending a request to its answer's last byte.
type timedTransport struct {
	rt   http.RoundTripper
	wire atomic.Int64
}

func (t *timedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := t.rt.RoundTrip(r)
	if err != nil {
		t.wire.Add(int64(time.Since(start)))
		return nil, err
	}
	resp.Body = &timedBody{ReadCloser: resp.Body, t: t, start: start}
	return resp, nil
}

type timedBody struct {
	io.ReadCloser
	t     *timedTransport
	start time.Time
	done  bool
}

func (b *timedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !b.done {
		b.done = true
		b.t.wire.Add(int64(time.Since(b.start)))
	}
	return n, err
}

// benchSetup is newModelSetup for benchmarks: a store, a router over the
// servers through a timed transport, and prepared workers.
func benchSetup(b *testing.B, urls ...string) (*storage.DB, *workers.Workers, *timedTransport) {
	b.Helper()
	db := storagetest.OpenPath(b, filepath.Join(b.TempDir(), "hearth.db"))
	tt := &timedTransport{rt: wire.NewTransport()}
	cfg := models.Config{URL: urls[0], Model: "m1", Transport: tt}
	if len(urls) > 1 {
		cfg.FallbackURL = urls[1]
	}
	r, err := models.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	w, err := workers.New(workers.Config{DB: db, Options: options.Default(), Location: time.UTC,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Models: r, Check: candidateCheck(b, db)})
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Prepare(ctx); err != nil {
		b.Fatal(err)
	}
	return db, w, tt
}

// BenchmarkExtract_Job measures one extraction job's cycle — lease, the
// model call, checks and screen of two memories, their candidates stored
// with the completion — against a test Ollama server that answers at once.
// own-ms/job leaves out the time on the wire and in the test server.
func BenchmarkExtract_Job(b *testing.B) {
	srv := modeltest.New(b, modeltest.Ollama, modeltest.Model{Name: "m1"})
	srv.Script(modeltest.Rule{Path: "/api/chat", Action: modeltest.Action{Content: memoriesReply(
		mem("decision", "Use WAL", "SQLite runs in WAL mode so that readers never block the writer.", 0.9),
		mem("procedure", "Run the eval", "make eval runs the retrieval eval and compares it with the last run.", 0.7),
	)}})
	db, w, tt := benchSetup(b, srv.URL)
	payload := closePayload(b, "Set up storage and the job queue.", "We chose WAL mode. make eval runs the retrieval eval.")
	b.ReportAllocs()
	var total time.Duration
	for b.Loop() {
		b.StopTimer()
		if _, _, err := db.EnqueueJob(ctx, storage.NewJob{Kind: storage.KindExtraction, Payload: payload}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		ran, err := w.RunOnce(ctx)
		total += time.Since(start)
		if err != nil || !ran {
			b.Fatalf("RunOnce: %v %v", ran, err)
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(total.Microseconds())/1000/n, "ms/job")
	b.ReportMetric(float64((total-time.Duration(tt.wire.Load())).Microseconds())/1000/n, "own-ms/job")
}

// BenchmarkReview_Throughput measures the nightly review over 200
// candidates, each shown with its nearest records among 400 active ones,
// against two test servers that answer keep at once.
func BenchmarkReview_Throughput(b *testing.B) {
	var urls []string
	for range 2 {
		srv := modeltest.New(b, modeltest.Ollama, modeltest.Model{Name: "m1"})
		srv.Script(modeltest.Rule{Path: "/api/chat", Action: modeltest.Action{Content: verdictJSON("keep", "", "new knowledge")}})
		urls = append(urls, srv.URL)
	}
	db, w, _ := benchSetup(b, urls...)
	const cands = 200
	topics := []string{"cache", "queue", "retry", "schema", "index", "backup", "token", "probe"}
	for i := range 400 {
		t := topics[i%len(topics)]
		storeBench(b, db, fmt.Sprintf("The %s rule %d", t, i), fmt.Sprintf("The %s works this way in service %d, version 1.%d.", t, i, i%7), storage.StatusActive, storage.SourceStore)
	}
	for i := range cands {
		t := topics[i%len(topics)]
		storeBench(b, db, fmt.Sprintf("A %s candidate %d", t, i), fmt.Sprintf("The %s changed in service %d.", t, i), storage.StatusCandidate, storage.SourceExtraction)
	}
	b.ReportAllocs()
	var total time.Duration
	for b.Loop() {
		b.StopTimer()
		if _, _, err := db.EnqueueJob(ctx, storage.NewJob{Kind: storage.KindReview}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		if ran, err := w.RunOnce(ctx); err != nil || !ran {
			b.Fatalf("RunOnce: %v %v", ran, err)
		}
		total += time.Since(start)
	}
	b.ReportMetric(float64(cands*b.N)/total.Seconds(), "candidates/s")
}

func storeBench(b *testing.B, db *storage.DB, title, content, status, source string) {
	b.Helper()
	storagetest.Store(b, db, storage.NewRecord{Namespace: "github/acme/api", Type: storage.TypeDecision,
		Title: storagetest.Text(b, title), Content: storagetest.Text(b, content), Status: status, Source: source})
}
