package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// opsDaemon starts a daemon holding n records (through bulk) for the
// operations benchmarks.
func opsDaemon(b *testing.B, n int) *testDaemon {
	b.Helper()
	td := startDaemon(b, parityOptions())
	bulk(b, td.db, "github/acme/bench", n)
	return td
}

// p99 returns the 99th percentile of ds in milliseconds.
func p99(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return float64(ds[len(ds)*99/100].Microseconds()) / 1000
}

// writeLatencies stores records over gRPC from 4 clients until stop closes
// and returns every store's latency.
func writeLatencies(b *testing.B, td *testDaemon, stop <-chan struct{}) []time.Duration {
	var (
		mu  sync.Mutex
		all []time.Duration
		wg  sync.WaitGroup
	)
	tok := td.tokens["claude-code"]
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				t0 := time.Now()
				r := grpcTransport{td: td}.call(b, tok, "memory_store", storeArgs("github/acme/writes", fmt.Sprintf("w%d-%d", w, i), "A write during the benchmark."))
				d := time.Since(t0)
				if !r.ok {
					b.Error(r)
					return
				}
				mu.Lock()
				all = append(all, d)
				mu.Unlock()
			}
		}()
	}
	<-stop
	wg.Wait()
	return all
}

// BenchmarkBackup times memory_backup of a store of 10,000 records (and
// HEARTH_BENCH_RECORDS), with 4 clients storing records over gRPC
// meanwhile: backup-s is the backup's wall time, write-p99-ms the writers'
// 99th percentile during it, idle-p99-ms the same writers without a backup.
func BenchmarkBackup(b *testing.B) {
	for _, n := range benchRecords() {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			td := opsDaemon(b, n)
			stop := make(chan struct{})
			done := make(chan []time.Duration)
			go func() { done <- writeLatencies(b, td, stop) }()
			time.Sleep(2 * time.Second) // a baseline of writes alone
			close(stop)
			idle := <-done

			var secs float64
			var during []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				stop := make(chan struct{})
				go func() { done <- writeLatencies(b, td, stop) }()
				t0 := time.Now()
				r := restTransport{td}.call(b, td.tokens["claude-code"], "memory_backup", map[string]any{})
				secs += time.Since(t0).Seconds()
				close(stop)
				during = append(during, <-done...)
				if !r.ok {
					b.Fatal(r)
				}
			}
			b.StopTimer()
			b.ReportMetric(secs/float64(b.N), "backup-s")
			b.ReportMetric(p99(during), "write-p99-ms")
			b.ReportMetric(p99(idle), "idle-p99-ms")
			b.ReportMetric(float64(len(during))/secs, "writes/s")
		})
	}
}

// BenchmarkExport times `hearth export` of the whole store over REST.
func BenchmarkExport(b *testing.B) {
	for _, n := range benchRecords() {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			td := opsDaemon(b, n)
			c := &apiClient{base: td.url, token: td.tokens["claude-code"], http: http.DefaultClient}
			b.ResetTimer()
			var recs int
			for i := 0; i < b.N; i++ {
				got, err := exportAll(context.Background(), c, "", io.Discard)
				if err != nil {
					b.Fatal(err)
				}
				recs += got
			}
			b.ReportMetric(float64(recs)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkImport times `hearth import --as-active` of an export into an
// empty store over REST (each round into a fresh store), and a second
// import of the same lines, which changes nothing. backend=postgres
// imports into a server on a new, empty PostgreSQL database (the tests'
// private server): the move of docs/operations.md, "Moving a SQLite store
// to PostgreSQL".
func BenchmarkImport(b *testing.B) {
	for _, n := range benchRecords() {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			src := opsDaemon(b, n)
			var lines bytes.Buffer
			if _, err := exportAll(context.Background(), &apiClient{base: src.url, token: src.tokens["claude-code"], http: http.DefaultClient}, "", &lines); err != nil {
				b.Fatal(err)
			}
			for _, backend := range []string{storage.BackendSQLite, storage.BackendPostgres} {
				b.Run("backend="+backend, func(b *testing.B) {
					var fresh, again time.Duration
					for i := 0; i < b.N; i++ {
						b.StopTimer()
						opts := parityOptions()
						if backend == storage.BackendPostgres {
							opts.DatabaseURL = storagetest.EmptyURL(b)
						}
						dst := startDaemon(b, opts)
						c := &apiClient{base: dst.url, token: dst.tokens["claude-code"], http: http.DefaultClient}
						b.StartTimer()
						t0 := time.Now()
						sum, err := importLines(context.Background(), c, bytes.NewReader(lines.Bytes()), true)
						fresh += time.Since(t0)
						if err != nil || sum.imported != n {
							b.Fatalf("import: %+v %v", sum, err)
						}
						t0 = time.Now()
						sum, err = importLines(context.Background(), c, bytes.NewReader(lines.Bytes()), true)
						again += time.Since(t0)
						if err != nil || sum.unchanged != n {
							b.Fatalf("second import: %+v %v", sum, err)
						}
					}
					b.ReportMetric(float64(n*b.N)/fresh.Seconds(), "records/s")
					b.ReportMetric(float64(n*b.N)/again.Seconds(), "unchanged/s")
				})
			}
		})
	}
}

// BenchmarkMetricsScrape times GET /metrics on a store of n records.
func BenchmarkMetricsScrape(b *testing.B) {
	for _, n := range benchRecords() {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			td := opsDaemon(b, n)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if code, _, body := scrape(b, td, td.tokens["claude-code"]); code != 200 {
					b.Fatal(code, body)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/scrape")
		})
	}
}
