// Package audit is the append-only audit log's vocabulary (docs/design.md
// R-R7): the actions Hearth writes, a row and a refusal as they are
// recorded, and the statements that append and read rows in the engine's
// transaction. Which action a change of the record domain (package
// storage) writes, and when, is that domain's.
package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hearth-memory/hearth/storage/internal/engine"
	"github.com/hearth-memory/hearth/storage/internal/errs"
	"github.com/hearth-memory/hearth/storage/screen"
)

// DefaultLimit is how many rows Log returns when asked for none.
const DefaultLimit = 100

// SystemClient is the audit client of what Hearth does by itself: at start,
// and in maintenance runs.
const SystemClient = "hearth"

// Action is the verb of an audit row. Hearth writes only the actions below;
// their strings are what memory_audit and the page show, so they never
// change.
type Action string

// The audit actions.
const (
	// Store: a record was stored (Store, and a summary candidate of a
	// session close).
	Store Action = "store"
	// Update: a record was changed; the detail names the fields.
	Update Action = "update"
	// Forget: a record was forgotten; the detail is the reason.
	Forget Action = "forget"
	// Supersede: a record was retired by the one the detail names.
	Supersede Action = "supersede"
	// Evidence: a client gave its stance on a record.
	Evidence Action = "evidence"
	// SessionClose: a session was closed.
	SessionClose Action = "session-close"
	// Maintenance: a maintenance run, with its counts.
	Maintenance Action = "maintenance"
	// Rename: namespaces were renamed at start.
	Rename Action = "rename"
	// UsageStart marks when usage counting began (docs/design.md R-K6).
	UsageStart Action = "usage-start"
	// Anchor: anchors of a record changed state, by a client's
	// report or a sweep; the detail names each as "<anchor> <old>→<new>"
	// with what the check found.
	Anchor Action = "anchor"
	// Backup: a verified backup was written; the detail names the
	// file, its records and bytes.
	Backup Action = "backup"
	// Import: a record was imported (memory_import); the detail says
	// how it was written.
	Import Action = "import"
	// TokenGenerate: a client's token was generated and its file
	// written.
	TokenGenerate Action = "token.generate"
	// TokenRotate: a client's token was replaced; the old one is
	// refused from then on.
	TokenRotate Action = "token.rotate"
	// Integrity: a nightly integrity check of the database file, with
	// what it found (storage's integrity.go and package engine).
	Integrity Action = "integrity"
	// Repair: the full-text index failed its check and was rebuilt
	// from the records; the detail says what was wrong.
	Repair Action = "repair"
	// Prune: audit rows past audit_retention_days were
	// deleted; the detail says how many and up to when (storage's maintenance.go).
	Prune Action = "audit.prune"
	// QuestionAdd: a client declared a question (memory_question_add).
	QuestionAdd Action = "question-add"

	// RefuseAuth: a call without a valid token, or without the scope
	// its method needs.
	RefuseAuth Action = "refuse.auth"
	// RefuseScreen: a value that looked like a secret (docs/design.md R-S2).
	RefuseScreen Action = "refuse.screen"
	// RefuseConflict: a stale revision, or an op_id taken by another
	// close.
	RefuseConflict Action = "refuse.conflict"
	// RefuseExpired: a session close replayed past its retention.
	RefuseExpired Action = "refuse.expired"
	// RefuseDiskFull: the writes refused while the disk was full, one
	// row per episode with the count, written once space is back
	// (storage's diskfull.go and package engine).
	RefuseDiskFull Action = "refuse.disk-full"
)

// Refusal reports whether a is one of the Refuse* actions.
func (a Action) Refusal() bool {
	switch a {
	case RefuseAuth, RefuseScreen, RefuseConflict, RefuseExpired, RefuseDiskFull:
		return true
	}
	return false
}

// Entry is one row of the append-only audit log (docs/design.md R-R7).
// Namespace and RecordID may be empty.
type Entry struct {
	At        time.Time
	Client    string
	Action    Action
	Namespace string
	RecordID  string
	Detail    screen.Text
}

// Refusal is a request Hearth refused, as the audit records it (docs/design.md R-R7,
// R-S2): who was refused, by which rule and why, never the refused value.
// Every refusal row is made by its Entry.
type Refusal struct {
	// Client is the caller; "" (unknown, as before authentication) is
	// written as "-".
	Client string
	// Action is one of the Refuse* actions.
	Action    Action
	Namespace string
	RecordID  string
	// Field and Pattern describe a screen refusal: the request field and
	// the screen pattern its value matched. When Field is set, the row's
	// detail is "field <Field> pattern <Pattern>" and Detail is ignored.
	Field, Pattern string
	// Detail says why, for any other refusal. It is screened as it is
	// written: should it look like a secret, only the pattern's name is kept.
	Detail string
}

// Entry is the audit row of r. It returns Invalid (Field "action") when
// r.Action is not a refusal.
func (r Refusal) Entry() (Entry, error) {
	if !r.Action.Refusal() {
		return Entry{}, errs.Errorf(errs.Invalid, "action", "%q is not a refusal", r.Action)
	}
	e := Entry{Client: r.Client, Action: r.Action, Namespace: r.Namespace, RecordID: r.RecordID}
	if e.Client == "" {
		e.Client = "-"
	}
	detail := r.Detail
	if r.Field != "" {
		detail = "field " + r.Field + " pattern " + r.Pattern
	}
	e.Detail = screen.Redact(detail)
	return e, nil
}

// Insert appends e; a zero At becomes the transaction's time. A row
// naming a record keeps the record's revision as it stands in tx (after the
// change, for a row that made one; see storage's history.go).
func Insert(ctx context.Context, tx *engine.Tx, e Entry) error {
	at := tx.Now
	if !e.At.IsZero() {
		at = e.At.UTC()
	}
	_, err := tx.ExecContext(ctx, `
		INSERT INTO audit (at, client, action, namespace, record_id, detail, revision)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, (SELECT revision FROM records WHERE id = ?5 AND ?5 <> ''))`,
		at.UnixMilli(), e.Client, string(e.Action), e.Namespace, e.RecordID, e.Detail.String(),
	)
	return errs.Classify("audit", err)
}

// InsertMany appends entries in one statement, in order, each at the
// transaction's time (At is ignored): for a change of many records at once.
func InsertMany(ctx context.Context, tx *engine.Tx, entries []Entry) error {
	type row struct {
		Client    string `json:"c"`
		Action    string `json:"a"`
		Namespace string `json:"n"`
		RecordID  string `json:"r"`
		Detail    string `json:"d"`
	}
	rows := make([]row, len(entries))
	for i, e := range entries {
		rows[i] = row{e.Client, string(e.Action), e.Namespace, e.RecordID, e.Detail.String()}
	}
	list, err := json.Marshal(rows)
	if err != nil {
		return fmt.Errorf("storage: audit: %w", err)
	}
	_, err = tx.ExecContext(ctx, `
		INSERT INTO audit (at, client, action, namespace, record_id, detail)
		SELECT ?, value ->> 'c', value ->> 'a', value ->> 'n', value ->> 'r', value ->> 'd'
		FROM json_each(?) ORDER BY key`,
		tx.Now.UnixMilli(), string(list),
	)
	return errs.Classify("audit", err)
}

// Log returns the latest limit rows, newest (last appended) first.
func Log(ctx context.Context, tx *engine.Tx, limit int) ([]Entry, error) {
	rows, err := tx.QueryContext(ctx, `
		SELECT at, client, action, namespace, record_id, detail
		FROM audit ORDER BY seq DESC LIMIT +?`, limit)
	if err != nil {
		return nil, errs.Classify("audit log", err)
	}
	defer rows.Close()
	var out []Entry
	for rows.Next() {
		var (
			e      Entry
			at     int64
			detail string
		)
		if err := rows.Scan(&at, &e.Client, &e.Action, &e.Namespace, &e.RecordID, &detail); err != nil {
			return nil, errs.Classify("audit log", err)
		}
		e.At = time.UnixMilli(at).UTC()
		// The row was screened when it was written.
		e.Detail = screen.Redact(detail)
		out = append(out, e)
	}
	return out, errs.Classify("audit log", rows.Err())
}
