package server

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hearth-memory/hearth/server/auth"
	"github.com/hearth-memory/hearth/storage"
)

// Refused calls are audited coalesced, so that a flood of them can neither
// fill the disk nor queue up behind the single writer (issues #20, #41).
// Two kinds are coalesced, each on its own: calls without a valid token, by
// source address and reason ("no credentials", "unknown token", "malformed
// authorization"), and calls of a known client (a token or an address
// client) whose method needs a scope it lacks, by client and method.
// Within one minute of the store's clock, for each kind:
//
//   - the first refusal of a pair is written at once, as any refusal is;
//   - the later ones of that pair are only counted, and one row with the
//     count is written when the minute is over;
//   - at most RefusalEntries pairs are kept apart; refusals of any further
//     pair share one "others" entry, which follows the same two rules.
//
// So each kind adds at most MaxRefusalRowsPerMinute audit rows per minute
// however many calls arrive, and a refusal that is only counted costs no
// write at all. Refusals a request earned (a screened value, a stale
// revision) are written one by one: their callers hold valid tokens.
const (
	// RefusalEntries is how many pairs a minute keeps apart, for each kind.
	RefusalEntries = 10
	// MaxRefusalRowsPerMinute bounds the audit rows one kind adds in one
	// minute: a first row and a count row for each entry kept apart and
	// for the shared one.
	MaxRefusalRowsPerMinute = 2 * (RefusalEntries + 1)
	// MaxRefusalKinds is how many kinds are coalesced so: together they
	// add at most MaxRefusalKinds*MaxRefusalRowsPerMinute rows a minute.
	MaxRefusalKinds = 2
)

// refusalWindow is the span refusals are coalesced over.
const refusalWindow = time.Minute

// refusalKey keeps two pairs apart: a source address and a reason, or a
// client and a method.
type refusalKey struct {
	who, what string
}

type refusalCount struct {
	n int // refusals after the first
	// last is the last one counted.
	last auth.Denial
}

// refusalKind says how one kind of refusal is coalesced: its pairs, and
// the audit rows of its first refusals and of its counts.
type refusalKind struct {
	// key is the pair a refusal belongs to.
	key func(r auth.Denial) refusalKey
	// shared is the key of the entry the pairs past RefusalEntries share.
	shared refusalKey
	// first is the row of a pair's first refusal in a minute (shared:
	// the first of the shared entry's).
	first func(k refusalKey, r auth.Denial, shared bool) storage.RefusalEntry
	// count is the row of the n later refusals of k in the minute from
	// window, the last of them last.
	count func(k refusalKey, n int, window time.Time, last auth.Denial) storage.RefusalEntry
}

// unauthenticated coalesces calls without a valid token by source address
// and reason.
var unauthenticated = refusalKind{
	key: func(r auth.Denial) refusalKey {
		addr := "unknown address"
		if r.Addr.IsValid() {
			addr = r.Addr.String()
		}
		return refusalKey{who: addr, what: r.Reason}
	},
	shared: refusalKey{who: "other sources", what: "any reason"},
	first: func(k refusalKey, r auth.Denial, shared bool) storage.RefusalEntry {
		detail := "from " + k.who + ": " + r.Method + ": " + r.Reason
		if shared {
			detail = fmt.Sprintf("from %s (more than %d sources and reasons this minute; the rest are counted together): %s: %s",
				sourceOf(r), RefusalEntries, r.Method, r.Reason)
		}
		return storage.RefusalEntry{Action: storage.ActionRefuseAuth, Detail: detail}
	},
	count: func(k refusalKey, n int, window time.Time, last auth.Denial) storage.RefusalEntry {
		return storage.RefusalEntry{Action: storage.ActionRefuseAuth, Detail: fmt.Sprintf(
			"%d more refusals from %s (%s) in the minute from %s UTC, the last %s",
			n, k.who, k.what, window.Format("2006-01-02 15:04"), last.Method)}
	},
}

// outOfScope coalesces a known client's calls of methods that need a
// scope it lacks, by client and method.
var outOfScope = refusalKind{
	key:    func(r auth.Denial) refusalKey { return refusalKey{who: r.Client, what: r.Method} },
	shared: refusalKey{who: "other clients", what: "other methods"},
	first: func(k refusalKey, r auth.Denial, shared bool) storage.RefusalEntry {
		detail := r.Method + ": " + r.Reason
		if shared {
			detail = fmt.Sprintf("%s: %s (more than %d clients and methods this minute; the rest are counted together)",
				r.Method, r.Reason, RefusalEntries)
		}
		return storage.RefusalEntry{Client: r.Client, Action: storage.ActionRefuseAuth, Detail: detail}
	},
	count: func(k refusalKey, n int, window time.Time, last auth.Denial) storage.RefusalEntry {
		if k.who == "other clients" {
			return storage.RefusalEntry{Action: storage.ActionRefuseAuth, Detail: fmt.Sprintf(
				"%d more refusals of other clients and methods (out of scope) in the minute from %s UTC, the last %s: %s",
				n, window.Format("2006-01-02 15:04"), last.Method, last.Reason)}
		}
		return storage.RefusalEntry{Client: k.who, Action: storage.ActionRefuseAuth, Detail: fmt.Sprintf(
			"%d more refusals of %s in the minute from %s UTC: %s",
			n, k.what, window.Format("2006-01-02 15:04"), last.Reason)}
	},
}

// sourceOf is a refusal's source address as the audit names it.
func sourceOf(r auth.Denial) string {
	if r.Addr.IsValid() {
		return r.Addr.String()
	}
	return "unknown address"
}

// refusals coalesces one kind of refusal; see the comment above.
type refusals struct {
	s    *Server
	kind refusalKind
	mu   sync.Mutex
	// window is the start of the current minute (zero before the first).
	window time.Time
	// entries holds the current minute's entries with their counts.
	entries map[refusalKey]*refusalCount
	timer   *time.Timer
	closed  bool
}

func newRefusals(s *Server, kind refusalKind) *refusals {
	return &refusals{s: s, kind: kind, entries: map[refusalKey]*refusalCount{}}
}

// add audits or counts one refusal.
func (rf *refusals) add(ctx context.Context, r auth.Denial) {
	now := rf.s.db.Now().UTC()
	w := now.Truncate(refusalWindow)
	rf.mu.Lock()
	var due []storage.RefusalEntry
	if !w.Equal(rf.window) {
		due = rf.drain()
		rf.window = w
	}
	key := rf.kind.key(r)
	e, seen := rf.entries[key]
	if _, sharing := rf.entries[rf.kind.shared]; !seen && len(rf.entries) >= RefusalEntries+boolInt(sharing) {
		key = rf.kind.shared
		e, seen = rf.entries[key]
	}
	first := !seen
	if first {
		rf.entries[key] = &refusalCount{last: r}
	} else {
		e.n++
		e.last = r
		rf.schedule()
	}
	rf.mu.Unlock()

	for _, d := range due {
		rf.s.refuse(ctx, d)
	}
	if first {
		rf.s.refuse(ctx, rf.kind.first(key, r, key == rf.kind.shared))
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
func (rf *refusals) drain() []storage.RefusalEntry {
	var out []storage.RefusalEntry
	for k, e := range rf.entries {
		if e.n == 0 {
			continue
		}
		out = append(out, rf.kind.count(k, e.n, rf.window, e.last))
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
	var due []storage.RefusalEntry
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
