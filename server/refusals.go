package server

import (
	"context"
	"fmt"
	"time"

	"github.com/hearth-memory/hearth/server/auth"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/flush"
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

// refusals coalesces one kind of refusal; see the comment above. Its
// buffer holds the current minute's pairs: a count row is due when the
// minute is over by the store's clock (a second after, so that a clock a
// little behind still finds it over), or when a refusal of the next minute
// arrives, or at close.
type refusals struct {
	s    *Server
	kind refusalKind
	buf  *flush.Buffer[refusalMinute]
}

// refusalMinute is one minute's pairs with their counts.
type refusalMinute struct {
	// window is the start of the minute (zero before the first refusal).
	window  time.Time
	entries map[refusalKey]*refusalCount
	// counted is how many entries hold refusals after the first: the
	// count rows due.
	counted int
}

func newRefusals(s *Server, kind refusalKind) *refusals {
	rf := &refusals{s: s, kind: kind}
	rf.buf = flush.New(flush.Policy[refusalMinute]{
		New:   func() refusalMinute { return refusalMinute{entries: map[refusalKey]*refusalCount{}} },
		Write: rf.writeCounts,
		Delay: func(m refusalMinute) time.Duration {
			return max(m.window.Add(refusalWindow).Sub(s.db.Now())+time.Second, time.Second)
		},
		Ended: func(m refusalMinute) bool {
			return !m.window.IsZero() && !m.window.Equal(s.db.Now().UTC().Truncate(refusalWindow))
		},
	})
	return rf
}

// add audits or counts one refusal.
func (rf *refusals) add(ctx context.Context, r auth.Denial) {
	var (
		key   refusalKey
		first bool
	)
	if !rf.buf.Add(func(m *refusalMinute) int {
		if m.window.IsZero() {
			m.window = rf.s.db.Now().UTC().Truncate(refusalWindow)
		}
		key = rf.kind.key(r)
		e, seen := m.entries[key]
		if _, sharing := m.entries[rf.kind.shared]; !seen && len(m.entries) >= RefusalEntries+boolInt(sharing) {
			key = rf.kind.shared
			e, seen = m.entries[key]
		}
		first = !seen
		switch {
		case first:
			m.entries[key] = &refusalCount{last: r}
		case e.n == 0:
			m.counted++
			fallthrough
		default:
			e.n++
			e.last = r
		}
		return m.counted
	}) {
		// Closed: nothing coalesces any more, so the refusal is written as is.
		key, first = rf.kind.key(r), true
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

// writeCounts writes the count rows of a minute.
func (rf *refusals) writeCounts(ctx context.Context, m refusalMinute) error {
	for k, e := range m.entries {
		if e.n > 0 {
			rf.s.refuse(ctx, rf.kind.count(k, e.n, m.window, e.last))
		}
	}
	return nil
}

// close writes the counts still held, whatever the minute, and stops the
// timer. The daemon calls it once the gRPC server has stopped, so no
// refusal arrives after it.
func (rf *refusals) close(ctx context.Context) {
	_ = rf.buf.Close(ctx) // writeCounts logs its failures and returns none
}
