package storage_test

import (
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage"
)

// BenchmarkWAL measures the WAL's size under 8 writers storing b.N records
// between them while 8 readers search without pause: with SQLite's
// automatic checkpoint alone (policy=off), and with the store's policy of
// truncating it past 16 MiB (policy=16MiB). It reports the WAL's peak and
// final size, the checkpoints the policy ran and their longest duration.
func BenchmarkWAL(b *testing.B) {
	for _, p := range []struct {
		name  string
		limit int64
	}{{"policy=off", 1 << 62}, {"policy=16MiB", 16 << 20}} {
		b.Run(p.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "hearth.db")
			db, err := storage.Open(ctx, path, storage.WithWALPolicy(p.limit, time.Second))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			seed := newGen(99)
			for range 200 {
				if _, err := db.Store(ctx, seed.record(b)); err != nil {
					b.Fatal(err)
				}
			}
			var peak atomic.Int64
			walSize := func() int64 {
				fi, err := os.Stat(path + "-wal")
				if err != nil {
					return 0
				}
				return fi.Size()
			}
			stop := make(chan struct{})
			var readers, sampler sync.WaitGroup
			sampler.Add(1)
			go func() {
				defer sampler.Done()
				t := time.NewTicker(20 * time.Millisecond)
				defer t.Stop()
				for {
					peak.Store(max(peak.Load(), walSize()))
					select {
					case <-stop:
						return
					case <-t.C:
					}
				}
			}()
			for r := range 8 {
				readers.Add(1)
				go func() {
					defer readers.Done()
					g := newGen(uint64(1000 + r))
					for {
						select {
						case <-stop:
							return
						default:
						}
						if _, err := db.Search(ctx, storage.SearchQuery{Text: g.words(2), Namespaces: []string{"global", "github/acme/api"}, Limit: 10}); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			var next atomic.Int64
			var writers sync.WaitGroup
			b.ResetTimer()
			for w := range 8 {
				writers.Add(1)
				go func() {
					defer writers.Done()
					g := newGen(uint64(w + 1))
					for next.Add(1) <= int64(b.N) {
						if _, err := db.Store(ctx, g.record(b)); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			writers.Wait()
			b.StopTimer()
			close(stop)
			readers.Wait()
			sampler.Wait()
			st := db.CheckpointStats()
			b.ReportMetric(float64(peak.Load())/(1<<20), "wal-peak-MB")
			b.ReportMetric(float64(walSize())/(1<<20), "wal-end-MB")
			b.ReportMetric(float64(st.Count), "checkpoints")
			b.ReportMetric(float64(st.Unfinished), "unfinished")
			b.ReportMetric(float64(st.Max.Microseconds())/1000, "ckpt-max-ms")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
