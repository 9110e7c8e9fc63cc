package storage_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// postgresOnly skips a test of the PostgreSQL engine itself unless the
// tests run on PostgreSQL (make test-postgres).
func postgresOnly(t *testing.T) {
	t.Helper()
	if !storagetest.Postgres() {
		t.Skipf("a test of the PostgreSQL engine: %s=postgres runs it", storagetest.BackendEnv)
	}
}

// Backend names the engine a store runs on.
func TestDB_Backend(t *testing.T) {
	t.Parallel()
	want := storage.BackendSQLite
	if storagetest.Postgres() {
		want = storage.BackendPostgres
	}
	if got := storagetest.Open(t).Backend(); got != want {
		t.Errorf("Backend() = %q, want %q", got, want)
	}
}

// OpenPostgres refuses an empty URL by its field, and its errors never
// hold the URL's password.
func TestOpenPostgres_Errors(t *testing.T) {
	t.Parallel()
	_, err := storage.OpenPostgres(ctx, "")
	wantErr(t, err, storage.Invalid, "database")
	for _, url := range []string{
		// Nothing listens on port 1: the connection is refused.
		"postgres://hearth:s3cret-pw@127.0.0.1:1/hearth?sslmode=disable&connect_timeout=2",
		"postgres://hearth:s3cret-pw@127.0.0.1:notaport/hearth",
	} {
		db, err := storage.OpenPostgres(ctx, url)
		if err == nil {
			db.Close()
			t.Fatalf("OpenPostgres(%q) opened", url)
		}
		if strings.Contains(err.Error(), "s3cret-pw") {
			t.Errorf("OpenPostgres's error shows the password: %v", err)
		}
	}
}

// What only SQLite has answers "not applicable" on PostgreSQL: no panic
// for a missing file, Backup and CheckIntegrity refused by name, the
// health of a sound store.
func TestPostgres_SQLiteOnlyOperations(t *testing.T) {
	t.Parallel()
	postgresOnly(t)
	db := storagetest.Open(t)
	storagetest.Store(t, db, rec(t, "global", "A record", "Kept on PostgreSQL."))

	_, err := db.Backup(ctx, t.TempDir()+"/copy.db", "test")
	if e := wantErr(t, err, storage.Invalid, ""); !strings.Contains(e.Message, "pg_dump") {
		t.Errorf("Backup's refusal %q does not name pg_dump", e.Message)
	}
	_, err = db.CheckIntegrity(ctx)
	wantErr(t, err, storage.Invalid, "")
	if _, err := db.CheckDeferred(ctx); storage.ErrorCode(err) != storage.Invalid {
		t.Errorf("CheckDeferred: %v, want Invalid", err)
	}
	h := db.Health()
	if h.State() != storage.StateOK || len(h.Degraded()) != 0 || h.LastCheck != nil || h.Disk.Known {
		t.Errorf("Health() = %+v, want a sound store with no file to report", h)
	}
	if _, ok := db.DiskFull(); ok {
		t.Error("DiskFull reports an episode")
	}
	if db.Damage() != nil || db.WritesWaiting() != 0 {
		t.Errorf("Damage %v, WritesWaiting %d: want none", db.Damage(), db.WritesWaiting())
	}
	if g, w := db.GroupStats(); g != 0 || w != 0 {
		t.Errorf("GroupStats() = %d, %d, want none", g, w)
	}
	if err := db.Warm(ctx); err != nil {
		t.Errorf("Warm: %v", err)
	}
	if n, err := db.TidyIndex(ctx); n != 0 || err != nil {
		t.Errorf("TidyIndex() = %d, %v, want nothing to do", n, err)
	}
}

// Two front ends on one database: the revision guard holds between them
// (one of two updates from the same revision wins, the other is a
// Conflict holding the winner's record), and each sees the other's
// writes at once.
func TestPostgres_FrontEnds(t *testing.T) {
	t.Parallel()
	postgresOnly(t)
	url := storagetest.URL(t)
	a, b := storagetest.OpenURL(t, url), storagetest.OpenURL(t, url)
	r := storagetest.Store(t, a, rec(t, "global", "Shared", "Written by front end a."))
	if got := get(t, b, r.ID); got.Revision != 1 {
		t.Fatalf("front end b reads revision %d, want 1", got.Revision)
	}

	const rounds = 8
	for round := range rounds {
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, db := range []*storage.DB{a, b} {
			wg.Go(func() {
				// Content new to each round: an update that changes
				// nothing succeeds at any revision.
				content := fmt.Sprintf("Round %d, front end %c.", round, 'a'+i)
				_, errs[i] = db.Update(ctx, r.ID, r.Revision, storage.Changes{Content: textp(t, content)}, "test")
			})
		}
		wg.Wait()
		var won, lost int
		for _, err := range errs {
			var e *storage.Error
			switch {
			case err == nil:
				won++
			case errors.As(err, &e) && e.Code == storage.Conflict && e.Current != nil && e.Current.Revision == r.Revision+1:
				lost++
			default:
				t.Fatalf("round %d: %v, want one update and one Conflict with the winner's record", round, err)
			}
		}
		if won != 1 || lost != 1 {
			t.Fatalf("round %d: %d updates and %d conflicts, want one of each", round, won, lost)
		}
		r = get(t, a, r.ID)
	}
	if got := get(t, b, r.ID); got.Revision != rounds+1 {
		t.Errorf("revision %d after %d rounds, want %d", got.Revision, rounds, rounds+1)
	}
}

// Two front ends storing at once each store every record: writes that
// PostgreSQL cannot serialize are run again, never lost nor doubled.
func TestPostgres_FrontEndsStore(t *testing.T) {
	t.Parallel()
	postgresOnly(t)
	url := storagetest.URL(t)
	fronts := []*storage.DB{storagetest.OpenURL(t, url), storagetest.OpenURL(t, url)}
	const writers, each = 4, 10
	var wg sync.WaitGroup
	errs := make(chan error, len(fronts)*writers*each)
	for _, db := range fronts {
		for range writers {
			wg.Go(func() {
				for range each {
					if _, err := db.Store(ctx, rec(t, "global", "Concurrent", "Stored by one of two front ends.")); err != nil {
						errs <- err
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("store: %v", err)
	}
	want := len(fronts) * writers * each
	var n, counted int
	if err := fronts[0].QueryRaw(ctx, false, `SELECT COUNT(*) FROM records`, &n); err != nil {
		t.Fatal(err)
	}
	st, err := fronts[1].Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range st.Counts {
		counted += c.N
	}
	if n != want || counted != want {
		t.Errorf("%d records, %d counted by the triggers; want %d", n, counted, want)
	}
}

// Two front ends leasing from one queue at once lease each job exactly
// once: the lease's read and update are one serializable transaction.
func TestPostgres_FrontEndsLease(t *testing.T) {
	t.Parallel()
	postgresOnly(t)
	url := storagetest.URL(t)
	fronts := []*storage.DB{storagetest.OpenURL(t, url), storagetest.OpenURL(t, url)}
	const jobs = 24
	for i := range jobs {
		if _, _, err := fronts[i%2].EnqueueJob(ctx, storage.NewJob{Kind: "test", Key: fmt.Sprintf("job-%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	leased := map[string]string{}
	var wg sync.WaitGroup
	for f, db := range fronts {
		for w := range 2 {
			owner := fmt.Sprintf("front-%d-worker-%d", f, w)
			wg.Go(func() {
				for {
					job, err := db.LeaseJob(ctx, owner, []string{"test"}, time.Hour)
					if err != nil {
						t.Errorf("%s: %v", owner, err)
						return
					}
					if job == nil {
						return
					}
					mu.Lock()
					if other, ok := leased[job.ID]; ok {
						t.Errorf("job %s leased by %s and by %s", job.Key, other, owner)
					}
					leased[job.ID] = owner
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if len(leased) != jobs {
		t.Errorf("%d jobs leased, want %d", len(leased), jobs)
	}
}

// A session closed through two front ends at once (a client retrying on
// the other) closes once: one close, one replay of the same receipt, one
// extraction job. Uses counted on both front ends add up.
func TestPostgres_FrontEndsSessionAndUsage(t *testing.T) {
	t.Parallel()
	postgresOnly(t)
	url := storagetest.URL(t)
	fronts := []*storage.DB{storagetest.OpenURL(t, url), storagetest.OpenURL(t, url)}
	for round := range 4 {
		op := fmt.Sprintf("op-%05d", round+1)
		var wg sync.WaitGroup
		receipts := make([]*storage.Receipt, 2)
		replays := make([]bool, 2)
		for i, db := range fronts {
			wg.Go(func() {
				var err error
				receipts[i], replays[i], err = db.CloseSession(ctx, sessionClose(t, op, "Did X.", "Some notes."))
				if err != nil {
					t.Errorf("%s on front end %d: %v", op, i, err)
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		if replays[0] == replays[1] || *receipts[0] != *receipts[1] {
			t.Errorf("%s: replayed %v, receipts %+v and %+v; want one close and one replay of it", op, replays, *receipts[0], *receipts[1])
		}
	}
	if n := countRows(t, fronts[0], `SELECT COUNT(*) FROM jobs`); n != 4 {
		t.Errorf("%d extraction jobs for 4 sessions", n)
	}

	r := storagetest.Store(t, fronts[0], rec(t, "global", "Used", "Returned by both front ends."))
	for range 3 {
		fronts[0].NoteReturned([]string{r.ID})
		fronts[1].NoteReturned([]string{r.ID})
		fronts[1].NoteFetched([]string{r.ID})
	}
	for _, db := range fronts {
		if err := db.FlushUsage(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if u, err := fronts[0].Usage(ctx, r.ID); err != nil || u.Returned != 6 || u.Fetched != 3 {
		t.Errorf("Usage = %+v, %v; want 6 returns and 3 fetches from the two front ends", u, err)
	}
}

// BenchmarkPostgres_FrontEnds measures stores from two front ends on one
// database at once, 4 goroutines each, against one front end with 8: the
// rate, and the writes run again because PostgreSQL could not serialize
// them with the other front end's (retries/op).
func BenchmarkPostgres_FrontEnds(b *testing.B) {
	if !storagetest.Postgres() {
		b.Skipf("a benchmark of the PostgreSQL engine: %s=postgres runs it", storagetest.BackendEnv)
	}
	for _, fronts := range []int{1, 2} {
		b.Run(fmt.Sprintf("fronts=%d", fronts), func(b *testing.B) {
			url := storagetest.URL(b)
			dbs := make([]*storage.DB, fronts)
			for i := range dbs {
				dbs[i] = storagetest.OpenURL(b, url)
			}
			recs := loadRecords(b)
			b.ResetTimer()
			retries := storeFronts(b, dbs, recs, b.N, 8)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
			b.ReportMetric(float64(retries)/float64(b.N), "retries/op")
		})
	}
}

// storeFronts stores n records through the front ends dbs at once, k
// goroutines shared among them (storeAll on each), and returns the writes
// the front ends ran again meanwhile (PostgresRetries).
func storeFronts(tb testing.TB, dbs []*storage.DB, recs []storage.NewRecord, n, k int) int64 {
	var before int64
	for _, db := range dbs {
		before += db.PostgresRetries()
	}
	var wg sync.WaitGroup
	per := n / len(dbs)
	for i, db := range dbs {
		m := per
		if i == 0 {
			m += n % len(dbs)
		}
		wg.Go(func() { storeAll(tb, db, recs, m, k/len(dbs)) })
	}
	wg.Wait()
	var retries int64
	for _, db := range dbs {
		retries += db.PostgresRetries()
	}
	return retries - before
}
