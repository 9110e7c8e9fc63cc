package storage_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// holdExclusive starts a run of name on db that holds its lock until
// release is closed or its context ends; it returns once the run holds
// the lock, with a channel that gives the cause of the run's context when
// it ends (nil when released).
func holdExclusive(t *testing.T, db *storage.DB, name string, release <-chan struct{}) <-chan error {
	t.Helper()
	holding, ended := make(chan struct{}), make(chan error, 1)
	go func() {
		ran, err := db.RunExclusive(ctx, name, func(ctx context.Context) error {
			close(holding)
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		})
		if !ran {
			err = errors.New("the holding run did not run")
		}
		ended <- err
	}()
	select {
	case <-holding:
	case err := <-ended:
		t.Fatalf("RunExclusive(%q): %v", name, err)
	}
	return ended
}

// tryExclusive runs name on db with a fn that only notes it ran, and
// returns RunExclusive's report.
func tryExclusive(t *testing.T, db *storage.DB, name string) bool {
	t.Helper()
	called := false
	ran, err := db.RunExclusive(ctx, name, func(context.Context) error { called = true; return nil })
	if err != nil || ran != called {
		t.Fatalf("RunExclusive(%q) = %v, %v, fn called %v", name, ran, err, called)
	}
	return ran
}

// In one store the runs of a name take turns without waiting: a second
// run while the first holds the lock does not run; a run of another name
// does; once the first returned, the name is free again.
func TestDB_RunExclusive(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	if _, err := db.RunExclusive(ctx, "", func(context.Context) error { return nil }); storage.ErrorCode(err) != storage.Invalid {
		t.Errorf("empty name: %v, want Invalid", err)
	}
	release := make(chan struct{})
	ended := holdExclusive(t, db, "maintenance", release)
	if tryExclusive(t, db, "maintenance") {
		t.Error("a second run of maintenance ran while the first held it")
	}
	if !tryExclusive(t, db, "review") {
		t.Error("review did not run beside maintenance")
	}
	close(release)
	if err := <-ended; err != nil {
		t.Fatal(err)
	}
	if !tryExclusive(t, db, "maintenance") {
		t.Error("maintenance did not run once the first run returned")
	}
	want := errors.New("fn failed")
	if ran, err := db.RunExclusive(ctx, "maintenance", func(context.Context) error { return want }); !ran || err != want {
		t.Errorf("RunExclusive = %v, %v; want fn's error", ran, err)
	}
}

// Two front ends on one database: while one runs a name, the other's run
// of it does not run; it runs once the first returned.
func TestPostgres_FrontEndsExclusive(t *testing.T) {
	t.Parallel()
	postgresOnly(t)
	url := storagetest.URL(t)
	a, b := storagetest.OpenURL(t, url), storagetest.OpenURL(t, url)
	release := make(chan struct{})
	ended := holdExclusive(t, a, "maintenance", release)
	if tryExclusive(t, b, "maintenance") {
		t.Error("front end b ran maintenance while a held it")
	}
	if !tryExclusive(t, b, "anchor-sweep") {
		t.Error("front end b did not run anchor-sweep beside a's maintenance")
	}
	close(release)
	if err := <-ended; err != nil {
		t.Fatal(err)
	}
	if !tryExclusive(t, b, "maintenance") {
		t.Error("front end b did not run maintenance once a's run returned")
	}
}

// A lock dies with its connection: when the session holding it ends (a
// front end whose process died), the other front end gets the lock, and
// the run that lost it sees its context cancelled with
// ErrExclusiveLost.
func TestPostgres_ExclusiveLostConnection(t *testing.T) {
	t.Parallel()
	postgresOnly(t)
	url := storagetest.URL(t)
	a, b := storagetest.OpenURL(t, url), storagetest.OpenURL(t, url)
	ended := holdExclusive(t, a, "review", nil)
	if tryExclusive(t, b, "review") {
		t.Fatal("front end b ran review while a held it")
	}
	terminateLockHolder(t, b)
	select {
	case err := <-ended:
		if !errors.Is(err, storage.ErrExclusiveLost) {
			t.Errorf("a's run ended with %v, want ErrExclusiveLost", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a's run was not told its lock was lost")
	}
	if !tryExclusive(t, b, "review") {
		t.Error("front end b did not get review's lock once a's connection ended")
	}
	// a's store goes on: its lost connection left the pool.
	if !tryExclusive(t, a, "review") {
		t.Error("front end a did not run review again after b")
	}
}

// leasedTo enqueues a job on db and leases it to owner.
func leasedTo(t *testing.T, db *storage.DB, owner string) *storage.Job {
	t.Helper()
	if _, _, err := db.EnqueueJob(ctx, storage.NewJob{Kind: "test"}); err != nil {
		t.Fatal(err)
	}
	j, err := db.LeaseJob(ctx, owner, []string{"test"}, time.Hour)
	if err != nil || j == nil {
		t.Fatalf("LeaseJob = %v, %v", j, err)
	}
	return j
}

// releaseLeases runs db.ReleaseLeases for owner and returns how many it
// released.
func releaseLeases(t *testing.T, db *storage.DB, owner string) int {
	t.Helper()
	n, err := db.ReleaseLeases(ctx, owner)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A held owner's leases stay its own when another worker starts; once
// released (or its store closed), they are given back. An owner is held
// once.
func TestDB_HoldOwner(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	if _, err := db.HoldOwner(ctx, ""); storage.ErrorCode(err) != storage.Invalid {
		t.Errorf("HoldOwner of no owner = %v, want Invalid", err)
	}
	release, err := db.HoldOwner(ctx, "running")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.HoldOwner(ctx, "running"); storage.ErrorCode(err) != storage.Exists {
		t.Errorf("second HoldOwner = %v, want Exists", err)
	}
	leasedTo(t, db, "running")
	if n := releaseLeases(t, db, "starting"); n != 0 {
		t.Fatalf("released %d leases of a running owner", n)
	}
	release()
	release() // a second call does nothing
	if n := releaseLeases(t, db, "starting"); n != 1 {
		t.Errorf("released %d leases once the owner stopped, want 1", n)
	}
}

// On PostgreSQL an owner held by one front end keeps its leases when
// another starts, and is free to the others once the connection holding
// it ended (its process died).
func TestPostgres_FrontEndsHoldOwner(t *testing.T) {
	t.Parallel()
	postgresOnly(t)
	url := storagetest.URL(t)
	a, b := storagetest.OpenURL(t, url), storagetest.OpenURL(t, url)
	if _, err := a.HoldOwner(ctx, "front-a"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.HoldOwner(ctx, "front-a"); storage.ErrorCode(err) != storage.Exists {
		t.Errorf("HoldOwner of a's owner on b = %v, want Exists", err)
	}
	leasedTo(t, a, "front-a")
	if n := releaseLeases(t, b, "front-b"); n != 0 {
		t.Fatalf("front end b released %d leases of a, which runs", n)
	}
	terminateLockHolder(t, b)
	if n := releaseLeases(t, b, "front-b"); n != 1 {
		t.Errorf("front end b released %d leases once a's connection ended, want 1", n)
	}
}

// terminateLockHolder ends, through db, the one session holding an
// advisory lock in the test's database (its own: no other test's locks
// are in it), as the death of the front end holding it would, waiting
// (10 s at most) until it has ended.
func terminateLockHolder(t *testing.T, db *storage.DB) {
	t.Helper()
	var n int
	if err := db.QueryRaw(ctx, false, `SELECT count(pg_terminate_backend(pid, 10000)) FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`, &n); err != nil || n != 1 {
		t.Fatalf("terminated %d sessions holding an advisory lock, %v; want one", n, err)
	}
}
