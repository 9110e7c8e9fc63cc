package models_test

import (
	"context"
	"errors"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/server/models"
	"github.com/hearth-memory/hearth/server/models/modeltest"
)

// ledger is a Ledger in memory, standing in for the store's across a
// restart of the router.
type ledger struct {
	mu     sync.Mutex
	days   map[string]map[string]models.Usage
	paused bool
}

func newLedger() *ledger { return &ledger{days: map[string]map[string]models.Usage{}} }

func (l *ledger) Load(_ context.Context, day string) (map[string]models.Usage, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.days[day]), l.paused, nil
}

func (l *ledger) Add(_ context.Context, day, server string, u models.Usage) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.days[day] == nil {
		l.days[day] = map[string]models.Usage{}
	}
	cur := l.days[day][server]
	cur.Calls += u.Calls
	cur.PromptTokens += u.PromptTokens
	cur.CompletionTokens += u.CompletionTokens
	cur.Estimated += u.Estimated
	l.days[day][server] = cur
	return nil
}

// TestRouter_Budget holds the daily cap of each server: calls and tokens
// (as the server reports them, or estimated) count per local day; a server
// that spent its cap gets no request, a call then fails with ErrBudget
// without reaching any server, and the next day or Resume lets calls go
// again. Pause stops every call.
func TestRouter_Budget(t *testing.T) {
	t.Parallel()
	t.Run("CallsCapMidSession", func(t *testing.T) {
		t.Parallel()
		srv := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "m1"})
		srv.Script(modeltest.Rule{Path: "/api/chat", Action: modeltest.Action{Content: oneMemory}})
		clk := newClock()
		r := newRouter(t, models.Config{URL: srv.URL, Now: clk.Now, Location: time.UTC, Budget: models.Budget{Calls: 2}})
		for i := range 2 {
			if _, err := r.Call(ctx, request(models.Extraction), nil); err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
		}
		if !status(r, srv.URL).Spent || r.Available() || !r.Budget().Waiting {
			t.Fatalf("after 2 calls of 2: spent %v, available %v, budget %+v", status(r, srv.URL).Spent, r.Available(), r.Budget())
		}
		_, err := r.Call(ctx, request(models.Extraction), nil)
		if !errors.Is(err, models.ErrBudget) {
			t.Fatalf("third call: got %v, want ErrBudget", err)
		}
		if n := srv.Count("/api/chat"); n != 2 {
			t.Fatalf("chat requests: got %d, want 2 (none past the cap)", n)
		}
		if got := status(r, srv.URL).Today; got.Calls != 2 || got.PromptTokens != 68 || got.CompletionTokens != 24 || got.Estimated != 0 {
			t.Errorf("today: got %+v, want 2 calls, 68+24 reported tokens", got)
		}
		// The day rolls over at local midnight: the budget starts again.
		clk.Add(21 * time.Hour)
		if !r.Available() || status(r, srv.URL).Spent {
			t.Fatalf("next day: available %v, spent %v", r.Available(), status(r, srv.URL).Spent)
		}
		if _, err := r.Call(ctx, request(models.Extraction), nil); err != nil {
			t.Fatalf("next day's call: %v", err)
		}
		if got := status(r, srv.URL); got.Today.Calls != 1 || got.Total.Calls != 3 {
			t.Errorf("next day: today %+v total %+v", got.Today, got.Total)
		}
	})
	t.Run("TokensCapEstimated", func(t *testing.T) {
		t.Parallel()
		srv := modeltest.New(t, modeltest.LlamaServer, modeltest.Model{Path: "/m1.gguf"})
		srv.Script(modeltest.Rule{Path: srv.ChatPath(), Action: modeltest.Action{Content: oneMemory, NoUsage: true}})
		clk := newClock()
		req := request(models.Extraction)
		est := models.Estimate(&req, []byte(oneMemory))
		// Room for two calls' tokens, not three.
		r := newRouter(t, models.Config{URL: srv.URL, Now: clk.Now, Location: time.UTC, Budget: models.Budget{Tokens: 2*est.Tokens() + 1}})
		for i := range 3 {
			if _, err := r.Call(ctx, req, nil); err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
		}
		if _, err := r.Call(ctx, req, nil); !errors.Is(err, models.ErrBudget) {
			t.Fatalf("fourth call: got %v, want ErrBudget", err)
		}
		got := status(r, srv.URL).Today
		if got.Calls != 3 || got.Estimated != 3 || got.Tokens() != 3*est.Tokens() {
			t.Errorf("today: got %+v, want 3 estimated calls of %d tokens", got, est.Tokens())
		}
	})
	t.Run("ReportedOpenAI", func(t *testing.T) {
		t.Parallel()
		srv := modeltest.New(t, modeltest.LlamaServer, modeltest.Model{Path: "/m1.gguf"})
		srv.Script(modeltest.Rule{Path: srv.ChatPath(), Action: modeltest.Action{Content: oneMemory, PromptTokens: 700, ReplyTokens: 301}})
		r := newRouter(t, models.Config{URL: srv.URL, Budget: models.Budget{Tokens: 1000}})
		if _, err := r.Call(ctx, request(models.Extraction), nil); err != nil {
			t.Fatal(err)
		}
		if got := status(r, srv.URL); got.Today.PromptTokens != 700 || got.Today.CompletionTokens != 301 || !got.Spent {
			t.Fatalf("got %+v spent %v, want 700+301 tokens and the cap reached", got.Today, got.Spent)
		}
	})
	t.Run("SpentServerPassedOver", func(t *testing.T) {
		t.Parallel()
		a := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "m1"})
		b := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "m1"})
		for _, s := range []*modeltest.Server{a, b} {
			s.Script(modeltest.Rule{Path: "/api/chat", Action: modeltest.Action{Content: oneMemory}})
		}
		r := newRouter(t, models.Config{URL: a.URL, DirectURLs: []string{b.URL}, Budget: models.Budget{Calls: 1}})
		for i := range 2 {
			if _, err := r.Call(ctx, request(models.Extraction), nil); err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
		}
		if a.Count("/api/chat") != 1 || b.Count("/api/chat") != 1 {
			t.Fatalf("requests: primary %d, direct %d; want 1 each (the direct server takes over from a spent primary)",
				a.Count("/api/chat"), b.Count("/api/chat"))
		}
		if _, err := r.Call(ctx, request(models.Extraction), nil); !errors.Is(err, models.ErrBudget) {
			t.Fatalf("third call: got %v, want ErrBudget", err)
		}
	})
	t.Run("PauseResumeAcrossRestart", func(t *testing.T) {
		t.Parallel()
		srv := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "m1"})
		srv.Script(modeltest.Rule{Path: "/api/chat", Action: modeltest.Action{Content: oneMemory}})
		clk, l := newClock(), newLedger()
		cfg := models.Config{URL: srv.URL, Now: clk.Now, Location: time.UTC, Budget: models.Budget{Calls: 1}, Ledger: l}
		r := newRouter(t, cfg)
		if err := r.Restore(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Call(ctx, request(models.Extraction), nil); err != nil {
			t.Fatal(err)
		}
		// A new router over the same ledger (a restart) knows the day's
		// calls: the cap holds.
		r = newRouter(t, cfg)
		if err := r.Restore(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Call(ctx, request(models.Extraction), nil); !errors.Is(err, models.ErrBudget) {
			t.Fatalf("after restart: got %v, want ErrBudget", err)
		}
		if spent := r.StartOver(); spent[srv.URL].Calls != 1 {
			t.Fatalf("StartOver: spent %+v", spent)
		}
		if _, err := r.Call(ctx, request(models.Extraction), nil); err != nil {
			t.Fatalf("after resume: %v", err)
		}
		if !r.SetPaused(true) {
			t.Fatal("SetPaused(true): nothing changed")
		}
		l.paused = true         // as the store keeps it
		clk.Add(24 * time.Hour) // a pause outlasts the day
		r = newRouter(t, cfg)
		if err := r.Restore(ctx); err != nil {
			t.Fatal(err)
		}
		if st := r.Budget(); !st.Paused || !st.Waiting || r.Available() {
			t.Fatalf("paused after restart: %+v available %v", st, r.Available())
		}
		if _, err := r.Call(ctx, request(models.Extraction), nil); !errors.Is(err, models.ErrBudget) {
			t.Fatalf("paused: got %v, want ErrBudget", err)
		}
		if n := srv.Count("/api/chat"); n != 2 {
			t.Fatalf("chat requests: got %d, want 2", n)
		}
		if !r.SetPaused(false) {
			t.Fatal("SetPaused(false): nothing changed")
		}
		if !r.Available() {
			t.Fatal("resumed: not available")
		}
	})
	t.Run("NoCap", func(t *testing.T) {
		t.Parallel()
		srv := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "m1"})
		srv.Script(modeltest.Rule{Path: "/api/chat", Action: modeltest.Action{Content: oneMemory}})
		r := newRouter(t, models.Config{URL: srv.URL})
		for range 5 {
			if _, err := r.Call(ctx, request(models.Extraction), nil); err != nil {
				t.Fatal(err)
			}
		}
		if st := status(r, srv.URL); st.Spent || st.Today.Calls != 5 {
			t.Fatalf("got %+v", st)
		}
	})
}
