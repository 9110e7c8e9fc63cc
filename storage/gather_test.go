package storage

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"
)

// newGather returns a gather over channels of its own, as the writer loop
// makes it, and a function that sends writes to it from goroutines; it
// returns once every send has been taken.
func newGather(t *testing.T) (*gather, func(rs ...*writeRequest) (wait func())) {
	t.Helper()
	db := &DB{writes: make(chan *writeRequest), closing: make(chan struct{})}
	g := &gather{db: db, timer: time.NewTimer(time.Hour), peak: 1}
	g.timer.Stop()
	send := func(rs ...*writeRequest) func() {
		var wg sync.WaitGroup
		for _, r := range rs {
			wg.Go(func() { db.writes <- r })
		}
		return wg.Wait
	}
	return g, send
}

func request(op string) *writeRequest {
	return &writeRequest{ctx: context.Background(), op: op, fn: func(*txn) error { return nil }, done: make(chan writeResult, 1)}
}

// TestGather: a group takes the writes waiting and stops at an exclusive
// one, which runs next; once the group is as large as the largest of late
// it stops without waiting; the largest group of late falls by one per
// smaller group.
func TestGather(t *testing.T) {
	t.Run("Waiting", func(t *testing.T) {
		g, send := newGather(t)
		g.start(request("first"))
		a, b := request("a"), request("b")
		wait := send(a, b)
		// Blocking until both sends are taken: receive them as more does.
		var got []*writeRequest
		for len(got) < 2 {
			got = append(got, g.waiting()...)
		}
		wait()
		if g.taken != 3 || len(got) != 2 {
			t.Fatalf("took %d writes (%d returned), want 3 (2)", g.taken, len(got))
		}
	})
	t.Run("Exclusive", func(t *testing.T) {
		g, send := newGather(t)
		g.start(request("first"))
		x := &writeRequest{ctx: context.Background(), op: "vacuum", alone: func(*sql.Conn) error { return nil }, done: make(chan writeResult, 1)}
		wait := send(x)
		for g.next == nil {
			if out := g.waiting(); len(out) != 0 {
				t.Fatalf("an exclusive write joined the group: %v", out)
			}
		}
		wait()
		if g.next != x || g.taken != 1 {
			t.Errorf("next %v, taken %d; want the exclusive write next and the group as it was", g.next, g.taken)
		}
		if out := g.more(); out != nil {
			t.Errorf("more after an exclusive write = %v, want none", out)
		}
	})
	t.Run("Complete", func(t *testing.T) {
		// A lone writer's group never waits: peak 1 means no one else.
		g, _ := newGather(t)
		g.start(request("first"))
		if out := g.more(); out != nil || g.waited != 0 {
			t.Errorf("more = %v after waiting %v; want none at once", out, g.waited)
		}
	})
	t.Run("Closing", func(t *testing.T) {
		g, _ := newGather(t)
		g.peak = 8
		g.start(request("first"))
		close(g.db.closing)
		if out := g.more(); out != nil {
			t.Errorf("more while closing = %v, want none", out)
		}
	})
	t.Run("Peak", func(t *testing.T) {
		g, _ := newGather(t)
		for i, c := range []struct{ taken, peak int }{{1, 1}, {8, 8}, {1, 7}, {3, 6}, {7, 7}, {64, 64}} {
			g.start(request(fmt.Sprint(i)))
			g.taken = c.taken
			g.done()
			if g.peak != c.peak {
				t.Errorf("after a group of %d: peak %d, want %d", c.taken, g.peak, c.peak)
			}
		}
	})
}

// TestWrite_GroupGathers: once writers have come together, a write sent
// while a group runs joins that group's transaction instead of waiting for
// a commit of its own.
func TestWrite_GroupGathers(t *testing.T) {
	db := openGroupDB(t)
	insert := func(k string, ran **txn) func(tx *txn) error {
		return func(tx *txn) error {
			*ran = tx
			_, err := tx.ExecContext(context.Background(), `INSERT INTO g (k) VALUES (?)`, k)
			return err
		}
	}
	// Two writers at once: the loop learns that writes come in groups.
	release := holdWriter(t, db)
	var wg sync.WaitGroup
	var tx0, tx1 *txn
	for i, ran := range []**txn{&tx0, &tx1} {
		wg.Go(func() {
			if err := db.write(context.Background(), "pair", insert(fmt.Sprint("p", i), ran)); err != nil {
				t.Error(err)
			}
		})
	}
	for queuedWrites(db) < 2 {
		time.Sleep(time.Millisecond)
	}
	release()
	wg.Wait()
	if tx0 != tx1 {
		t.Fatal("the two waiting writes did not share a transaction")
	}

	// A runs; B is sent while A's fn holds the loop.
	var txA, txB *txn
	started := make(chan struct{})
	wg.Go(func() {
		err := db.write(context.Background(), "a", func(tx *txn) error {
			close(started)
			for queuedWrites(db) < 1 {
				time.Sleep(time.Millisecond)
			}
			return insert("a", &txA)(tx)
		})
		if err != nil {
			t.Error(err)
		}
	})
	<-started
	if err := db.write(context.Background(), "b", insert("b", &txB)); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if txA == nil || txA != txB {
		t.Error("a write sent while a group ran did not join it")
	}
	if got := keys(t, db); !got["a"] || !got["b"] || !got["p0"] || !got["p1"] {
		t.Errorf("stored %v", got)
	}
}
