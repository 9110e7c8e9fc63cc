package models

import (
	"context"
	"errors"
	"time"
)

// ErrBudget: no call could be made because every live server spent its
// daily budget (model_daily_calls, model_daily_tokens) or calls are paused.
// The call was not sent; a job that meets it waits, its attempt not counted
// (docs/operations.md, "Model budget").
var ErrBudget = errors.New("models: the daily model budget is spent or model calls are paused")

// Budget is the daily cap of each model server: calls (model_daily_calls)
// and tokens, prompt and reply together (model_daily_tokens). 0 means no
// cap.
type Budget struct {
	Calls, Tokens int64
}

// Usage is what calls spent: calls sent, and the tokens of their prompts
// and replies as the server reported them (Ollama's prompt_eval_count and
// eval_count, OpenAI-style usage.prompt_tokens and completion_tokens), or
// as Estimate made them for a reply that reported none (Estimated counts
// those calls).
type Usage struct {
	Calls, PromptTokens, CompletionTokens, Estimated int64
}

// Tokens is the prompt and reply tokens together.
func (u Usage) Tokens() int64 { return u.PromptTokens + u.CompletionTokens }

func (u *Usage) add(d Usage) {
	u.Calls += d.Calls
	u.PromptTokens += d.PromptTokens
	u.CompletionTokens += d.CompletionTokens
	u.Estimated += d.Estimated
}

// reported is the usage a reply stated; zero when it stated none.
func reported(prompt, completion int64) Usage {
	return Usage{PromptTokens: max(prompt, 0), CompletionTokens: max(completion, 0)}
}

// bytesPerToken is the rough size of a token in the estimates: about three
// bytes, as contextTokens in server/workers counts them.
const bytesPerToken = 3

// Estimate is the usage of a call whose server reported no tokens: its
// prompt (system and user messages) and its reply at three bytes a token,
// rounded up.
func Estimate(req *Request, reply []byte) Usage {
	up := func(n int) int64 { return int64((n + bytesPerToken - 1) / bytesPerToken) }
	return Usage{PromptTokens: up(len(req.System) + len(req.User)), CompletionTokens: up(len(reply)), Estimated: 1}
}

// Ledger keeps each day's usage and the pause across restarts, so that a
// restart does not give a server a new day's budget. The daemon passes one
// over the store; nil keeps them in memory only.
type Ledger interface {
	// Load returns the usage of day (Day's form) by server URL, and
	// whether calls are paused.
	Load(ctx context.Context, day string) (map[string]Usage, bool, error)
	// Add adds u to server's usage of day.
	Add(ctx context.Context, day, server string, u Usage) error
}

// Day is the budget day of t in loc: its date, YYYY-MM-DD. The budget
// starts over at local midnight.
func Day(t time.Time, loc *time.Location) string { return t.In(loc).Format(time.DateOnly) }

// nextDay is the local midnight after t.
func nextDay(t time.Time, loc *time.Location) time.Time {
	l := t.In(loc)
	return time.Date(l.Year(), l.Month(), l.Day()+1, 0, 0, 0, 0, loc)
}

// BudgetStatus is the budget as memory_status, /metrics and the page show
// it.
type BudgetStatus struct {
	// Cap is the daily cap of each server.
	Cap Budget
	// Day is the budget day (Day); ResetsAt when the next one starts.
	Day      string
	ResetsAt time.Time
	// Paused is whether an admin paused model calls.
	Paused bool
	// Waiting is whether model work waits on the budget: calls are paused,
	// or every live server spent its cap.
	Waiting bool
}

// spentLocked reports whether s reached its cap today. r.mu is held.
func (r *Router) spentLocked(s *server) bool {
	b := r.budget
	return (b.Calls > 0 && s.today.Calls >= b.Calls) || (b.Tokens > 0 && s.today.Tokens() >= b.Tokens)
}

// rollLocked starts a new budget day when the clock passed midnight. r.mu
// is held.
func (r *Router) rollLocked() {
	day := Day(r.now(), r.loc)
	if day == r.day {
		return
	}
	r.day = day
	for _, s := range r.servers {
		s.today = Usage{}
	}
}

// take counts a call about to be sent to s, or reports false when s spent
// its cap or calls are paused; then nothing is counted.
func (r *Router) take(s *server) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rollLocked()
	if r.paused || r.spentLocked(s) {
		return false
	}
	s.today.Calls++
	return true
}

// charge adds the tokens of a call sent to s to its day and keeps the call
// in the ledger.
func (r *Router) charge(ctx context.Context, s *server, u Usage) {
	r.mu.Lock()
	r.rollLocked()
	s.today.add(Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, Estimated: u.Estimated})
	s.total.add(Usage{Calls: 1, PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, Estimated: u.Estimated})
	day := r.day
	r.mu.Unlock()
	if r.ledger != nil {
		u.Calls = 1
		if err := r.ledger.Add(context.WithoutCancel(ctx), day, s.url, u); err != nil && r.onLedgerError != nil {
			r.onLedgerError(err)
		}
	}
}

// Restore reads today's usage and the pause from the ledger (none: nothing
// to read). The daemon calls it once, before the workers start.
func (r *Router) Restore(ctx context.Context) error {
	if r.ledger == nil {
		return nil
	}
	r.mu.Lock()
	r.rollLocked()
	day := r.day
	r.mu.Unlock()
	used, paused, err := r.ledger.Load(ctx, day)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.paused = paused
	if day != r.day {
		return nil
	}
	for _, s := range r.servers {
		s.today = used[s.url]
	}
	return nil
}

// SetPaused stops model calls (a call in flight ends as it would) or lets
// them go again, and reports whether that changed anything. It changes the
// router only: the caller keeps the pause in the store (storage.DB.PauseModels),
// which Restore reads at the next start.
func (r *Router) SetPaused(paused bool) (changed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	changed = r.paused != paused
	r.paused = paused
	return changed
}

// StartOver starts today's count over for every server, so that a server
// that spent its cap gets a new one for the rest of the day (the resume of
// an admin), and returns what each had spent, by URL. Like SetPaused it
// changes the router only.
func (r *Router) StartOver() map[string]Usage {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rollLocked()
	spent := map[string]Usage{}
	for _, s := range r.servers {
		spent[s.url] = s.today
		s.today = Usage{}
	}
	return spent
}

// Budget returns the budget's state now.
func (r *Router) Budget() BudgetStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rollLocked()
	now := r.now()
	return BudgetStatus{
		Cap: r.budget, Day: r.day, ResetsAt: nextDay(now, r.loc), Paused: r.paused,
		Waiting: r.paused || (r.liveLocked(false) > 0 && r.liveLocked(true) == 0),
	}
}

// Available reports whether a call may go out now: calls are not paused and
// a live server has budget left (the gate of the model jobs).
func (r *Router) Available() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rollLocked()
	return !r.paused && r.liveLocked(true) > 0
}
