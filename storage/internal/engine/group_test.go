package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// openGroupDB opens an engine with a table of its own for the group tests.
func openGroupDB(t *testing.T) *Engine {
	t.Helper()
	db := openTestDB(t)
	if err := db.ExecRaw(context.Background(), `CREATE TABLE g (k TEXT PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	return db
}

// holdWriter starts a write that keeps the writer loop busy until release is
// called, so that writes sent meanwhile wait and form one group.
func holdWriter(t *testing.T, db *Engine) (release func()) {
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
func holdWrite(db *Engine) (release func() error) {
	started, gate := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- db.Write(context.Background(), "hold", func(tx *Tx) error {
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
func queuedWrites(db *Engine) int { return int(db.WritesWaiting()) }

func keys(t *testing.T, db *Engine) map[string]bool {
	t.Helper()
	got := map[string]bool{}
	err := db.Read(context.Background(), "keys", func(tx *Tx) error {
		rows, err := tx.QueryContext(context.Background(), `SELECT k FROM g`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				return err
			}
			got[k] = true
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestWrite_Group: writes waiting together commit in one transaction; a
// write that fails (an error of its own, a constraint, a panic) is undone
// alone and its caller gets its error, while the others commit; a caller
// whose context ended while it waited is skipped.
func TestWrite_Group(t *testing.T) {
	t.Parallel() // each owns its engine, gather or gate
	db := openGroupDB(t)
	// The key write 5 repeats is there before the group: the writes run in
	// the order they reached the loop, which no goroutine here decides.
	if err := db.ExecRaw(context.Background(), `INSERT INTO g (k) VALUES ('taken')`); err != nil {
		t.Fatal(err)
	}
	release := holdWriter(t, db)

	const n = 12
	type outcome struct {
		err      error
		panicked any
		tx       *Tx
	}
	results := make([]outcome, n)
	canceled, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { results[i].panicked = recover() }()
			ctx := context.Background()
			if i == 11 {
				ctx = canceled
			}
			results[i].err = db.Write(ctx, "group", func(tx *Tx) error {
				results[i].tx = tx
				if _, err := tx.ExecContext(ctx, `INSERT INTO g (k) VALUES (?)`, fmt.Sprint("k", i)); err != nil {
					return err
				}
				switch i {
				case 3:
					return errors.New("refused by its own rule")
				case 5:
					_, err := tx.ExecContext(ctx, `INSERT INTO g (k) VALUES ('taken')`) // a duplicate key
					return err
				case 7:
					panic("fn panicked")
				}
				return nil
			})
		}()
	}
	// Every write is blocked sending to the busy loop once none of the
	// goroutines can make progress; then cancel one and let the loop go.
	deadline := time.Now().Add(5 * time.Second)
	for queuedWrites(db) < n && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	cancel()
	release()
	wg.Wait()

	got := keys(t, db)
	var groupTx *Tx
	for i, r := range results {
		want := fmt.Sprint("k", i)
		switch i {
		case 3, 5:
			if r.err == nil || got[want] {
				t.Errorf("write %d: err %v, stored %v; want its error and nothing stored", i, r.err, got[want])
			}
		case 7:
			if r.panicked != "fn panicked" || got[want] {
				t.Errorf("write 7: panic %v, stored %v; want the panic re-raised and nothing stored", r.panicked, got[want])
			}
		case 11:
			if !errors.Is(r.err, context.Canceled) || r.tx != nil || got[want] {
				t.Errorf("write 11: err %v, ran %v; want context.Canceled without running", r.err, r.tx != nil)
			}
		default:
			if r.err != nil || !got[want] {
				t.Errorf("write %d: err %v, stored %v; want it committed", i, r.err, got[want])
			}
		}
		if r.tx != nil {
			if groupTx != nil && r.tx != groupTx {
				t.Errorf("write %d ran in another transaction than the group", i)
			}
			groupTx = r.tx
		}
	}
}

// TestWrite_GroupLost: when SQLite itself ends the transaction in the
// middle of a group (as a full disk or an I/O error does), every write of
// the group fails and nothing of it is kept.
func TestWrite_GroupLost(t *testing.T) {
	t.Parallel() // each owns its engine, gather or gate
	db := openGroupDB(t)
	release := holdWriter(t, db)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = db.Write(context.Background(), "lost", func(tx *Tx) error {
				if _, err := tx.ExecContext(context.Background(), `INSERT INTO g (k) VALUES (?)`, fmt.Sprint("k", i)); err != nil {
					return err
				}
				if i == 1 {
					// What SQLite does on SQLITE_FULL: the transaction is gone.
					tx.Tx.ExecContext(context.Background(), `ROLLBACK`)
					return errors.New("disk full")
				}
				return nil
			})
		}()
	}
	deadline := time.Now().Add(5 * time.Second)
	for queuedWrites(db) < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	release()
	wg.Wait()
	for i, err := range errs {
		if err == nil {
			t.Errorf("write %d succeeded, though its group's transaction was lost", i)
		}
	}
	if got := keys(t, db); len(got) != 0 {
		t.Errorf("kept %v", got)
	}
	// The loop goes on.
	if err := db.Write(context.Background(), "after", func(tx *Tx) error {
		_, err := tx.ExecContext(context.Background(), `INSERT INTO g (k) VALUES ('after')`)
		return err
	}); err != nil || !keys(t, db)["after"] {
		t.Errorf("a write after the lost group: %v", err)
	}
}

// TestWrite_Closed: a write after Close fails with ErrClosed.
func TestWrite_Closed(t *testing.T) {
	t.Parallel() // each owns its engine, gather or gate
	db := openGroupDB(t)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Write(context.Background(), "late", func(*Tx) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("got %v, want ErrClosed", err)
	}
}

// TestWrite_GroupCachedSavepoints: the savepoint statements of a group
// are prepared once, through the writer's statement cache, and a group
// that runs them prepared still undoes a failed write alone, across
// groups and after a transaction SQLite ended itself.
func TestWrite_GroupCachedSavepoints(t *testing.T) {
	t.Parallel() // each owns its engine, gather or gate
	db := openGroupDB(t)
	cached := func(q string) bool {
		db.writerStmts.mu.RLock()
		defer db.writerStmts.mu.RUnlock()
		return db.writerStmts.m[q] != nil
	}
	group := func(round int, lose bool) []error {
		t.Helper()
		// The held write joins the group once the loop has seen others
		// (gather): it fails with a lost group, as the others do.
		release := holdWrite(db)
		errs := make([]error, 4)
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Go(func() {
				errs[i] = db.Write(context.Background(), "group", func(tx *Tx) error {
					if _, err := tx.ExecContext(context.Background(), `INSERT INTO g (k) VALUES (?)`, fmt.Sprint(round, "k", i)); err != nil {
						return err
					}
					switch {
					case i == 2 && lose:
						tx.Tx.ExecContext(context.Background(), `ROLLBACK`)
						return errors.New("disk full")
					case i == 2:
						return errors.New("refused by its own rule")
					}
					return nil
				})
			})
		}
		deadline := time.Now().Add(5 * time.Second)
		for queuedWrites(db) < 4 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		err := release()
		wg.Wait()
		if (err != nil) != lose {
			t.Errorf("round %d: the held write: %v", round, err)
		}
		return errs
	}
	for round := range 3 {
		if round > 0 {
			for _, q := range []string{"SAVEPOINT w", "ROLLBACK TO w", "RELEASE w"} {
				if !cached(q) {
					t.Errorf("round %d: %q is not in the writer's statement cache", round, q)
				}
			}
		}
		for i, err := range group(round, false) {
			k := fmt.Sprint(round, "k", i)
			if got := keys(t, db); (i == 2) != (err != nil) || (i == 2) == got[k] {
				t.Errorf("round %d, write %d: err %v, stored %v; want only write 2 refused and undone", round, i, err, got[k])
			}
		}
	}
	before := len(keys(t, db))
	for i, err := range group(3, true) {
		if err == nil {
			t.Errorf("write %d of the lost group succeeded", i)
		}
	}
	if got := len(keys(t, db)); got != before {
		t.Errorf("%d rows after the lost group, want %d", got, before)
	}
}
