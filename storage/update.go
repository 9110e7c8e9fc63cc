package storage

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hearth-memory/hearth/storage/internal/anchors"
	"github.com/hearth-memory/hearth/storage/screen"
)

// Update applies ch to the record id if it is still at revision, advancing
// the revision by one and writing an audit row; a status change applies before
// a supersession, so one call may activate a candidate and let it supersede.
// Giving values equal to the current ones changes nothing: the record comes
// back at the same revision.
//
// It returns NotFound (Field "id") for an unknown record and NotFound (Field
// "changes.supersedes") for an unknown record to supersede; Conflict, with
// Current set, when revision is stale; Invalid when ch is empty or holds a bad
// value (Field "changes.<name>"), when the record is superseded or deleted
// (Field "id"), or when the supersession is refused. A refusal writes nothing.
func (db *DB) Update(ctx context.Context, id string, revision int, ch Changes, client string) (*Record, error) {
	if ch.empty() {
		return nil, errorf(Invalid, "changes", "changes nothing")
	}
	var rec *Record
	if err := db.writeGrouped(ctx, "update", func(tx *txn) (err error) {
		rec, err = updateTx(ctx, tx, id, revision, ch, client)
		return err
	}); err != nil {
		return nil, err
	}
	return rec, nil
}

// updateTx applies ch inside the caller's transaction: every field of
// updateFields in turn, then one UPDATE, the anchors when their list
// changed, one audit row naming what changed and, last, the supersession.
func updateTx(ctx context.Context, tx *txn, id string, revision int, ch Changes, client string) (*Record, error) {
	cur, err := findRecordTx(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	if cur.Revision != revision {
		return nil, conflict(cur, revision)
	}
	if !cur.Live() {
		return nil, errorf(Invalid, "id", "record is %s; only active and candidate records can be updated", cur.Status)
	}

	next := *cur
	var changed []string
	for _, f := range updateFields {
		if err := f.apply(&ch, &next); err != nil {
			return nil, err
		}
		if f.same(cur, &next) {
			continue
		}
		label := f.name
		if f.value != nil {
			label = fmt.Sprintf("%s (%s→%s)", f.name, f.value(cur), f.value(&next))
		}
		changed = append(changed, label)
	}
	if len(changed) == 0 {
		return cur, nil
	}

	if next.Confidence != cur.Confidence {
		// The evidence stays; it now applies to the new assertion.
		w, err := witnessTx(ctx, tx, id, cur.Writer, next.Confidence)
		if err != nil {
			return nil, err
		}
		next.EffectiveConfidence = w.effective
	}
	// The FTS trigger fires only when title or content differ, so setting
	// them to what they were does not reindex.
	if _, err := tx.ExecContext(ctx, `
		UPDATE records SET
			title = ?, content = ?, type = ?, status = ?, confidence = ?,
			effective_confidence = ?, topics = ?, revision = revision + 1, updated_at = ?
		WHERE id = ?`,
		next.Title, next.Content, next.Type, next.Status, next.Confidence,
		next.EffectiveConfidence, topicsJSON(next.Topics), tx.Now.UnixMilli(), id,
	); err != nil {
		return nil, classify("update", err)
	}
	if !sameAnchors(cur, &next) {
		if err := anchors.Replace(ctx, tx, id, next.Anchors); err != nil {
			return nil, err
		}
	}
	if err := insertAuditTx(ctx, tx, AuditEntry{
		Client: client, Action: ActionUpdate, Namespace: cur.Namespace, RecordID: id,
		Detail: screen.Redact("changed " + strings.Join(changed, ", ")),
	}); err != nil {
		return nil, err
	}
	if next.Supersedes != cur.Supersedes {
		if err := supersedeTx(ctx, tx, &next, next.Supersedes, "changes.supersedes", client); err != nil {
			return nil, err
		}
	}
	return findRecordTx(ctx, tx, id)
}

// updateFields are the fields Update changes, in the order it checks them
// and the audit names them. apply sets the field of next that ch names (and
// leaves it when ch names nothing), refusing a bad value as Invalid naming
// "changes.<name>"; same reports whether two records agree on the field.
// When value is set the audit shows the change as "name (old→new)",
// otherwise by name alone.
var updateFields = []struct {
	name  string
	apply func(ch *Changes, next *Record) error
	same  func(a, b *Record) bool
	value func(r *Record) string
}{
	{name: "title",
		apply: func(ch *Changes, r *Record) error {
			return set(&r.Title, unwrap(ch.Title), CheckRequired, "changes.title")
		},
		same: func(a, b *Record) bool { return a.Title == b.Title }},
	{name: "content",
		apply: func(ch *Changes, r *Record) error {
			return set(&r.Content, unwrap(ch.Content), CheckRequired, "changes.content")
		},
		same: func(a, b *Record) bool { return a.Content == b.Content }},
	{name: "type",
		apply: func(ch *Changes, r *Record) error {
			return set(&r.Type, ch.Type, CheckType, "changes.type")
		},
		same:  func(a, b *Record) bool { return a.Type == b.Type },
		value: func(r *Record) string { return r.Type }},
	{name: "status",
		apply: func(ch *Changes, r *Record) error {
			return set(&r.Status, ch.Status, CheckLive, "changes.status")
		},
		same:  func(a, b *Record) bool { return a.Status == b.Status },
		value: func(r *Record) string { return r.Status }},
	{name: "confidence",
		apply: func(ch *Changes, r *Record) error {
			return set(&r.Confidence, ch.Confidence, CheckConfidence, "changes.confidence")
		},
		same: func(a, b *Record) bool { return a.Confidence == b.Confidence }},
	{name: "topics",
		apply: func(ch *Changes, r *Record) (err error) {
			if ch.Topics != nil {
				r.Topics, err = texts("changes.topics", *ch.Topics)
			}
			return err
		},
		same: func(a, b *Record) bool { return slices.Equal(a.Topics, b.Topics) }},
	{name: "anchors",
		apply: func(ch *Changes, r *Record) error {
			if ch.Anchors == nil {
				return nil
			}
			names, err := texts("changes.anchors", *ch.Anchors)
			if err == nil {
				err = parseAnchors("changes.anchors", *ch.Anchors)
			}
			r.Anchors = anchors.KeepStates(r.Anchors, names)
			return err
		},
		same: sameAnchors},
	{name: "supersedes",
		apply: func(ch *Changes, r *Record) error {
			switch s := ch.Supersedes; {
			case s == nil:
				return nil
			case *s == "":
				return errorf(Invalid, "changes.supersedes", "must name a record")
			case *s == r.Supersedes:
				return nil // already done
			case r.Supersedes != "":
				return errorf(Invalid, "changes.supersedes", "record already supersedes %s", r.Supersedes)
			default:
				r.Supersedes = *s
				return nil
			}
		},
		same: func(a, b *Record) bool { return a.Supersedes == b.Supersedes }},
}

// set sets *dst to *v unless v is nil, refusing a value check refuses
// (with field named).
func set[T any](dst, v *T, check func(field string, v T) error, field string) error {
	if v == nil {
		return nil
	}
	*dst = *v
	return check(field, *v)
}

// unwrap is the string of a screened value, or nil.
func unwrap(t *screen.Text) *string {
	if t == nil {
		return nil
	}
	s := t.String()
	return &s
}

// sameAnchors reports whether a and b name the same anchors in the same order.
func sameAnchors(a, b *Record) bool {
	return slices.Equal(anchors.Names(a.Anchors), anchors.Names(b.Anchors))
}
