package retrieval

// Benchmarks that chose the cosine scan (run with `make bench`; the 100k
// set with HEARTH_BENCH_RECORDS=100000). Every record is in scope, the
// worst case: a search's scope chain usually holds a fraction of the store.

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ncruces/go-sqlite3/driver"

	"github.com/hearth-memory/hearth/server/encoder"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/screen"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

const benchDim = 1024

func benchSizes() []int {
	if n, err := strconv.Atoi(os.Getenv("HEARTH_BENCH_RECORDS")); err == nil && n > 10000 {
		return []int{10000, n}
	}
	return []int{10000}
}

func unit(rng *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	var s float64
	for i := range v {
		v[i] = float32(rng.NormFloat64())
		s += float64(v[i]) * float64(v[i])
	}
	for i := range v {
		v[i] = float32(float64(v[i]) / math.Sqrt(s))
	}
	return v
}

// benchStore is a store of n records in one namespace, each with a
// current random unit vector, and its path: a file, or under
// HEARTH_STORAGE_BACKEND=postgres a PostgreSQL database's URL
// (storagetest.Place).
type benchStore struct {
	db   *storage.DB
	path string
	vecs [][]float32
}

func newBenchStore(b *testing.B, n int) *benchStore {
	b.Helper()
	path := storagetest.Place(b)
	db := storagetest.OpenPath(b, path)
	_, vecs := storeVectors(b, db, n, benchDim, rand.New(rand.NewPCG(uint64(n), 7)))
	return &benchStore{db: db, path: path, vecs: vecs}
}

// storeVectors stores n records in namespace global, each with a current
// random unit vector of dim under model "m" and snapshot "s", and returns
// their ids and vectors. It imports them a thousand at a time.
func storeVectors(tb testing.TB, db *storage.DB, n, dim int, rng *rand.Rand) ([]string, [][]float32) {
	tb.Helper()
	ctx := context.Background()
	title, _ := screen.Check("title", "a record")
	var ids []string
	var vecs [][]float32
	for start := 0; start < n; start += 1000 {
		var items []storage.ImportItem
		for i := start; i < min(n, start+1000); i++ {
			content, _ := screen.Check("content", fmt.Sprintf("with some content, number %d", i))
			items = append(items, storage.ImportItem{Namespace: "global", Type: storage.TypeDecision, Title: title,
				Content: content, Confidence: 0.8, Status: storage.StatusActive, Writer: "bench", Source: storage.SourceImport})
		}
		res, err := db.Import(ctx, items, storage.ImportOptions{Client: "bench", AsActive: true})
		if err != nil {
			tb.Fatal(err)
		}
		var batch []storage.Embedding
		for i, r := range res {
			if r.Err != nil || r.ID == "" {
				tb.Fatalf("import: %+v", r)
			}
			v := unit(rng, dim)
			ids, vecs = append(ids, r.ID), append(vecs, v)
			batch = append(batch, storage.Embedding{RecordID: r.ID, Model: "m", Snapshot: "s", Vector: v,
				Digest: encoder.Digest("m", "s", encoder.RecordText(items[i].Title.String(), items[i].Content.String()))})
		}
		if _, err := db.PutEmbeddings(ctx, batch); err != nil {
			tb.Fatal(err)
		}
	}
	return ids, vecs
}

// topK returns the k best of scores (index, score), best first.
func topK(scores []float64, k int) []int {
	idx := make([]int, len(scores))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		switch {
		case scores[a] > scores[b]:
			return -1
		case scores[a] < scores[b]:
			return 1
		}
		return a - b
	})
	return idx[:min(k, len(idx))]
}

// BenchmarkScan compares three ways to find the 20 records most similar to
// a query among n with 1024-d vectors: reading every vector from SQLite
// per search; a float32 copy in memory; and the coded copy of Index with the
// candidates read back from SQLite for exact scores (what Cosine does).
// heap-MB is the Go heap the copy holds.
func BenchmarkScan(b *testing.B) {
	ctx := context.Background()
	for _, n := range benchSizes() {
		s := newBenchStore(b, n)
		rng := rand.New(rand.NewPCG(1, 2))
		queries := make([][]float32, 16)
		for i := range queries {
			queries[i] = unit(rng, benchDim)
		}

		b.Run(fmt.Sprintf("records=%d/sqlite", n), func(b *testing.B) {
			storagetest.SQLiteOnly(b, "reads every vector through SQLite's driver")
			conn, err := driver.Open("file:" + s.path + "?_pragma=busy_timeout(5000)&_pragma=query_only(1)")
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				scanSQLite(b, conn, queries[i%len(queries)])
			}
		})

		b.Run(fmt.Sprintf("records=%d/float32-memory", n), func(b *testing.B) {
			before := heapMB()
			flat := make([]float32, 0, n*benchDim)
			for _, v := range s.vecs {
				flat = append(flat, v...)
			}
			held := heapMB() - before
			scores := make([]float64, n)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				q := queries[i%len(queries)]
				for j := range n {
					scores[j] = dot(q, flat[j*benchDim:(j+1)*benchDim])
				}
				topK(scores, 20)
			}
			b.ReportMetric(held, "heap-MB")
			runtime.KeepAlive(flat)
		})

		b.Run(fmt.Sprintf("records=%d/codes-index", n), func(b *testing.B) {
			before := heapMB()
			x := NewIndex(s.db)
			if err := x.SetKey(ctx, "m", "s"); err != nil {
				b.Fatal(err)
			}
			held := heapMB() - before
			es, _, _, err := x.collect(Query{Chain: []string{"global"}})
			if err != nil || len(es) != n {
				b.Fatalf("collect: %d entries, %v", len(es), err)
			}
			read := 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				q := queries[i%len(queries)]
				es, _, _, _ := x.collect(Query{Chain: []string{"global"}})
				want := nearest(q, es, 20)
				ids := make([]string, len(want))
				for j, e := range want {
					ids[j] = e.id()
				}
				got, err := s.db.Embeddings(ctx, ids)
				if err != nil {
					b.Fatal(err)
				}
				read += len(got)
				scores := make([]float64, len(want))
				for j, e := range want {
					scores[j] = dot(q, got[e.id()].Vector)
				}
				topK(scores, 20)
			}
			b.ReportMetric(float64(read)/float64(b.N), "rescored/op")
			b.ReportMetric(held, "heap-MB")
		})
	}
}

// scanSQLite reads every vector in scope and keeps the best 20.
func scanSQLite(b *testing.B, conn *sql.DB, q []float32) {
	rows, err := conn.Query(`SELECT e.vector FROM embeddings AS e JOIN records AS r ON r.id = e.record_id
		WHERE r.namespace IN ('global') AND r.status IN ('active', 'candidate')`)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var scores []float64
	v := make([]float32, benchDim)
	for rows.Next() {
		var blob []byte
		if err := rows.Scan(&blob); err != nil {
			b.Fatal(err)
		}
		for i := range v {
			v[i] = math.Float32frombits(uint32(blob[4*i]) | uint32(blob[4*i+1])<<8 | uint32(blob[4*i+2])<<16 | uint32(blob[4*i+3])<<24)
		}
		scores = append(scores, dot(q, v))
	}
	topK(scores, 20)
}

func heapMB() float64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc) / (1 << 20)
}

// BenchmarkIndex_Load loads n 1024-d vectors into an Index and reports the
// time, the Go heap it holds and the process's resident memory with it
// loaded (RSS-MB; the test binary, the store's page cache and all).
func BenchmarkIndex_Load(b *testing.B) {
	ctx := context.Background()
	for _, n := range benchSizes() {
		s := newBenchStore(b, n)
		s.vecs = nil
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			var x *Index
			before := heapMB()
			for i := 0; i < b.N; i++ {
				x = NewIndex(s.db)
				if err := x.SetKey(ctx, "m", "s"); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if c, ok := x.Counts(); !ok || c.Current != n {
				b.Fatalf("counts %+v (counted %v), want %d current", c, ok, n)
			}
			b.ReportMetric(heapMB()-before, "heap-MB")
			b.ReportMetric(rssMB(), "RSS-MB")
			runtime.KeepAlive(x)
		})
		// The same load in a process of its own, which did not build the
		// store: its resident set with the store open, right after the
		// load, and with the index loaded after a collection that returns
		// freed memory to the system. One process holds a store: this one closes it (the
		// cleanup's close again does nothing).
		if err := s.db.Close(); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("records=%d/process", n), func(b *testing.B) {
			var open, loaded, unsettled float64
			for i := 0; i < b.N; i++ {
				cmd := exec.Command(os.Args[0], "-test.run=^TestIndex_LoadChild$", "-test.v")
				cmd.Env = append(os.Environ(), "HEARTH_INDEX_CHILD="+s.path)
				out, err := cmd.CombinedOutput()
				if err != nil {
					b.Fatalf("child: %v\n%s", err, out)
				}
				at := bytes.Index(out, []byte("child-rss "))
				if at < 0 {
					b.Fatalf("child printed no figures:\n%s", out)
				}
				if _, err := fmt.Sscanf(string(out[at:]), "child-rss %f %f %f", &open, &unsettled, &loaded); err != nil {
					b.Fatalf("child: %v\n%s", err, out)
				}
			}
			b.ReportMetric(open, "open-RSS-MB")
			b.ReportMetric(unsettled, "after-load-RSS-MB")
			b.ReportMetric(loaded, "loaded-RSS-MB")
		})
	}
}

// TestIndex_LoadChild is BenchmarkIndex_Load's child process: it opens
// the store at $HEARTH_INDEX_CHILD (and skips without it), loads an
// Index from it and prints its resident set before, right after the load
// and after a collection.
func TestIndex_LoadChild(t *testing.T) {
	// Not parallel: it measures its process's memory.
	path := os.Getenv("HEARTH_INDEX_CHILD")
	if path == "" {
		t.Skip("BenchmarkIndex_Load's child process; HEARTH_INDEX_CHILD is unset")
	}
	db := storagetest.OpenPath(t, path)
	settle := func() float64 {
		runtime.GC()
		debug.FreeOSMemory()
		return rssMB()
	}
	open := settle()
	x := NewIndex(db)
	if err := x.SetKey(context.Background(), "m", "s"); err != nil {
		t.Fatal(err)
	}
	unsettled := rssMB()
	loaded := settle()
	runtime.KeepAlive(x)
	fmt.Printf("child-rss %.1f %.1f %.1f\n", open, unsettled, loaded)
}

// rssMB reads VmRSS from /proc/self/status (0 where there is none).
func rssMB() float64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}
