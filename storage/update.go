package storage

import (
	"context"
	"fmt"
	"slices"
	"strings"

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
		return nil, errorf(Invalid, "changes", "names nothing to change")
	}
	var rec *Record
	if err := db.write(ctx, "update", func(tx *txn) (err error) {
		rec, err = updateTx(ctx, tx, id, revision, ch, client)
		return err
	}); err != nil {
		return nil, err
	}
	return rec, nil
}

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
	if ch.Title != nil {
		if next.Title = ch.Title.String(); next.Title == "" {
			return nil, errorf(Invalid, "changes.title", "must not be empty")
		} else if next.Title != cur.Title {
			changed = append(changed, "title")
		}
	}
	if ch.Content != nil {
		if next.Content = ch.Content.String(); next.Content == "" {
			return nil, errorf(Invalid, "changes.content", "must not be empty")
		} else if next.Content != cur.Content {
			changed = append(changed, "content")
		}
	}
	if ch.Type != nil {
		if next.Type = *ch.Type; !ValidType(next.Type) {
			return nil, errorf(Invalid, "changes.type", "must be one of %s", strings.Join(Types, ", "))
		} else if next.Type != cur.Type {
			changed = append(changed, fmt.Sprintf("type (%s→%s)", cur.Type, next.Type))
		}
	}
	if ch.Status != nil {
		if next.Status = *ch.Status; next.Status != StatusActive && next.Status != StatusCandidate {
			return nil, errorf(Invalid, "changes.status",
				"can only move between active and candidate (supersession retires a record, forget deletes it)")
		} else if next.Status != cur.Status {
			changed = append(changed, fmt.Sprintf("status (%s→%s)", cur.Status, next.Status))
		}
	}
	if ch.Confidence != nil {
		if next.Confidence = *ch.Confidence; !validConfidence(next.Confidence) {
			return nil, errorf(Invalid, "changes.confidence", "must be greater than 0 and at most 1")
		} else if next.Confidence != cur.Confidence {
			// The evidence stays; it now applies to the new assertion.
			w, err := witnessTx(ctx, tx, id, cur.Writer, next.Confidence)
			if err != nil {
				return nil, err
			}
			next.EffectiveConfidence = w.effective
			changed = append(changed, "confidence")
		}
	}
	if ch.Topics != nil {
		if next.Topics, err = texts("changes.topics", *ch.Topics); err != nil {
			return nil, err
		} else if !slices.Equal(next.Topics, cur.Topics) {
			changed = append(changed, "topics")
		}
	}
	anchorsChanged := false
	if ch.Anchors != nil {
		names, err := texts("changes.anchors", *ch.Anchors)
		if err != nil {
			return nil, err
		}
		next.Anchors = keepAnchorStates(cur.Anchors, names)
		if anchorsChanged = !slices.Equal(names, anchorNames(cur.Anchors)); anchorsChanged {
			changed = append(changed, "anchors")
		}
	}
	supersede := ""
	if ch.Supersedes != nil {
		switch s := *ch.Supersedes; {
		case s == "":
			return nil, errorf(Invalid, "changes.supersedes", "must name a record")
		case s == cur.Supersedes:
			// Already done: nothing to change.
		case cur.Supersedes != "":
			return nil, errorf(Invalid, "changes.supersedes", "record already supersedes %s", cur.Supersedes)
		default:
			supersede = s
			changed = append(changed, "supersedes")
		}
	}
	if len(changed) == 0 {
		return cur, nil
	}

	// The FTS trigger fires only when title or content differ, so setting
	// them to what they were does not reindex.
	if _, err := tx.ExecContext(ctx, `
		UPDATE records SET
			title = ?, content = ?, type = ?, status = ?, confidence = ?,
			effective_confidence = ?, topics = ?, revision = revision + 1, updated_at = ?
		WHERE id = ?`,
		next.Title, next.Content, next.Type, next.Status, next.Confidence,
		next.EffectiveConfidence, topicsJSON(next.Topics), tx.now.UnixMilli(), id,
	); err != nil {
		return nil, classify("update", err)
	}
	if anchorsChanged {
		if _, err := tx.ExecContext(ctx, `DELETE FROM anchors WHERE record_id = ?`, id); err != nil {
			return nil, classify("update", err)
		}
		if err := insertAnchorsTx(ctx, tx, id, next.Anchors); err != nil {
			return nil, err
		}
	}
	if err := insertAuditTx(ctx, tx, AuditEntry{
		Client: client, Action: ActionUpdate, Namespace: cur.Namespace, RecordID: id,
		Detail: screen.Redact("changed " + strings.Join(changed, ", ")),
	}); err != nil {
		return nil, err
	}
	if supersede != "" {
		if err := supersedeTx(ctx, tx, &next, supersede, "changes.supersedes", client); err != nil {
			return nil, err
		}
	}
	return findRecordTx(ctx, tx, id)
}
