package workers_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/server/models"
	"github.com/hearth-memory/hearth/server/models/modeltest"
	"github.com/hearth-memory/hearth/server/workers"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/testwait"
)

// waitCount polls until srv received n requests for path, and fails the
// test if it gets more.
func waitCount(t *testing.T, srv *modeltest.Server, path string, n int) {
	t.Helper()
	testwait.WaitFor(t, fmt.Sprintf("%d %s requests", n, path), func() bool { return srv.Count(path) >= n })
	if got := srv.Count(path); got != n {
		t.Fatalf("%s requests: got %d, want %d", path, got, n)
	}
}

// TestWorkers_Probes holds docs/design.md R-M3 with an injected clock: the runner
// probes each server at start and again each time 15 s of the clock pass,
// also while a model call is in flight, and no call probes.
func TestWorkers_Probes(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "m1"})
	gate := make(chan struct{})
	srv.Script(modeltest.Rule{Path: "/api/chat", Action: modeltest.Action{Gate: gate, Content: memoriesReply()}})
	s := newModelSetup(t, models.Config{URL: srv.URL}, func(c *workers.Config) { c.Poll = time.Millisecond })
	if err := s.w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.w.Stop()
	waitCount(t, srv, "/api/tags", 1)
	start := s.clock.Now()

	// An extraction call is held in flight; probes go on around it.
	j := enqueueExtraction(t, s.db, "", "notes")
	srv.WaitPending(t, "/api/chat", 1)
	for i := 1; i <= 3; i++ {
		s.clock.Add(models.DefaultProbeEvery)
		want := start.Add(time.Duration(i) * models.DefaultProbeEvery)
		testwait.WaitFor(t, fmt.Sprintf("probe %d at %v", i+1, want), func() bool { return s.router.Status().Servers[0].LastProbe.Equal(want) })
		if n := srv.Count("/api/tags"); n != 1+i {
			t.Errorf("probes after %v: got %d, want %d", want.Sub(start), n, 1+i)
		}
	}
	if n := srv.Count("/api/chat"); n != 1 {
		t.Errorf("chat requests: got %d, want 1", n)
	}
	close(gate)
	testwait.WaitFor(t, "the job is done", jobDone(s.db, j.ID))
	// Nothing came due: the call and the job's end probed nothing.
	if n := srv.Count("/api/tags"); n != 4 {
		t.Errorf("probes: got %d, want 4", n)
	}
}

// TestWorkers_MaintenanceQueuesReview: with a model configured, each
// maintenance run queues the night's review in its completion; without
// one, it queues none.
func TestWorkers_MaintenanceQueuesReview(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		srv := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "m1"})
		srv.Script(modeltest.Rule{Path: "/api/chat", Action: modeltest.Action{Content: verdictJSON("keep", "", "fine")}})
		s := newModelSetup(t, models.Config{URL: srv.URL})
		m := jobs(t, s.db, storage.KindMaintenance, storage.JobQueued)
		if len(m) != 1 {
			t.Fatalf("maintenance jobs: got %d, want 1", len(m))
		}
		s.clock.Set(m[0].RunAfter)
		if !runOnce(t, s.w) {
			t.Fatal("maintenance did not run")
		}
		r := jobs(t, s.db, storage.KindReview, storage.JobQueued)
		if len(r) != 1 || r[0].Key != workers.ReviewKey(m[0]) || r[0].Key != "review@"+m[0].RunAfter.UTC().Format(time.RFC3339) {
			t.Fatalf("review jobs: got %+v, want one keyed by the slot", r)
		}
		if !runOnce(t, s.w) {
			t.Fatal("the review did not run")
		}
		if rows := auditActions(t, s.db, storage.ActionReview); len(rows) != 1 {
			t.Errorf("review audit rows: got %d, want 1", len(rows))
		}
	})
	t.Run("OKNoModel", func(t *testing.T) {
		t.Parallel()
		db, c := setup(t, t0)
		w := newWorkers(t, db, nil)
		prepare(t, w)
		m := jobs(t, db, storage.KindMaintenance, storage.JobQueued)
		c.Set(m[0].RunAfter)
		runOnce(t, w)
		if r := jobs(t, db, storage.KindReview, ""); len(r) != 0 {
			t.Errorf("review jobs: got %d, want none without a model", len(r))
		}
	})
}
