package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hearth-memory/hearth/storage/screen"
)

// DefaultAuditLimit is how many rows AuditLog returns when asked for none.
const DefaultAuditLimit = 100

// SystemClient is the audit client of what Hearth does by itself: at start,
// and in maintenance runs.
const SystemClient = "hearth"

// Action is the verb of an audit row. Hearth writes only the actions below;
// their strings are what memory_audit and the page show, so they never
// change.
type Action string

// The audit actions.
const (
	// ActionStore: a record was stored (Store, and a summary candidate of a
	// session close).
	ActionStore Action = "store"
	// ActionUpdate: a record was changed; the detail names the fields.
	ActionUpdate Action = "update"
	// ActionForget: a record was forgotten; the detail is the reason.
	ActionForget Action = "forget"
	// ActionSupersede: a record was retired by the one the detail names.
	ActionSupersede Action = "supersede"
	// ActionEvidence: a client gave its stance on a record.
	ActionEvidence Action = "evidence"
	// ActionSessionClose: a session was closed.
	ActionSessionClose Action = "session-close"
	// ActionMaintenance: a maintenance run, with its counts.
	ActionMaintenance Action = "maintenance"
	// ActionRename: namespaces were renamed at start.
	ActionRename Action = "rename"
	// ActionUsageStart marks when usage counting began (docs/design.md R-K6).
	ActionUsageStart Action = "usage-start"
	// ActionAnchor: anchors of a record changed state, by a client's
	// report or a sweep; the detail names each as "<anchor> <old>→<new>"
	// with what the check found.
	ActionAnchor Action = "anchor"
	// ActionBackup: a verified backup was written; the detail names the
	// file, its records and bytes.
	ActionBackup Action = "backup"
	// ActionImport: a record was imported (memory_import); the detail says
	// how it was written.
	ActionImport Action = "import"
	// ActionTokenGenerate: a client's token was generated and its file
	// written.
	ActionTokenGenerate Action = "token.generate"
	// ActionTokenRotate: a client's token was replaced; the old one is
	// refused from then on.
	ActionTokenRotate Action = "token.rotate"
	// ActionIntegrity: a nightly integrity check of the database file, with
	// what it found (integrity.go here and in package engine).
	ActionIntegrity Action = "integrity"
	// ActionRepair: the full-text index failed its check and was rebuilt
	// from the records; the detail says what was wrong.
	ActionRepair Action = "repair"
	// ActionAuditPrune: audit rows past audit_retention_days were
	// deleted; the detail says how many and up to when (maintenance.go).
	ActionAuditPrune Action = "audit.prune"

	// ActionRefuseAuth: a call without a valid token, or without the scope
	// its method needs.
	ActionRefuseAuth Action = "refuse.auth"
	// ActionRefuseScreen: a value that looked like a secret (docs/design.md R-S2).
	ActionRefuseScreen Action = "refuse.screen"
	// ActionRefuseConflict: a stale revision, or an op_id taken by another
	// close.
	ActionRefuseConflict Action = "refuse.conflict"
	// ActionRefuseExpired: a session close replayed past its retention.
	ActionRefuseExpired Action = "refuse.expired"
	// ActionRefuseDiskFull: the writes refused while the disk was full, one
	// row per episode with the count, written once space is back
	// (diskfull.go here and in package engine).
	ActionRefuseDiskFull Action = "refuse.disk-full"
)

// refusal reports whether a is one of the ActionRefuse* actions.
func (a Action) refusal() bool {
	switch a {
	case ActionRefuseAuth, ActionRefuseScreen, ActionRefuseConflict, ActionRefuseExpired, ActionRefuseDiskFull:
		return true
	}
	return false
}

// AuditEntry is one row of the append-only audit log (docs/design.md R-R7).
// Namespace and RecordID may be empty.
type AuditEntry struct {
	At        time.Time
	Client    string
	Action    Action
	Namespace string
	RecordID  string
	Detail    screen.Text
}

// Audit appends e in a transaction of its own, for an event that changes no
// record. A zero At takes the clock's time. Mutations write their own audit
// rows, and refusals go through Refuse, which words their detail; callers
// need neither.
//
// It returns Invalid (Field "action") when Action is empty.
func (db *DB) Audit(ctx context.Context, e AuditEntry) error {
	if e.Action == "" {
		return errorf(Invalid, "action", "is required")
	}
	return db.writeGrouped(ctx, opAudit, func(tx *txn) error {
		return insertAuditTx(ctx, tx, e)
	})
}

// RefusalEntry is a request Hearth refused, as the audit records it (docs/design.md R-R7,
// R-S2): who was refused, by which rule and why, never the refused value.
// Every refusal row is written through Refuse or refuseTx.
type RefusalEntry struct {
	// Client is the caller; "" (unknown, as before authentication) is
	// written as "-".
	Client string
	// Action is one of the ActionRefuse* actions.
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

// Refuse appends the audit row of r in a transaction of its own.
//
// It returns Invalid (Field "action") when r.Action is not a refusal.
func (db *DB) Refuse(ctx context.Context, r RefusalEntry) error {
	e, err := r.entry()
	if err != nil {
		return err
	}
	return db.writeGrouped(ctx, opRefuse, func(tx *txn) error {
		return insertAuditTx(ctx, tx, e)
	})
}

// refuseTx appends the audit row of r inside the caller's transaction, for
// a refusal that is part of a request that goes on (a close whose notes were
// refused).
func refuseTx(ctx context.Context, tx *txn, r RefusalEntry) error {
	e, err := r.entry()
	if err != nil {
		return err
	}
	return insertAuditTx(ctx, tx, e)
}

// entry is the audit row of r.
func (r RefusalEntry) entry() (AuditEntry, error) {
	if !r.Action.refusal() {
		return AuditEntry{}, errorf(Invalid, "action", "%q is not a refusal", r.Action)
	}
	e := AuditEntry{Client: r.Client, Action: r.Action, Namespace: r.Namespace, RecordID: r.RecordID}
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

// insertAuditTx appends e; a zero At becomes the transaction's time. A row
// naming a record keeps the record's revision as it stands in tx (after the
// change, for a row that made one; see history.go).
func insertAuditTx(ctx context.Context, tx *txn, e AuditEntry) error {
	at := tx.Now
	if !e.At.IsZero() {
		at = e.At.UTC()
	}
	if _, err := tx.ExecContext(ctx, `
		INSERT INTO audit (at, client, action, namespace, record_id, detail, revision)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, (SELECT revision FROM records WHERE id = ?5 AND ?5 <> ''))`,
		at.UnixMilli(), e.Client, string(e.Action), e.Namespace, e.RecordID, e.Detail.String(),
	); err != nil {
		return classify("audit", err)
	}
	return nil
}

// insertAuditsTx appends entries in one statement, in order, each at the
// transaction's time (At is ignored): for a change of many records at once.
func insertAuditsTx(ctx context.Context, tx *txn, entries []AuditEntry) error {
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
	if _, err := tx.ExecContext(ctx, `
		INSERT INTO audit (at, client, action, namespace, record_id, detail)
		SELECT ?, value ->> 'c', value ->> 'a', value ->> 'n', value ->> 'r', value ->> 'd'
		FROM json_each(?) ORDER BY key`,
		tx.Now.UnixMilli(), string(list),
	); err != nil {
		return classify("audit", err)
	}
	return nil
}

// AuditLog returns the latest limit audit rows, newest (last appended)
// first. limit <= 0 means DefaultAuditLimit.
func (db *DB) AuditLog(ctx context.Context, limit int) ([]AuditEntry, error) {
	if limit <= 0 {
		limit = DefaultAuditLimit
	}
	var out []AuditEntry
	err := db.read(ctx, "audit log", func(tx *txn) (err error) {
		out, err = auditLogTx(ctx, tx, limit)
		return err
	})
	return out, err
}

func auditLogTx(ctx context.Context, tx *txn, limit int) ([]AuditEntry, error) {
	rows, err := tx.QueryContext(ctx, `
		SELECT at, client, action, namespace, record_id, detail
		FROM audit ORDER BY seq DESC LIMIT +?`, limit)
	if err != nil {
		return nil, classify("audit log", err)
	}
	defer rows.Close()
	var out []AuditEntry
	for rows.Next() {
		var (
			e      AuditEntry
			at     int64
			detail string
		)
		if err := rows.Scan(&at, &e.Client, &e.Action, &e.Namespace, &e.RecordID, &detail); err != nil {
			return nil, classify("audit log", err)
		}
		e.At = time.UnixMilli(at).UTC()
		// The row was screened when it was written.
		e.Detail = screen.Redact(detail)
		out = append(out, e)
	}
	return out, classify("audit log", rows.Err())
}
