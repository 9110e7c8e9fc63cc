package storage

import (
	"context"
	"errors"

	"github.com/hearth-memory/hearth/storage/screen"
)

// Store writes a new record at revision 1 with its anchors (state unknown) and
// an audit row, and, when Supersedes is set, retires that record in the same
// transaction. It returns the record as stored.
//
// It returns Invalid for a missing or out-of-enum field (Field names it), a
// confidence outside (0, 1], or a refused supersession (Field "supersedes");
// NotFound (Field "supersedes") when the record to supersede does not exist.
// A refusal writes nothing.
func (db *DB) Store(ctx context.Context, nr NewRecord) (*Record, error) {
	if err := nr.validate(); err != nil {
		return nil, err
	}
	var rec *Record
	if err := db.writeGrouped(ctx, "store", func(tx *txn) (err error) {
		rec, err = db.storeTx(ctx, tx, nr)
		return err
	}); err != nil {
		return nil, err
	}
	return rec, nil
}

func (nr *NewRecord) validate() error {
	if err := checkRecord(nr.Namespace, nr.Type, nr.Title, nr.Content, nr.Confidence); err != nil {
		return err
	}
	switch {
	case nr.Writer == "":
		return errorf(Invalid, "writer", "is required")
	case !ValidSource(nr.Source):
		return CheckSource("source", nr.Source)
	case !liveStatus(nr.Status):
		return errorf(Invalid, "status", "a new record is active or candidate")
	}
	if err := screenNamespace(nr.Namespace); err != nil {
		return err
	}
	if _, err := texts("topics", nr.Topics); err != nil {
		return err
	}
	if _, err := texts("anchors", nr.Anchors); err != nil {
		return err
	}
	return parseAnchors("anchors", nr.Anchors)
}

// checkRecord checks what every new record holds, a stored or an imported
// one: a namespace, a record type, a title and content that are not blank,
// and a confidence in (0, 1]. It returns the first fault as Invalid naming
// the field.
func checkRecord(ns, typ string, title, content screen.Text, confidence float64) error {
	if ns == "" {
		return errorf(Invalid, "namespace", "is required")
	}
	if err := CheckType("type", typ); err != nil {
		return err
	}
	if err := CheckRequired("title", title.String()); err != nil {
		return err
	}
	if err := CheckRequired("content", content.String()); err != nil {
		return err
	}
	return CheckConfidence("confidence", confidence)
}

// screenNamespace refuses a namespace that screens as a secret. Namespaces
// are plain strings in this package (their charset is narrow), but one like
// projects/do-not-store must still never be written. It returns Invalid
// naming the field and the pattern.
func screenNamespace(ns string) error {
	if _, err := screen.Check("namespace", ns); err != nil {
		var ref *screen.Refusal
		if errors.As(err, &ref) {
			return errorf(Invalid, "namespace", "refused: looks like a secret (pattern %s)", ref.Pattern)
		}
		return err
	}
	return nil
}

// storeTx inserts a validated record and returns it as stored.
func (db *DB) storeTx(ctx context.Context, tx *txn, nr NewRecord) (*Record, error) {
	id, err := db.newID(tx.Now)
	if err != nil {
		return nil, err
	}
	topics, _ := texts("topics", nr.Topics)
	anchors, _ := texts("anchors", nr.Anchors)
	now := tx.Now.UnixMilli()
	if _, err := tx.ExecContext(ctx, `
		INSERT INTO records (
			id, namespace, type, title, content, status, revision, writer,
			confidence, effective_confidence, topics, source, created_at, updated_at
		) VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?)`,
		id, nr.Namespace, nr.Type, nr.Title.String(), nr.Content.String(), nr.Status, nr.Writer,
		nr.Confidence, nr.Confidence, topicsJSON(topics), nr.Source, now, now,
	); err != nil {
		return nil, classify("store", err)
	}
	newAnchors := make([]Anchor, len(anchors))
	for i, a := range anchors {
		newAnchors[i] = Anchor{Anchor: a, State: AnchorUnknown}
	}
	if err := insertAnchorsTx(ctx, tx, id, newAnchors); err != nil {
		return nil, err
	}
	if err := insertAuditTx(ctx, tx, AuditEntry{
		Client: nr.Writer, Action: ActionStore, Namespace: nr.Namespace, RecordID: id,
		Detail: screen.Redact(nr.Type + " " + nr.Status),
	}); err != nil {
		return nil, err
	}
	rec := &Record{
		ID: id, Namespace: nr.Namespace, Type: nr.Type, Title: nr.Title.String(), Content: nr.Content.String(),
		Status: nr.Status, Revision: 1, Writer: nr.Writer, Confidence: nr.Confidence, EffectiveConfidence: nr.Confidence,
		Anchors: newAnchors, Topics: topics, Source: nr.Source, CreatedAt: tx.Now, UpdatedAt: tx.Now,
	}
	if len(rec.Anchors) == 0 {
		rec.Anchors = nil
	}
	if len(rec.Topics) == 0 {
		rec.Topics = nil
	}
	if nr.Supersedes != "" {
		if err := supersedeTx(ctx, tx, rec, nr.Supersedes, "supersedes", nr.Writer); err != nil {
			return nil, err
		}
		rec.Supersedes = nr.Supersedes
	}
	// Built here rather than read back: Store is the hot path of imports and
	// extraction, and TestDB_Store holds that Get returns the same record.
	return rec, nil
}
