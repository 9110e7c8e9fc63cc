package server

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hearth-memory/hearth/server/auth"
	"github.com/hearth-memory/hearth/storage"
)

// Calls without a valid token are audited coalesced, so that a flood of
// them can neither fill the disk nor queue up behind the single writer
// (issue #20). Within one minute of the store's clock:
//
//   - the first refusal of a source address and reason ("no credentials",
//     "unknown token", "malformed authorization") is written at once, as
//     any refusal is;
//   - the later ones of that source and reason are only counted, and one
//     row with the count is written when the minute is over;
//   - at most RefusalEntries source-and-reason pairs are kept apart;
//     refusals of any further pair share one "other sources" entry, which
//     follows the same two rules.
//
// So unauthenticated calls add at most MaxRefusalRowsPerMinute audit rows
// per minute however many arrive, and a refusal that is only counted costs
// no write at all. Refusals of known clients (a missing scope) and those a
// request earned (a screened value, a stale revision) are written one by
// one: their callers hold valid tokens.
const (
	// RefusalEntries is how many source-and-reason pairs a minute keeps
	// apart.
	RefusalEntries = 10
	// MaxRefusalRowsPerMinute bounds the audit rows unauthenticated calls
	// add in one minute: a first row and a count row for each entry kept
	// apart and for the shared one.
	MaxRefusalRowsPerMinute = 2 * (RefusalEntries + 1)
)

// refusalWindow is the span refusals are coalesced over.
const refusalWindow = time.Minute

// shared is the key of the entry the pairs past RefusalEntries share.
var shared = refusalKey{addr: "other sources", reason: "any reason"}

type refusalKey struct {
	addr, reason string
}

type refusalCount struct {
	n      int    // refusals after the first
	method string // the last one's method
}

// refusals coalesces unauthenticated refusals; see the comment above.
type refusals struct {
	s  *Server
	mu sync.Mutex
	// window is the start of the current minute (zero before the first).
	window time.Time
	// entries holds the current minute's entries with their counts.
	entries map[refusalKey]*refusalCount
	timer   *time.Timer
	closed  bool
}

func newRefusals(s *Server) *refusals {
	return &refusals{s: s, entries: map[refusalKey]*refusalCount{}}
}

// add audits or counts one unauthenticated refusal.
func (rf *refusals) add(ctx context.Context, r auth.Refusal) {
	now := rf.s.db.Now().UTC()
	w := now.Truncate(refusalWindow)
	addr := "unknown address"
	if r.Addr.IsValid() {
		addr = r.Addr.String()
	}
	rf.mu.Lock()
	var due []storage.Refusal
	if !w.Equal(rf.window) {
		due = rf.drain()
		rf.window = w
	}
	key := refusalKey{addr: addr, reason: r.Reason}
	e, seen := rf.entries[key]
	if _, sharing := rf.entries[shared]; !seen && len(rf.entries) >= RefusalEntries+boolInt(sharing) {
		key = shared
		e, seen = rf.entries[key]
	}
	first := !seen
	if first {
		rf.entries[key] = &refusalCount{method: r.Method}
	} else {
		e.n++
		e.method = r.Method
		rf.schedule()
	}
	rf.mu.Unlock()

	for _, d := range due {
		rf.s.refuse(ctx, d)
	}
	if first {
		detail := "from " + addr + ": " + r.Method + ": " + r.Reason
		if key == shared {
			detail = fmt.Sprintf("from %s (more than %d sources and reasons this minute; the rest are counted together): %s: %s",
				addr, RefusalEntries, r.Method, r.Reason)
		}
		rf.s.refuse(ctx, storage.Refusal{Action: storage.ActionRefuseAuth, Detail: detail})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// drain returns the count rows of the minute that ended and starts an
// empty one. rf.mu is held.
func (rf *refusals) drain() []storage.Refusal {
	var out []storage.Refusal
	for k, e := range rf.entries {
		if e.n == 0 {
			continue
		}
		out = append(out, storage.Refusal{Action: storage.ActionRefuseAuth, Detail: fmt.Sprintf(
			"%d more refusals from %s (%s) in the minute from %s UTC, the last %s",
			e.n, k.addr, k.reason, rf.window.Format("2006-01-02 15:04"), e.method)})
	}
	rf.entries = map[refusalKey]*refusalCount{}
	return out
}

// schedule arranges for the counts to be written once the minute is over,
// even if no refusal follows. rf.mu is held.
func (rf *refusals) schedule() {
	if rf.timer != nil || rf.closed {
		return
	}
	wait := rf.window.Add(refusalWindow).Sub(rf.s.db.Now()) + time.Second
	wait = max(wait, time.Second)
	rf.timer = time.AfterFunc(wait, rf.tick)
}

// tick writes the counts of a minute that is over by the store's clock;
// while the minute lasts (a clock that tests hold still) it waits again.
func (rf *refusals) tick() {
	rf.mu.Lock()
	rf.timer = nil
	if rf.closed {
		rf.mu.Unlock()
		return
	}
	var due []storage.Refusal
	if w := rf.s.db.Now().UTC().Truncate(refusalWindow); !w.Equal(rf.window) {
		due = rf.drain()
		rf.window = w
	} else {
		rf.schedule()
	}
	rf.mu.Unlock()
	for _, d := range due {
		rf.s.refuse(context.Background(), d)
	}
}

// close writes the counts still held, whatever the minute, and stops the
// timer. The daemon calls it once the gRPC server has stopped, so no
// refusal arrives after it.
func (rf *refusals) close(ctx context.Context) {
	rf.mu.Lock()
	rf.closed = true
	if rf.timer != nil {
		rf.timer.Stop()
		rf.timer = nil
	}
	due := rf.drain()
	rf.mu.Unlock()
	for _, d := range due {
		rf.s.refuse(ctx, d)
	}
}
