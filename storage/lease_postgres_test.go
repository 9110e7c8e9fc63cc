package storage_test

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// BenchmarkPostgres_FrontEndsLease measures leasing b.N queued jobs from
// two front ends on one database, 4 workers each, each worker leasing
// until none is left: the rate, and the lease transactions run again
// because PostgreSQL could not serialize them with another's (retries/op).
// Every job is leased once (docs/postgres.md, "Several front ends").
func BenchmarkPostgres_FrontEndsLease(b *testing.B) {
	if !storagetest.Postgres() {
		b.Skipf("a benchmark of the PostgreSQL engine: %s=postgres runs it", storagetest.BackendEnv)
	}
	url := storagetest.URL(b)
	fronts := []*storage.DB{storagetest.OpenURL(b, url), storagetest.OpenURL(b, url)}
	for i := range b.N {
		if _, _, err := fronts[i%2].EnqueueJob(ctx, storage.NewJob{Kind: "test", Key: fmt.Sprintf("job-%d", i)}); err != nil {
			b.Fatal(err)
		}
	}
	var before int64
	for _, db := range fronts {
		before += db.PostgresRetries()
	}
	var leased sync.Map
	var n atomic.Int64
	b.ResetTimer()
	var wg sync.WaitGroup
	for f, db := range fronts {
		for w := range 4 {
			owner := fmt.Sprintf("front-%d-worker-%d", f, w)
			wg.Go(func() {
				for {
					job, err := db.LeaseJob(ctx, owner, []string{"test"}, time.Hour)
					if err != nil {
						b.Errorf("%s: %v", owner, err)
						return
					}
					if job == nil {
						return
					}
					if other, dup := leased.LoadOrStore(job.ID, owner); dup {
						b.Errorf("job %s leased by %s and by %s", job.Key, other, owner)
					}
					n.Add(1)
				}
			})
		}
	}
	wg.Wait()
	b.StopTimer()
	if int(n.Load()) != b.N {
		b.Errorf("%d jobs leased, want %d", n.Load(), b.N)
	}
	var retries int64
	for _, db := range fronts {
		retries += db.PostgresRetries()
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "leases/s")
	b.ReportMetric(float64(retries-before)/float64(b.N), "retries/op")
}

// A lease passes over a job whose row another front end's lease holds
// locked, and takes the next, without waiting for that transaction: two
// front ends leasing at once take two jobs. Before FOR UPDATE SKIP
// LOCKED, the lease read the locked job and then waited on its row.
func TestPostgres_LeaseSkipsLockedJob(t *testing.T) {
	t.Parallel()
	postgresOnly(t)
	url := storagetest.URL(t)
	db := storagetest.OpenURL(t, url)
	var ids []string
	for i := range 2 {
		j, _, err := db.EnqueueJob(ctx, storage.NewJob{Kind: "test", Key: fmt.Sprintf("job-%d", i),
			RunAfter: db.Now().Add(time.Duration(i-10) * time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	other, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	tx, err := other.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var locked string
	if err := tx.QueryRowContext(ctx, `SELECT id FROM jobs WHERE id = $1 FOR UPDATE`, ids[0]).Scan(&locked); err != nil {
		t.Fatal(err)
	}
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	j, err := db.LeaseJob(wait, "front-b", []string{"test"}, time.Hour)
	if err != nil || j == nil || j.ID != ids[1] {
		t.Fatalf("LeaseJob beside a locked first job = %+v, %v; want the second job at once", j, err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if j, err := db.LeaseJob(ctx, "front-b", []string{"test"}, time.Hour); err != nil || j == nil || j.ID != ids[0] {
		t.Errorf("LeaseJob once the lock went = %+v, %v; want the first job", j, err)
	}
}
