package storage

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

	"github.com/hearth-memory/hearth/storage/screen"
)

// Capture event kinds.
const (
	CaptureEdit    = "edit"
	CaptureCommand = "command"
	CaptureCompact = "compact"
)

// CaptureConfidence is the confidence of an observation record: it says
// what happened, which is certain, but not that it still matters.
const CaptureConfidence = 0.5

// maxObservationTitle is the title limit an observation keeps to.
const maxObservationTitle = 100

// CaptureEvent is one captured event as the server checked and screened it.
type CaptureEvent struct {
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

// CaptureResult counts what one Capture call did.
type CaptureResult struct {
	// Accepted counts events kept now, Replayed those whose id was kept
	// before (they change nothing), Observations the records stored or
	// updated.
	Accepted, Replayed, Observations int
}

// factState is a coalesced fact's state (capture_facts.state): one file's
// edits, one command's runs or a session's compactions.
type factState struct {
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

// fact is one row of capture_facts while a call works on it.
type fact struct {
	namespace, sessionID, key, harness, kind string
	state                                    factState
	recordID                                 string
	firstAt, lastAt                          int64
	dirty                                    bool
}

// factKey is the key a kind's event coalesces under: one fact per file,
// per command line, and one for a session's compactions.
func factKey(ev *CaptureEvent) string {
	switch ev.Kind {
	case CaptureEdit:
		return "file:" + ev.Path.String()
	case CaptureCommand:
		return "cmd:" + ev.Command.String()
	}
	return "compact"
}

// Capture keeps events in one transaction (docs/capture.md): an event id
// seen before is counted as replayed and changes nothing; the others update
// the facts they coalesce into, and each fact whose text changed stores or
// updates its observation record (type note, source capture, active),
// written as writer. An observation that was forgotten stays forgotten, and
// one a client promoted (its type changed from note) keeps its text.
func (db *DB) Capture(ctx context.Context, writer string, events []CaptureEvent) (CaptureResult, error) {
	var res CaptureResult
	if writer == "" {
		return res, errorf(Invalid, "writer", "is required")
	}
	for i := range events {
		if err := events[i].validate(fmt.Sprintf("events[%d].", i)); err != nil {
			return res, err
		}
	}
	err := db.write(ctx, "capture", func(tx *txn) error {
		res = CaptureResult{}
		return captureTx(ctx, db, tx, writer, events, &res)
	})
	return res, err
}

func (ev *CaptureEvent) validate(field string) error {
	if err := CheckOpID(field+"id", ev.ID); err != nil {
		return err
	}
	switch {
	case ev.SessionID.String() == "":
		return errorf(Invalid, field+"session_id", "is required")
	case ev.Namespace == "":
		return errorf(Invalid, field+"namespace", "is required")
	case ev.Kind == CaptureEdit && ev.Path.String() == "":
		return errorf(Invalid, field+"path", "is required for an edit")
	case ev.Kind == CaptureCommand && ev.Command.String() == "":
		return errorf(Invalid, field+"command", "is required for a command")
	case ev.Kind != CaptureEdit && ev.Kind != CaptureCommand && ev.Kind != CaptureCompact:
		return errorf(Invalid, field+"kind", "must be edit, command or compact")
	}
	return nil
}

func captureTx(ctx context.Context, db *DB, tx *txn, writer string, events []CaptureEvent, res *CaptureResult) error {
	facts := map[[3]string]*fact{}
	var order []*fact
	for i := range events {
		ev := &events[i]
		r, err := tx.ExecContext(ctx, `INSERT INTO capture_events (id, namespace, session_id, at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`,
			ev.ID, ev.Namespace, ev.SessionID.String(), ev.At.UnixMilli())
		if err != nil {
			return classify("capture", err)
		}
		if rowsAffected(r) == 0 {
			res.Replayed++
			continue
		}
		res.Accepted++
		k := [3]string{ev.Namespace, ev.SessionID.String(), factKey(ev)}
		f := facts[k]
		if f == nil {
			if f, err = loadFactTx(ctx, tx, k, ev); err != nil {
				return err
			}
			facts[k] = f
			order = append(order, f)
		}
		f.apply(ev)
	}
	for _, f := range order {
		if !f.dirty {
			continue
		}
		changed, err := f.observe(ctx, db, tx, writer)
		if err != nil {
			return err
		}
		if changed {
			res.Observations++
		}
		state, _ := json.Marshal(f.state)
		if _, err := tx.ExecContext(ctx, `
			INSERT INTO capture_facts (namespace, session_id, key, harness, kind, state, record_id, first_at, last_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (namespace, session_id, key) DO UPDATE SET
				state = excluded.state, record_id = excluded.record_id, last_at = excluded.last_at`,
			f.namespace, f.sessionID, f.key, f.harness, f.kind, string(state), f.recordID, f.firstAt, f.lastAt); err != nil {
			return classify("capture", err)
		}
	}
	return nil
}

// loadFactTx reads a fact, or starts one for ev.
func loadFactTx(ctx context.Context, tx *txn, k [3]string, ev *CaptureEvent) (*fact, error) {
	f := &fact{namespace: k[0], sessionID: k[1], key: k[2], harness: ev.Harness, kind: ev.Kind,
		firstAt: ev.At.UnixMilli(), lastAt: ev.At.UnixMilli()}
	var state string
	err := tx.QueryRowContext(ctx, `SELECT harness, state, record_id, first_at, last_at FROM capture_facts
		WHERE namespace = ? AND session_id = ? AND key = ?`, k[0], k[1], k[2]).Scan(&f.harness, &state, &f.recordID, &f.firstAt, &f.lastAt)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return f, nil
	case err != nil:
		return nil, classify("capture", err)
	}
	if err := json.Unmarshal([]byte(state), &f.state); err != nil {
		return nil, fmt.Errorf("capture: fact %s: %w", k[2], err)
	}
	return f, nil
}

// apply coalesces one new event into the fact (docs/capture.md).
func (f *fact) apply(ev *CaptureEvent) {
	f.dirty = true
	at := ev.At.UnixMilli()
	f.firstAt, f.lastAt = min(f.firstAt, at), max(f.lastAt, at)
	s := &f.state
	switch ev.Kind {
	case CaptureEdit:
		s.Path = ev.Path.String()
		s.Edits++
		s.Created = s.Created || ev.Created
	case CaptureCommand:
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
	case CaptureCompact:
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

// observe stores or updates the fact's observation record when its text
// changed; it reports whether it wrote one.
func (f *fact) observe(ctx context.Context, db *DB, tx *txn, writer string) (bool, error) {
	title, content := f.render()
	t, c := screen.Redact(cutTitle(title)), screen.Redact(content)
	if f.recordID != "" {
		cur, err := findRecordTx(ctx, tx, f.recordID)
		switch {
		case ErrorCode(err) == NotFound:
			// Purged: the fact starts a new record below.
		case err != nil:
			return false, err
		case !cur.Live() || cur.Type != TypeNote:
			return false, nil // forgotten, or promoted: left as it is
		case cur.Title == t.String() && cur.Content == c.String():
			return false, nil
		default:
			if _, err := updateTx(ctx, tx, cur.ID, cur.Revision, Changes{Title: &t, Content: &c}, writer); err != nil {
				return false, err
			}
			return true, nil
		}
	}
	nr := NewRecord{
		Namespace: f.namespace, Type: TypeNote, Title: t, Content: c, Confidence: CaptureConfidence,
		Writer: writer, Source: SourceCapture, Status: StatusActive,
		Topics: []screen.Text{screen.Redact(SourceCapture)},
	}
	if err := nr.validate(); err != nil {
		return false, err
	}
	rec, err := db.storeTx(ctx, tx, nr)
	if err != nil {
		return false, err
	}
	f.recordID = rec.ID
	return true, nil
}

// render is the fact's observation as a title and content (docs/capture.md).
func (f *fact) render() (title, content string) {
	s := &f.state
	who := fmt.Sprintf("session %s (%s)", f.sessionID, f.harness)
	switch f.kind {
	case CaptureEdit:
		verb := "Edited"
		if s.Created {
			verb = "Created"
		}
		return verb + " " + s.Path, fmt.Sprintf("%s %s in %s: %s.", verb, s.Path, who, times(s.Edits, "edit"))
	case CaptureCommand:
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
func failDetail(s *factState) string {
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

// cutTitle cuts a title to maxObservationTitle characters at a word, with
// an ellipsis.
func cutTitle(s string) string {
	if utf8.RuneCountInString(s) <= maxObservationTitle {
		return s
	}
	r := []rune(s)[:maxObservationTitle-1]
	if i := strings.LastIndexByte(string(r), ' '); i > maxObservationTitle/2 {
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

// LeftOff returns the namespace's last captured session other than
// exceptSession (the one asking), or nil when there is none.
func (db *DB) LeftOff(ctx context.Context, namespace, exceptSession string) (*LeftOff, error) {
	var out *LeftOff
	err := db.read(ctx, "left off", func(tx *txn) error {
		var sid, harness string
		var last int64
		err := tx.QueryRowContext(ctx, `SELECT session_id, harness, last_at FROM capture_facts
			WHERE namespace = ? AND session_id <> ? ORDER BY last_at DESC LIMIT 1`, namespace, exceptSession).Scan(&sid, &harness, &last)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return classify("left off", err)
		}
		rows, err := tx.QueryContext(ctx, `SELECT kind, state, last_at FROM capture_facts WHERE namespace = ? AND session_id = ?`, namespace, sid)
		if err != nil {
			return classify("left off", err)
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
			var kind, state string
			var at int64
			if err := rows.Scan(&kind, &state, &at); err != nil {
				return classify("left off", err)
			}
			last = max(last, at)
			var s factState
			if json.Unmarshal([]byte(state), &s) != nil {
				continue
			}
			switch {
			case kind == CaptureEdit:
				edits = append(edits, edit{s.Path, s.Edits})
			case kind == CaptureCommand && !s.LastOK:
				fails = append(fails, failing{FailingCommand{s.Command, s.Tests, s.Errors}, s.LastAt})
			}
		}
		if err := rows.Err(); err != nil {
			return classify("left off", err)
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
		out = lo
		return nil
	})
	return out, err
}

// expireCaptureTx forgets observation records older than retention that no
// one fetched, cited or promoted, and purges capture's own rows of that
// age; it returns how many records it forgot (docs/capture.md).
func expireCaptureTx(ctx context.Context, tx *txn, retention time.Duration) (int, error) {
	cutoff := tx.Now.Add(-retention).UnixMilli()
	ids, err := idsTx(ctx, tx, `
		SELECT r.id FROM records AS r
		WHERE r.source = 'capture' AND r.type = 'note' AND r.status = 'active' AND r.updated_at <= ?
			AND r.proof_count = 0
			AND NOT EXISTS (SELECT 1 FROM usage AS u WHERE u.record_id = r.id AND u.fetched > 0)
			AND NOT EXISTS (SELECT 1 FROM answer_sources AS a WHERE a.record_id = r.id)
		ORDER BY r.id`, cutoff)
	if err != nil {
		return 0, err
	}
	days := int(retention / (24 * time.Hour))
	reason := screen.Redact(fmt.Sprintf("expired: an observation older than %d days, never fetched, cited or promoted (capture_retention_days)", days))
	for _, id := range ids {
		if _, err := forgetTx(ctx, tx, id, 0, reason, SystemClient); err != nil {
			return 0, err
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM capture_events WHERE at <= ?`, cutoff); err != nil {
		return 0, classify("purge capture", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM capture_facts WHERE last_at <= ?`, cutoff); err != nil {
		return 0, classify("purge capture", err)
	}
	return len(ids), nil
}
