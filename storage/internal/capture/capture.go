// Package capture is what a harness's captured events become below the
// record domain (docs/capture.md; docs/design.md, "Storage layout"): the
// events and their kinds, the facts they coalesce into (one per file, one
// per command line, one for a session's compactions), how a fact reads as
// an observation, what a namespace's last session left off, and the purge
// of both tables.
//
// It works inside the engine's transactions (*engine.Tx) and knows nothing
// of records: which record holds a fact's observation, and whether it may
// still change, is the storage package's. Its refusals are *errs.Error.
package capture

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hearth-memory/hearth/storage/internal/engine"
	"github.com/hearth-memory/hearth/storage/internal/errs"
	"github.com/hearth-memory/hearth/storage/screen"
)

// Event kinds.
const (
	Edit    = "edit"
	Command = "command"
	Compact = "compact"
)

// Confidence is the confidence of an observation record: it says what
// happened, which is certain, but not that it still matters.
const Confidence = 0.5

// maxTitle is the title limit an observation keeps to.
const maxTitle = 100

// Event is one captured event as the server checked and screened it.
type Event struct {
	ID        string
	SessionID screen.Text
	Harness   string
	Namespace string
	Kind      string
	At        time.Time
	Path      screen.Text
	Created   bool
	Command   screen.Text
	OK        bool
	ExitCode  int
	Tests     []screen.Text
	Errors    []screen.Text
	Summary   screen.Text
}

// Result counts what one capture call did.
type Result struct {
	// Accepted counts events kept now, Replayed those whose id was kept
	// before (they change nothing), Observations the records stored or
	// updated.
	Accepted, Replayed, Observations int
}

// Validate returns Invalid, its Field prefixed by field, for an event
// without a session, namespace, an edit's path or a command's command
// line, or of another kind. The event's id is the caller's to check (it
// is an op_id).
func (ev *Event) Validate(field string) error {
	switch {
	case ev.SessionID.String() == "":
		return errs.Errorf(errs.Invalid, field+"session_id", "is required")
	case ev.Namespace == "":
		return errs.Errorf(errs.Invalid, field+"namespace", "is required")
	case ev.Kind == Edit && ev.Path.String() == "":
		return errs.Errorf(errs.Invalid, field+"path", "is required for an edit")
	case ev.Kind == Command && ev.Command.String() == "":
		return errs.Errorf(errs.Invalid, field+"command", "is required for a command")
	case ev.Kind != Edit && ev.Kind != Command && ev.Kind != Compact:
		return errs.Errorf(errs.Invalid, field+"kind", "must be edit, command or compact")
	}
	return nil
}

// state is a coalesced fact's state (capture_facts.state): one file's
// edits, one command's runs or a session's compactions.
type state struct {
	Path    string `json:"path,omitempty"`
	Edits   int    `json:"edits,omitempty"`
	Created bool   `json:"created,omitempty"`

	Command  string   `json:"command,omitempty"`
	Runs     int      `json:"runs,omitempty"`
	Fails    int      `json:"fails,omitempty"`
	LastOK   bool     `json:"last_ok,omitempty"`
	LastCode int      `json:"last_code,omitempty"`
	LastAt   int64    `json:"last_at,omitempty"`
	Switches int      `json:"switches,omitempty"`
	Tests    []string `json:"tests,omitempty"`
	Errors   []string `json:"errors,omitempty"`

	Compactions int    `json:"compactions,omitempty"`
	Summary     string `json:"summary,omitempty"`
}

// Fact is one row of capture_facts while a call works on it.
type Fact struct {
	// Namespace is where its observation is stored; RecordID is that
	// record ("" before the first), which the caller sets when it stores
	// a new one.
	Namespace, RecordID string

	sessionID, key, harness, kind string
	state                         state
	firstAt, lastAt               int64
}

// key is the key a kind's event coalesces under: one fact per file, per
// command line, and one for a session's compactions.
func key(ev *Event) string {
	switch ev.Kind {
	case Edit:
		return "file:" + ev.Path.String()
	case Command:
		return "cmd:" + ev.Command.String()
	}
	return "compact"
}

// Keep records events, which passed Validate, in tx: an event id seen
// before is counted in res as replayed and changes nothing; the others
// are counted as accepted and coalesce into their facts. It returns the
// facts that changed, in the order of their first event; the caller
// observes each, then saves it (Save).
func Keep(ctx context.Context, tx *engine.Tx, events []Event, res *Result) ([]*Fact, error) {
	facts := map[[3]string]*Fact{}
	var order []*Fact
	for i := range events {
		ev := &events[i]
		r, err := tx.ExecContext(ctx, `INSERT INTO capture_events (id, namespace, session_id, at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`,
			ev.ID, ev.Namespace, ev.SessionID.String(), ev.At.UnixMilli())
		if err != nil {
			return nil, errs.Wrap("capture", err)
		}
		if n, _ := r.RowsAffected(); n == 0 {
			res.Replayed++
			continue
		}
		res.Accepted++
		k := [3]string{ev.Namespace, ev.SessionID.String(), key(ev)}
		f := facts[k]
		if f == nil {
			if f, err = load(ctx, tx, k, ev); err != nil {
				return nil, err
			}
			facts[k] = f
			order = append(order, f)
		}
		f.apply(ev)
	}
	return order, nil
}

// Save writes f's row.
func Save(ctx context.Context, tx *engine.Tx, f *Fact) error {
	st, _ := json.Marshal(f.state)
	_, err := tx.ExecContext(ctx, `
		INSERT INTO capture_facts (namespace, session_id, key, harness, kind, state, record_id, first_at, last_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (namespace, session_id, key) DO UPDATE SET
			state = excluded.state, record_id = excluded.record_id, last_at = excluded.last_at`,
		f.Namespace, f.sessionID, f.key, f.harness, f.kind, string(st), f.RecordID, f.firstAt, f.lastAt)
	return errs.Wrap("capture", err)
}

// load reads a fact, or starts one for ev.
func load(ctx context.Context, tx *engine.Tx, k [3]string, ev *Event) (*Fact, error) {
	f := &Fact{Namespace: k[0], sessionID: k[1], key: k[2], harness: ev.Harness, kind: ev.Kind,
		firstAt: ev.At.UnixMilli(), lastAt: ev.At.UnixMilli()}
	var st string
	err := tx.QueryRowContext(ctx, `SELECT harness, state, record_id, first_at, last_at FROM capture_facts
		WHERE namespace = ? AND session_id = ? AND key = ?`, k[0], k[1], k[2]).Scan(&f.harness, &st, &f.RecordID, &f.firstAt, &f.lastAt)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return f, nil
	case err != nil:
		return nil, errs.Wrap("capture", err)
	}
	if err := json.Unmarshal([]byte(st), &f.state); err != nil {
		return nil, fmt.Errorf("capture: fact %s: %w", k[2], err)
	}
	return f, nil
}

// apply coalesces one new event into the fact (docs/capture.md).
func (f *Fact) apply(ev *Event) {
	at := ev.At.UnixMilli()
	f.firstAt, f.lastAt = min(f.firstAt, at), max(f.lastAt, at)
	s := &f.state
	switch ev.Kind {
	case Edit:
		s.Path = ev.Path.String()
		s.Edits++
		s.Created = s.Created || ev.Created
	case Command:
		s.Command = ev.Command.String()
		s.Runs++
		if !ev.OK {
			s.Fails++
		}
		// The last run is the latest by time; an event that arrives late
		// counts but does not change it.
		if at < s.LastAt {
			return
		}
		if s.Runs > 1 && ev.OK != s.LastOK {
			s.Switches++
		}
		s.LastOK, s.LastCode, s.LastAt = ev.OK, ev.ExitCode, at
		if !ev.OK {
			s.Tests, s.Errors = textsOf(ev.Tests), textsOf(ev.Errors)
		}
	case Compact:
		s.Compactions++
		if ev.Summary.String() != "" {
			s.Summary = ev.Summary.String()
		}
	}
}

func textsOf(ts []screen.Text) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.String())
	}
	return out
}

// Observation is the fact as its observation record reads, screened: a
// title cut to 100 characters at a word, and the content
// (docs/capture.md).
func (f *Fact) Observation() (title, content screen.Text) {
	t, c := f.render()
	return screen.Redact(cutTitle(t)), screen.Redact(c)
}

// render is the fact's observation as a title and content.
func (f *Fact) render() (title, content string) {
	s := &f.state
	who := fmt.Sprintf("session %s (%s)", f.sessionID, f.harness)
	switch f.kind {
	case Edit:
		verb := "Edited"
		if s.Created {
			verb = "Created"
		}
		return verb + " " + s.Path, fmt.Sprintf("%s %s in %s: %s.", verb, s.Path, who, times(s.Edits, "edit"))
	case Command:
		cmd := "`" + s.Command + "`"
		last := "passed"
		if !s.LastOK {
			last = "failed"
			if s.LastCode > 0 {
				last += fmt.Sprintf(" (exit code %d)", s.LastCode)
			}
		}
		switch {
		case s.Switches >= 2:
			title = fmt.Sprintf("%s is flaky: %d of %d runs failed", cmd, s.Fails, s.Runs)
		case !s.LastOK:
			title = cmd + " fails"
			if detail := failDetail(s); detail != "" {
				title += ": " + detail
			}
		case s.Fails > 0:
			title = cmd + " failed, then passed"
		default:
			title = cmd + " passed"
		}
		var b strings.Builder
		fmt.Fprintf(&b, "In %s, %s ran %s (%d failed); the last run %s.", who, cmd, times(s.Runs, "time"), s.Fails, last)
		if len(s.Tests) > 0 {
			fmt.Fprintf(&b, "\nFailing tests of the last failed run: %s.", strings.Join(s.Tests, ", "))
		}
		if len(s.Errors) > 0 {
			fmt.Fprintf(&b, "\nIts first error lines:\n%s", strings.Join(s.Errors, "\n"))
		}
		return title, b.String()
	}
	content = fmt.Sprintf("The context of %s was compacted %s.", who, times(s.Compactions, "time"))
	if s.Summary != "" {
		content += "\nBefore the last compaction: " + s.Summary
	}
	return "Context compacted in " + who, content
}

// failDetail names a failing command's tests, else its first error line.
func failDetail(s *state) string {
	if len(s.Tests) > 0 {
		return strings.Join(s.Tests, ", ")
	}
	if len(s.Errors) > 0 {
		return s.Errors[0]
	}
	return ""
}

func times(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

// cutTitle cuts a title to maxTitle characters at a word, with an
// ellipsis.
func cutTitle(s string) string {
	if utf8.RuneCountInString(s) <= maxTitle {
		return s
	}
	r := []rune(s)[:maxTitle-1]
	if i := strings.LastIndexByte(string(r), ' '); i > maxTitle/2 {
		return string(r)[:i] + "…"
	}
	return string(r) + "…"
}

// LeftOff is what a namespace's last captured session touched and left
// failing.
type LeftOff struct {
	SessionID string
	Harness   string
	LastAt    time.Time
	// Touched are the files it edited or created, most edited first (then
	// by path); Failing the facts of the commands whose last run failed,
	// latest first.
	Touched []string
	Failing []FailingCommand
}

// FailingCommand is a command a session left failing.
type FailingCommand struct {
	Command string
	Tests   []string
	Errors  []string
}

// LastSession returns what the namespace's last captured session other
// than exceptSession (the one asking) left off, or nil when there is none.
func LastSession(ctx context.Context, tx *engine.Tx, namespace, exceptSession string) (*LeftOff, error) {
	var sid, harness string
	var last int64
	err := tx.QueryRowContext(ctx, `SELECT session_id, harness, last_at FROM capture_facts
		WHERE namespace = ? AND session_id <> ? ORDER BY last_at DESC LIMIT 1`, namespace, exceptSession).Scan(&sid, &harness, &last)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, errs.Wrap("left off", err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT kind, state, last_at FROM capture_facts WHERE namespace = ? AND session_id = ?`, namespace, sid)
	if err != nil {
		return nil, errs.Wrap("left off", err)
	}
	defer rows.Close()
	lo := &LeftOff{SessionID: sid, Harness: harness}
	type edit struct {
		path string
		n    int
	}
	type failing struct {
		FailingCommand
		at int64
	}
	var edits []edit
	var fails []failing
	for rows.Next() {
		var kind, st string
		var at int64
		if err := rows.Scan(&kind, &st, &at); err != nil {
			return nil, errs.Wrap("left off", err)
		}
		last = max(last, at)
		var s state
		if json.Unmarshal([]byte(st), &s) != nil {
			continue
		}
		switch {
		case kind == Edit:
			edits = append(edits, edit{s.Path, s.Edits})
		case kind == Command && !s.LastOK:
			fails = append(fails, failing{FailingCommand{s.Command, s.Tests, s.Errors}, s.LastAt})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, errs.Wrap("left off", err)
	}
	slices.SortFunc(edits, func(a, b edit) int { return cmp.Or(b.n-a.n, strings.Compare(a.path, b.path)) })
	slices.SortFunc(fails, func(a, b failing) int { return cmp.Compare(b.at, a.at) })
	for _, e := range edits {
		lo.Touched = append(lo.Touched, e.path)
	}
	for _, f := range fails {
		lo.Failing = append(lo.Failing, f.FailingCommand)
	}
	lo.LastAt = time.UnixMilli(last).UTC()
	return lo, nil
}

// Purge deletes the events and facts of capture last seen at or before
// cutoff; the observation records are the caller's to expire.
func Purge(ctx context.Context, tx *engine.Tx, cutoff time.Time) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM capture_events WHERE at <= ?`, cutoff.UnixMilli()); err != nil {
		return errs.Wrap("purge capture", err)
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM capture_facts WHERE last_at <= ?`, cutoff.UnixMilli())
	return errs.Wrap("purge capture", err)
}
