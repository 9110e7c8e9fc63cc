package engine

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// newGather returns a gather over channels of its own, as the writer loop
// makes it, and a function that sends writes to it from goroutines; it
// returns once every send has been taken.
func newGather(t *testing.T) (*gather, func(rs ...*writeRequest) (wait func())) {
	t.Helper()
	db := &Engine{writes: make(chan *writeRequest), closing: make(chan struct{})}
	g := &gather{e: db, timer: time.NewTimer(time.Hour), peak: 1}
	g.timer.Stop()
	send := func(rs ...*writeRequest) func() {
		var wg sync.WaitGroup
		for _, r := range rs {
			wg.Go(func() { db.waiting.Add(1); db.writes <- r })
		}
		return wg.Wait
	}
	return g, send
}

func request(op string) *writeRequest {
	return &writeRequest{ctx: context.Background(), op: op, fn: func(*Tx) error { return nil }, done: make(chan writeResult, 1)}
}

// TestGather: a group takes the writes waiting and stops at an exclusive
// one, which runs next; once the group is as large as the largest of late
// it stops without waiting; the largest group of late falls by one per
// smaller group.
func TestGather(t *testing.T) {
	t.Parallel() // each owns its engine, gather or gate
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
		// Taken, they no longer wait, whether or not their senders have
		// run since.
		if n := g.e.WritesWaiting(); n != 0 {
			t.Errorf("%d writes waiting after the group took them all, want 0", n)
		}
	})
	t.Run("Exclusive", func(t *testing.T) {
		x := &writeRequest{ctx: context.Background(), op: "vacuum", alone: func(*sql.Conn) error { return nil }, done: make(chan writeResult, 1)}
		g := endsGroup(t, "exclusively", x)
		if out := g.more(); out != nil {
			t.Errorf("more after an exclusive write = %v, want none", out)
		}
	})
	t.Run("Solo", func(t *testing.T) {
		// A solo write ends the group it meets, as an exclusive one does,
		// and its own group takes nothing, even while writers come in
		// groups.
		solo := request("flush usage")
		solo.solo = true
		endsGroup(t, "solo", solo)

		// A write already waiting (a buffered channel holds it) stays
		// for the next group.
		db := &Engine{writes: make(chan *writeRequest, 1), closing: make(chan struct{})}
		g := &gather{e: db, timer: time.NewTimer(time.Hour), peak: 8}
		g.timer.Stop()
		a := request("a")
		db.waiting.Add(1)
		db.writes <- a
		g.start(solo)
		if out := g.waiting(); len(out) != 0 {
			t.Errorf("waiting in a solo write's group = %v, want none", out)
		}
		if out := g.more(); out != nil || g.waited != 0 {
			t.Errorf("more in a solo write's group = %v after waiting %v; want none at once", out, g.waited)
		}
		g.done()
		if g.peak != 8 {
			t.Errorf("after a solo write's group: peak %d, want 8 (unchanged)", g.peak)
		}
		g.start(request("next"))
		if out := g.waiting(); len(out) != 1 || out[0] != a {
			t.Errorf("the next group took %v, want the write that waited during the solo one", out)
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
		close(g.e.closing)
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

// endsGroup checks that x, sent while a group gathers, joins none and is
// kept to run next, and returns that gather.
func endsGroup(t *testing.T, kind string, x *writeRequest) *gather {
	t.Helper()
	g, send := newGather(t)
	g.start(request("first"))
	wait := send(x)
	for g.next == nil {
		if out := g.waiting(); len(out) != 0 {
			t.Fatalf("a write that runs %s joined the group: %v", kind, out)
		}
	}
	wait()
	if g.next != x || g.taken != 1 {
		t.Errorf("next %v, taken %d; want the write that runs %s next and the group as it was", g.next, g.taken, kind)
	}
	return g
}

// TestWrite_GroupGathers: once writers have come together, a write sent
// while a group runs joins that group's transaction instead of waiting for
// a commit of its own.
func TestWrite_GroupGathers(t *testing.T) {
	t.Parallel() // each owns its engine, gather or gate
	db := openGroupDB(t)
	insert := func(k string, ran **Tx) func(tx *Tx) error {
		return func(tx *Tx) error {
			*ran = tx
			_, err := tx.ExecContext(context.Background(), `INSERT INTO g (k) VALUES (?)`, k)
			return err
		}
	}
	// Two writers at once: the loop learns that writes come in groups.
	release := holdWriter(t, db)
	var wg sync.WaitGroup
	var tx0, tx1 *Tx
	for i, ran := range []**Tx{&tx0, &tx1} {
		wg.Go(func() {
			if err := db.Write(context.Background(), "pair", insert(fmt.Sprint("p", i), ran)); err != nil {
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
	var txA, txB *Tx
	started := make(chan struct{})
	wg.Go(func() {
		err := db.Write(context.Background(), "a", func(tx *Tx) error {
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
	if err := db.Write(context.Background(), "b", insert("b", &txB)); err != nil {
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

// TestWriteSolo: a solo write runs in a transaction of its own and without
// a savepoint, even while writers come in groups (when a lone write of the
// others runs under one); the writes queued around it commit in groups of
// their own.
func TestWriteSolo(t *testing.T) {
	t.Parallel() // each owns its engine, gather or gate
	db := openGroupDB(t)
	// probe reports whether fn runs under the group's savepoint: ROLLBACK
	// TO names one that exists, and undoes nothing fn has not written.
	probe := func(under *bool, k string) func(tx *Tx) error {
		return func(tx *Tx) error {
			_, err := tx.ExecContext(context.Background(), `ROLLBACK TO w`)
			*under = err == nil
			if err != nil && !strings.Contains(err.Error(), "no such savepoint") {
				return err
			}
			_, err = tx.ExecContext(context.Background(), `INSERT INTO g (k) VALUES (?)`, k)
			return err
		}
	}
	// Two writers at once: the loop learns that writes come in groups.
	release := holdWriter(t, db)
	var wg sync.WaitGroup
	var pair [2]bool
	for i := range pair {
		wg.Go(func() {
			if err := db.Write(context.Background(), "pair", probe(&pair[i], fmt.Sprint("p", i))); err != nil {
				t.Error(err)
			}
		})
	}
	for queuedWrites(db) < 2 {
		time.Sleep(time.Millisecond)
	}
	release()
	wg.Wait()
	if !pair[0] || !pair[1] {
		t.Fatalf("a group's writes ran without a savepoint: %v", pair)
	}

	// x, then the solo write s, then y wait behind a held writer.
	groups0, _ := db.GroupStats()
	release = holdWriter(t, db)
	var underX, underS, underY bool
	for i, w := range []struct {
		solo  bool
		under *bool
		k     string
	}{{false, &underX, "x"}, {true, &underS, "s"}, {false, &underY, "y"}} {
		wg.Go(func() {
			send := db.Write
			if w.solo {
				send = db.WriteSolo
			}
			if err := send(context.Background(), w.k, probe(w.under, w.k)); err != nil {
				t.Error(err)
			}
		})
		for queuedWrites(db) < i+1 {
			time.Sleep(time.Millisecond)
		}
	}
	release()
	wg.Wait()
	if underS {
		t.Error("the solo write ran under a savepoint")
	}
	if !underY {
		t.Error("the write after the solo one ran without a savepoint: the solo write lowered the peak, and the probe proves nothing")
	}
	// x joins the hold's group, which ends at s; s commits alone, and y
	// after it: three commits.
	if groups, _ := db.GroupStats(); groups-groups0 != 3 {
		t.Errorf("%d commits for the hold and three writes, want 3 (the hold with x, s, y)", groups-groups0)
	}
	if got := keys(t, db); !got["x"] || !got["s"] || !got["y"] {
		t.Errorf("stored %v", got)
	}
}
