package workers_test

import (
	"sync"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/server/homeassistant/hatest"
	"github.com/hearth-memory/hearth/server/workers"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
	"github.com/hearth-memory/hearth/storage/testwait"
)

// frontEnds gives two forms of two front ends on one database: one store
// that two worker sets share (SQLite's form: a file has one process), and
// two stores on one PostgreSQL database, as two `hearth serve` processes
// have (skipped without PostgreSQL's binaries unless
// HEARTH_REQUIRE_POSTGRES is set).
func frontEnds() map[string]func(t *testing.T) (a, b *storage.DB) {
	return map[string]func(t *testing.T) (a, b *storage.DB){
		"OneStore": func(t *testing.T) (a, b *storage.DB) {
			a = storagetest.Open(t)
			return a, a
		},
		"TwoPostgresFrontEnds": func(t *testing.T) (a, b *storage.DB) {
			url := storagetest.URL(t)
			return storagetest.OpenURL(t, url), storagetest.OpenURL(t, url)
		},
	}
}

// A due sweep runs on one front end: while front end a's sweep waits for
// a slow Home Assistant, its lease runs out, and front end b, polling,
// neither takes the job nor sweeps; when a completes, the job is done and
// b has nothing to do. Before the nightly kinds ran under an exclusive
// run, b leased the job again, Home Assistant was read twice and a lost
// its completion.
func TestNightly_OneFrontEndAtATime(t *testing.T) {
	t.Parallel()
	for name, open := range frontEnds() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clk := &clock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
			a, b := open(t)
			a.Now, b.Now = clk.Now, clk.Now
			ha := hatest.New(t, haToken)
			ha.Set("light.kitchen", "on")
			storagetest.Store(t, a, storage.NewRecord{Anchors: storagetest.Texts(t, "entity:light.kitchen")})
			const lease = time.Minute
			leased := func(cfg *workers.Config) { cfg.Lease = lease }
			wa, wb := sweeping(t, a, ha, 6, leased), sweeping(t, b, ha, 6, leased)
			prepare(t, wa)
			prepare(t, wb)
			if n := len(jobs(t, a, storage.KindAnchorSweep, "")); n != 1 {
				t.Fatalf("%d sweeps queued by two front ends starting together, want 1", n)
			}

			ha.Delay(3 * time.Second)
			var wg sync.WaitGroup
			var ranA bool
			wg.Go(func() { ranA = runOnce(t, wa) })
			testwait.WaitFor(t, "front end a reading Home Assistant", func() bool { return len(ha.Requests()) == 1 })
			clk.Add(2 * lease) // a's lease has run out while it sweeps
			if runOnce(t, wb) {
				t.Error("front end b ran a job while a swept")
			}
			wg.Wait()
			if !ranA {
				t.Fatal("front end a ran no job")
			}
			if runOnce(t, wb) {
				t.Error("front end b ran a job after a's sweep")
			}
			if n := len(ha.Requests()); n != 1 {
				t.Errorf("%d requests to Home Assistant, want 1", n)
			}
			if done := jobs(t, a, storage.KindAnchorSweep, storage.JobDone); len(done) != 1 || done[0].Attempts != 1 {
				t.Errorf("sweeps done: %+v, want one, at its first attempt", done)
			}
			if queued := jobs(t, a, storage.KindAnchorSweep, storage.JobQueued); len(queued) != 1 {
				t.Errorf("%d sweeps queued after the sweep, want the next one", len(queued))
			}
		})
	}
}

// Two front ends starting while a sweep is due each queue one, under
// keys of their own; the first sweeps, and the second, finding that
// sweep recorded since its job fell due, neither sweeps again nor keeps
// a second schedule: one sweep is queued after both.
func TestNightly_SweepOfTwoStarts(t *testing.T) {
	t.Parallel()
	for name, open := range frontEnds() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clk := &clock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
			a, b := open(t)
			a.Now, b.Now = clk.Now, clk.Now
			ha := hatest.New(t, haToken)
			ha.Set("light.kitchen", "on")
			storagetest.Store(t, a, storage.NewRecord{Anchors: storagetest.Texts(t, "entity:light.kitchen")})
			wa, wb := sweeping(t, a, ha, 6), sweeping(t, b, ha, 6)
			prepare(t, wa)
			ha.Delay(2 * time.Second)
			var wg sync.WaitGroup
			wg.Go(func() { runOnce(t, wa) })
			testwait.WaitFor(t, "front end a reading Home Assistant", func() bool { return len(ha.Requests()) == 1 })
			clk.Add(time.Second) // b starts while a sweeps: its sweep is due at its start
			prepare(t, wb)
			wg.Wait()
			clk.Add(time.Minute)
			if !runOnce(t, wb) {
				t.Fatal("front end b ran not its sweep job")
			}
			if n := len(ha.Requests()); n != 1 {
				t.Errorf("%d requests to Home Assistant, want 1", n)
			}
			if done := jobs(t, a, storage.KindAnchorSweep, storage.JobDone); len(done) != 2 {
				t.Errorf("%d sweep jobs done, want a's and b's", len(done))
			}
			queued := jobs(t, a, storage.KindAnchorSweep, storage.JobQueued)
			if last := lastSweep(t, a); len(queued) != 1 || !queued[0].RunAfter.Equal(last.At.Add(6*time.Hour)) {
				t.Errorf("queued %+v, want one sweep 6 h after the last (%v)", queued, last.At)
			}
		})
	}
}
