package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/hearth-memory/hearth/storage/internal/capture"
	"github.com/hearth-memory/hearth/storage/screen"
)

// Capture's vocabulary is package capture (docs/design.md, "Storage
// layout"); these are its names as the server uses them.
type (
	// CaptureEvent is one captured event as the server checked and screened it.
	CaptureEvent = capture.Event
	// CaptureResult counts what one Capture call did.
	CaptureResult = capture.Result
	// LeftOff is what a namespace's last captured session touched and left
	// failing.
	LeftOff = capture.LeftOff
	// FailingCommand is a command a session left failing.
	FailingCommand = capture.FailingCommand
)

// Capture event kinds, and the confidence of an observation record.
const (
	CaptureEdit    = capture.Edit
	CaptureCommand = capture.Command
	CaptureCompact = capture.Compact

	CaptureConfidence = capture.Confidence
)

// Capture keeps events in one transaction (docs/capture.md): an event id
// seen before is counted as replayed and changes nothing; the others update
// the facts they coalesce into (capture.Keep), and each fact whose text
// changed stores or updates its observation record (type note, source
// capture, active), written as writer. An observation that was forgotten
// stays forgotten, and one a client promoted (its type changed from note)
// keeps its text.
func (db *DB) Capture(ctx context.Context, writer string, events []CaptureEvent) (CaptureResult, error) {
	var res CaptureResult
	if writer == "" {
		return res, errorf(Invalid, "writer", "is required")
	}
	for i := range events {
		field := fmt.Sprintf("events[%d].", i)
		if err := CheckOpID(field+"id", events[i].ID); err != nil {
			return res, err
		}
		if err := lift(events[i].Validate(field)); err != nil {
			return res, err
		}
	}
	err := db.writeGrouped(ctx, "capture", func(tx *txn) error {
		res = CaptureResult{}
		facts, err := capture.Keep(ctx, tx, events, &res)
		if err != nil {
			return lift(err)
		}
		for _, f := range facts {
			changed, err := db.observeTx(ctx, tx, f, writer)
			if err != nil {
				return err
			}
			if changed {
				res.Observations++
			}
			if err := capture.Save(ctx, tx, f); err != nil {
				return lift(err)
			}
		}
		return nil
	})
	return res, err
}

// observeTx stores or updates the fact's observation record when its text
// changed; it reports whether it wrote one.
func (db *DB) observeTx(ctx context.Context, tx *txn, f *capture.Fact, writer string) (bool, error) {
	t, c := f.Observation()
	if f.RecordID != "" {
		cur, err := findRecordTx(ctx, tx, f.RecordID)
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
		Namespace: f.Namespace, Type: TypeNote, Title: t, Content: c, Confidence: CaptureConfidence,
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
	f.RecordID = rec.ID
	return true, nil
}

// LeftOff returns the namespace's last captured session other than
// exceptSession (the one asking), or nil when there is none
// (capture.LastSession).
func (db *DB) LeftOff(ctx context.Context, namespace, exceptSession string) (*LeftOff, error) {
	var out *LeftOff
	err := db.read(ctx, "left off", func(tx *txn) (err error) {
		out, err = capture.LastSession(ctx, tx, namespace, exceptSession)
		return lift(err)
	})
	return out, err
}

// expireCaptureTx forgets observation records older than retention that no
// one fetched, cited or promoted, and purges capture's own rows of that
// age; it returns how many records it forgot (docs/capture.md).
func expireCaptureTx(ctx context.Context, tx *txn, retention time.Duration) (int, error) {
	cutoff := tx.Now.Add(-retention)
	ids, err := idsTx(ctx, tx, `
		SELECT r.id FROM records AS r
		WHERE r.source = 'capture' AND r.type = 'note' AND r.status = 'active' AND r.updated_at <= ?
			AND r.proof_count = 0
			AND NOT EXISTS (SELECT 1 FROM usage AS u WHERE u.record_id = r.id AND u.fetched > 0)
			AND NOT EXISTS (SELECT 1 FROM answer_sources AS a WHERE a.record_id = r.id)
		ORDER BY r.id`, cutoff.UnixMilli())
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
	if err := capture.Purge(ctx, tx, cutoff); err != nil {
		return 0, lift(err)
	}
	return len(ids), nil
}
