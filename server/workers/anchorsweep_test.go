package workers_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/server/homeassistant"
	"github.com/hearth-memory/hearth/server/homeassistant/hatest"
	"github.com/hearth-memory/hearth/server/sweep"
	"github.com/hearth-memory/hearth/server/workers"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

const haToken = "supervisor-token-w0rk"

// sweeping returns Workers that sweep through ha every hours, with edits
// made to their Config after.
func sweeping(t *testing.T, db *storage.DB, ha *hatest.Server, hours int, edits ...func(*workers.Config)) *workers.Workers {
	t.Helper()
	c, err := homeassistant.New(homeassistant.Config{URL: ha.URL, Token: ha.Token, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return newWorkers(t, db, func(cfg *workers.Config) {
		cfg.Sweeper = sweep.New(c)
		cfg.Options.AnchorSweepHours = hours
		cfg.Options.ReviewAt.Off = true
		for _, edit := range edits {
			edit(cfg)
		}
	})
}

func lastSweep(t *testing.T, db *storage.DB) *storage.Sweep {
	t.Helper()
	s, err := db.LastSweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSweepSchedule_Next(t *testing.T) {
	t.Parallel()
	s := workers.SweepSchedule{Every: 6 * time.Hour}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name       string
		last, want time.Time
	}{
		{"NeverRan", time.Time{}, now},
		{"Recent", now.Add(-time.Hour), now.Add(5 * time.Hour)},
		{"Overdue", now.Add(-20 * time.Hour), now},
		{"JustDue", now.Add(-6 * time.Hour), now},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := s.Next(c.last, now); !got.Equal(c.want) {
				t.Errorf("Next(%v) = %v, want %v", c.last, got, c.want)
			}
		})
	}
}

// TestAnchorSweep_Scheduled holds the schedule: a first sweep at start, the
// next queued with its completion every anchor_sweep_hours, each reading
// Home Assistant once.
func TestAnchorSweep_Scheduled(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	db, clk := setup(t, start)
	ha := hatest.New(t, haToken)
	ha.Set("light.kitchen", "on")
	r := storagetest.Store(t, db, storage.NewRecord{Anchors: storagetest.Texts(t, "entity:light.kitchen")})
	w := sweeping(t, db, ha, 6)
	prepare(t, w)

	if !runOnce(t, w) {
		t.Fatal("no sweep at the first start")
	}
	if s := lastSweep(t, db); s == nil || s.RequestedBy != storage.SystemClient || s.Checked != 1 || s.Available != 1 {
		t.Fatalf("first sweep: %+v", s)
	}
	if runOnce(t, w) {
		t.Fatal("a second sweep ran before anchor_sweep_hours")
	}
	queued := jobs(t, db, storage.KindAnchorSweep, storage.JobQueued)
	if len(queued) != 1 || !queued[0].RunAfter.Equal(start.Add(6*time.Hour)) {
		t.Fatalf("queued %+v, want one sweep at %v", queued, start.Add(6*time.Hour))
	}

	ha.Set("light.kitchen", "unavailable")
	clk.Add(6 * time.Hour)
	if !runOnce(t, w) {
		t.Fatal("the sweep did not run after anchor_sweep_hours")
	}
	rec, _ := db.Get(ctx, []string{r.ID})
	if a := rec[0].Anchors[0]; a.State != storage.AnchorUnavailable || a.Detail != "state unavailable" {
		t.Errorf("anchor after the second sweep: %+v", a)
	}
	if n := len(ha.Requests()); n != 2 {
		t.Errorf("%d requests to Home Assistant, want one per sweep (2)", n)
	}
	if done := jobs(t, db, storage.KindAnchorSweep, storage.JobDone); len(done) != 2 {
		t.Errorf("%d sweeps done, want 2", len(done))
	}
}

// TestAnchorSweep_MissedRunsAtNextStart holds R-J1 for the sweep: slots
// missed while the process was down give one sweep at the next start, not
// one per slot.
func TestAnchorSweep_MissedRunsAtNextStart(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	db, clk := setup(t, start)
	ha := hatest.New(t, haToken)
	ha.Set("light.kitchen", "on")
	storagetest.Store(t, db, storage.NewRecord{Anchors: storagetest.Texts(t, "entity:light.kitchen")})
	w := sweeping(t, db, ha, 6)
	prepare(t, w)
	runOnce(t, w)

	// Down for 20 hours: three slots pass.
	clk.Add(20 * time.Hour)
	w2 := sweeping(t, db, ha, 6)
	prepare(t, w2)
	if !runOnce(t, w2) {
		t.Fatal("the missed sweep did not run at start")
	}
	if runOnce(t, w2) {
		t.Error("more than one sweep ran for the missed slots")
	}
	if s := lastSweep(t, db); !s.At.Equal(start.Add(20 * time.Hour)) {
		t.Errorf("last sweep at %v, want at the restart", s.At)
	}
	queued := jobs(t, db, storage.KindAnchorSweep, storage.JobQueued)
	if len(queued) != 1 || !queued[0].RunAfter.Equal(start.Add(26*time.Hour)) {
		t.Errorf("queued %+v, want one at %v", queued, start.Add(26*time.Hour))
	}

	// A restart before the next slot queues nothing new.
	clk.Add(time.Hour)
	w3 := sweeping(t, db, ha, 6)
	prepare(t, w3)
	if runOnce(t, w3) {
		t.Error("a sweep ran at a restart before its slot")
	}
	if q := jobs(t, db, storage.KindAnchorSweep, storage.JobQueued); len(q) != 1 || q[0].ID != queued[0].ID {
		t.Errorf("queued after the restart: %+v, want %+v", q, queued)
	}

	// anchor_sweep_hours shortened: the queued sweep moves.
	w4 := sweeping(t, db, ha, 2)
	prepare(t, w4)
	q := jobs(t, db, storage.KindAnchorSweep, storage.JobQueued)
	if len(q) != 1 || !q[0].RunAfter.Equal(start.Add(22*time.Hour)) {
		t.Errorf("queued after anchor_sweep_hours 2: %+v, want one at %v", q, start.Add(22*time.Hour))
	}
}

// TestAnchorSweep_Unreachable: a sweep that cannot reach Home Assistant
// completes, is recorded as unreachable, changes nothing and keeps the
// schedule.
func TestAnchorSweep_Unreachable(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	db, _ := setup(t, start)
	ha := hatest.New(t, haToken)
	ha.Fail(http.StatusBadGateway)
	r := storagetest.Store(t, db, storage.NewRecord{Anchors: storagetest.Texts(t, "entity:light.kitchen")})
	w := sweeping(t, db, ha, 6)
	prepare(t, w)
	if !runOnce(t, w) {
		t.Fatal("no sweep")
	}
	if s := lastSweep(t, db); s == nil || !s.Unreachable || s.Checked != 0 || s.Unknown != 1 {
		t.Errorf("sweep: %+v", s)
	}
	if got, _ := db.Get(ctx, []string{r.ID}); got[0].Revision != 1 || got[0].Anchors[0].State != storage.AnchorUnknown {
		t.Errorf("record changed: %+v", got[0])
	}
	if done := jobs(t, db, storage.KindAnchorSweep, storage.JobDone); len(done) != 1 {
		t.Errorf("%d sweeps done, want 1 (unreachable is not a failure)", len(done))
	}
	if q := jobs(t, db, storage.KindAnchorSweep, storage.JobQueued); len(q) != 1 {
		t.Errorf("%d sweeps queued, want the next one", len(q))
	}
}

// TestAnchorSweep_HomeAssistantArrives: sweeps recorded without Home
// Assistant do not delay the first one that reads it.
func TestAnchorSweep_HomeAssistantArrives(t *testing.T) {
	t.Parallel()
	db, clk := setup(t, time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	// Without Home Assistant nothing is scheduled; a sweep asked for says
	// there is none.
	w := newWorkers(t, db, func(cfg *workers.Config) { cfg.Sweeper = sweep.New(nil); cfg.Options.ReviewAt.Off = true })
	prepare(t, w)
	if runOnce(t, w) {
		t.Fatal("a sweep was scheduled without Home Assistant")
	}
	if _, err := sweep.New(nil).Run(ctx, db, "claude-code"); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Minute)
	ha := hatest.New(t, haToken)
	ha.Set("light.kitchen", "on")
	w2 := sweeping(t, db, ha, 6)
	prepare(t, w2)
	if !runOnce(t, w2) || !lastSweep(t, db).HomeAssistant {
		t.Error("the first start with Home Assistant did not sweep at once")
	}
}

// TestAnchorSweep_NoSweeper: without a Sweeper no sweep is scheduled.
func TestAnchorSweep_NoSweeper(t *testing.T) {
	t.Parallel()
	db, _ := setup(t, time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	w := newWorkers(t, db, nil)
	prepare(t, w)
	if q := jobs(t, db, storage.KindAnchorSweep, ""); len(q) != 0 {
		t.Errorf("sweep jobs without a sweeper: %+v", q)
	}
}
