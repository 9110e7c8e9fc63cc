package workers_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/server/models"
	"github.com/hearth-memory/hearth/server/models/modeltest"
	"github.com/hearth-memory/hearth/storage"
)

// TestExtract_Budget holds the daily model budget over the job queue: when
// the cap is reached mid-session the extraction jobs left wait, queued with
// no attempt spent, and run after the day rolls over or after Resume; a job
// whose call meets the cap once leased is given back, not failed.
func TestExtract_Budget(t *testing.T) {
	t.Parallel()
	reply := memoriesReply(mem("decision", "Use WAL", "SQLite runs in WAL mode.", 0.9))
	waits := func(t *testing.T, s *modelSetup, j *storage.Job) {
		t.Helper()
		if runOnce(t, s.w) {
			t.Fatal("a job ran past the budget")
		}
		got, err := s.db.Job(ctx, j.ID)
		if err != nil || got.State != storage.JobQueued || got.Attempts != 0 {
			t.Fatalf("job past the budget: got %+v %v, want queued with no attempt", got, err)
		}
	}
	t.Run("OKCapMidSessionNextDay", func(t *testing.T) {
		t.Parallel()
		srv := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "m1"})
		srv.Script(modeltest.Rule{Path: "/api/chat", Action: modeltest.Action{Content: reply}})
		s := newModelSetup(t, models.Config{URL: srv.URL, Location: time.UTC, Budget: models.Budget{Calls: 2}})
		var js []*storage.Job
		for i := range 3 {
			js = append(js, enqueueExtraction(t, s.db, "", "notes "+strings.Repeat("x", i)))
		}
		for i := range 2 {
			if !runOnce(t, s.w) {
				t.Fatalf("job %d did not run", i)
			}
		}
		waits(t, s, js[2])
		if n := len(chats(srv)); n != 2 {
			t.Fatalf("chat requests: got %d, want 2", n)
		}
		s.clock.Add(14 * time.Hour) // t0 is 10:00 UTC: past midnight
		if !runOnce(t, s.w) {
			t.Fatal("the job did not run on the next day")
		}
		if got, _ := s.db.Job(ctx, js[2].ID); got.State != storage.JobDone || got.Attempts != 1 {
			t.Fatalf("job: got %+v, want done on its first attempt", got)
		}
	})
	t.Run("OKResume", func(t *testing.T) {
		t.Parallel()
		srv := modeltest.New(t, modeltest.LlamaServer, modeltest.Model{Path: "/m1.gguf"})
		srv.Script(modeltest.Rule{Path: srv.ChatPath(), Action: modeltest.Action{Content: reply, PromptTokens: 900, ReplyTokens: 200}})
		s := newModelSetup(t, models.Config{URL: srv.URL, Location: time.UTC, Budget: models.Budget{Tokens: 1000}})
		a := enqueueExtraction(t, s.db, "", "notes a")
		b := enqueueExtraction(t, s.db, "", "notes b")
		if !runOnce(t, s.w) {
			t.Fatal("the first job did not run")
		}
		if got, _ := s.db.Job(ctx, a.ID); got.State != storage.JobDone {
			t.Fatalf("first job: %+v", got)
		}
		waits(t, s, b)
		s.router.StartOver()
		if !runOnce(t, s.w) {
			t.Fatal("the job did not run after StartOver")
		}
		if got, _ := s.db.Job(ctx, b.ID); got.State != storage.JobDone || got.Attempts != 1 {
			t.Fatalf("job: got %+v, want done on its first attempt", got)
		}
	})
	t.Run("OKPaused", func(t *testing.T) {
		t.Parallel()
		srv := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "m1"})
		srv.Script(modeltest.Rule{Path: "/api/chat", Action: modeltest.Action{Content: reply}})
		s := newModelSetup(t, models.Config{URL: srv.URL, Location: time.UTC})
		s.router.SetPaused(true)
		j := enqueueExtraction(t, s.db, "", "notes")
		waits(t, s, j)
		s.router.SetPaused(false)
		if !runOnce(t, s.w) {
			t.Fatal("the job did not run after the pause")
		}
	})
	t.Run("OKSpentWhileLeased", func(t *testing.T) {
		t.Parallel()
		// The chain's first model breaks the schema and spends the last
		// call; the second is not sent: the job is given back.
		srv := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "m1"}, modeltest.Model{Name: "m2"})
		srv.Script(
			modeltest.Rule{Path: "/api/chat", Model: "m1", Times: 1, Action: modeltest.Action{Content: `{"nope":1}`}},
			modeltest.Rule{Path: "/api/chat", Action: modeltest.Action{Content: reply}},
		)
		s := newModelSetup(t, models.Config{URL: srv.URL, Location: time.UTC, Budget: models.Budget{Calls: 1},
			Chains: map[models.Kind][]string{models.Extraction: {"m1", "m2"}}})
		j := enqueueExtraction(t, s.db, "", "notes")
		if !runOnce(t, s.w) {
			t.Fatal("the job was not leased")
		}
		got, _ := s.db.Job(ctx, j.ID)
		if got.State != storage.JobQueued || got.Attempts != 0 || !strings.Contains(got.LastError, "model budget") {
			t.Fatalf("job: got %+v, want queued again with no attempt spent", got)
		}
		if n := len(chats(srv)); n != 1 {
			t.Fatalf("chat requests: got %d, want 1", n)
		}
		s.clock.Add(14 * time.Hour)
		if !runOnce(t, s.w) {
			t.Fatal("the job did not run on the next day")
		}
		if got, _ := s.db.Job(ctx, j.ID); got.State != storage.JobDone || got.Attempts != 1 {
			t.Fatalf("job: got %+v, want done", got)
		}
		if len(candidates(t, s.db)) != 1 {
			t.Fatal("no candidate stored")
		}
	})
}
