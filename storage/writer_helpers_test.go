package storage

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// openGroupDB opens a store with a table of its own for the group tests.
// openTestDB opens a store in a temporary directory, closed with the test.
func openTestDB(t *testing.T) *DB {
	t.Helper()
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func openGroupDB(t *testing.T) *DB {
	t.Helper()
	db := openTestDB(t)
	if err := db.ExecRaw(context.Background(), `CREATE TABLE g (k TEXT PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	return db
}

// holdWriter starts a write that keeps the writer loop busy until release is
// called, so that writes sent meanwhile wait and form one group.
func holdWriter(t *testing.T, db *DB) (release func()) {
	t.Helper()
	held := holdWrite(db)
	return func() {
		if err := held(); err != nil {
			t.Errorf("hold: %v", err)
		}
	}
}

// holdWrite starts a write that holds the writer until release, which
// returns the write's error.
func holdWrite(db *DB) (release func() error) {
	started, gate := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- db.writeGrouped(context.Background(), "hold", func(tx *txn) error {
			close(started)
			<-gate
			return nil
		})
	}()
	<-started
	return func() error {
		close(gate)
		return <-done
	}
}

// queuedWrites is how many writes wait to be handed to the loop.
func queuedWrites(db *DB) int { return int(db.WritesWaiting()) }

// TestFlushUsage_RunsSolo: a usage flush is a solo write (writeOwnTx): it
// never joins the group of the writes about it, so its many pages are
// never copied into a savepoint's subjournal.
func TestFlushUsage_RunsSolo(t *testing.T) {
	db := openGroupDB(t)
	insert := func(k string) func(tx *txn) error {
		return func(tx *txn) error {
			_, err := tx.ExecContext(context.Background(), `INSERT INTO g (k) VALUES (?)`, k)
			return err
		}
	}
	ids := make([]string, 500)
	for i := range ids {
		ids[i] = fmt.Sprint("no-such-record-", i)
	}
	db.NoteReturned(ids)

	// Two writers at once: the loop learns that writes come in groups.
	release := holdWriter(t, db)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			if err := db.writeGrouped(context.Background(), "pair", insert(fmt.Sprint("p", i))); err != nil {
				t.Error(err)
			}
		})
	}
	for queuedWrites(db) < 2 {
		time.Sleep(time.Millisecond)
	}
	release()
	wg.Wait()

	groups0, _ := db.GroupStats()
	release = holdWriter(t, db)
	for i, send := range []func() error{
		func() error { return db.writeGrouped(context.Background(), "x", insert("x")) },
		func() error { return db.FlushUsage(context.Background()) },
		func() error { return db.writeGrouped(context.Background(), "y", insert("y")) },
	} {
		wg.Go(func() {
			if err := send(); err != nil {
				t.Error(err)
			}
		})
		for queuedWrites(db) < i+1 {
			time.Sleep(time.Millisecond)
		}
	}
	release()
	wg.Wait()
	// The hold's group takes x and ends at the flush; the flush; y.
	if groups, _ := db.GroupStats(); groups-groups0 != 3 {
		t.Errorf("%d commits for the hold, a write, a flush and a write; want 3 (the hold with x, the flush, y)", groups-groups0)
	}
}
