package storage

import (
	"context"
	"time"

	"github.com/hearth-memory/hearth/storage/internal/sessions"
	"github.com/hearth-memory/hearth/storage/screen"
)

// ValidOpID reports whether s is an op_id: 8-64 of A-Za-z0-9_- (docs/design.md R-Z2).
func ValidOpID(s string) bool { return sessions.ValidOpID(s) }

// CheckOpID refuses s unless it is an op_id: Invalid naming field.
func CheckOpID(field, s string) error { return lift(sessions.CheckOpID(field, s)) }

// CloseDigest binds a session close to its client and inputs
// (sessions.CloseDigest): a replay must give the same digest.
func CloseDigest(client string, inputs ...string) string {
	return sessions.CloseDigest(client, inputs...)
}

// SessionClose is what CloseSession records for one close.
type SessionClose struct {
	// OpID is the idempotency key (ValidOpID).
	OpID string
	// Client is the token client closing the session.
	Client string
	// Digest is CloseDigest of the client and every input.
	Digest string
	// SessionID is the agent's session id.
	SessionID screen.Text
	// Namespace is the session's home namespace.
	Namespace string
	// Summary is the summary candidate to store, or nil. CloseSession sets
	// its Namespace and Writer from the close.
	Summary *NewRecord
	// SummaryKept says the summary was kept: as the candidate above, or in
	// the extraction job's payload.
	SummaryKept bool
	// Extraction is the extraction job to queue, or nil.
	Extraction *NewJob
	// NotesRefusedPattern names the screen pattern that refused the notes;
	// "" when they were not refused.
	NotesRefusedPattern string
	// Retention is how long a receipt replays; an older one is refused as
	// expired even before maintenance makes it a tombstone. 0: forever.
	Retention time.Duration
}

// Receipt is the stored result of a session close. A tombstone (a receipt
// past retention) keeps only OpID, Client and ClosedAt.
type Receipt = sessions.Receipt

// CloseSession records a session close exactly once per op_id (docs/design.md R-Z2):
// in one transaction it stores the summary candidate, queues the extraction
// job, audits the close (and a refusal of the notes) and keeps the receipt.
// When op_id already has a receipt from the same client with the same
// digest, it writes nothing and returns that receipt with replayed true.
//
// It returns Invalid for a malformed op_id (Field "op_id"), a missing
// client, digest or namespace, or a bad summary record or job; Exists
// (Field "op_id") when the op_id belongs to another client or to a close
// with other inputs; Expired (Field "op_id") when the same close is replayed
// past Retention or after its receipt became a tombstone. A refusal writes
// nothing.
func (db *DB) CloseSession(ctx context.Context, c SessionClose) (rec *Receipt, replayed bool, err error) {
	if err := CheckOpID("op_id", c.OpID); err != nil {
		return nil, false, err
	}
	switch {
	case c.Client == "":
		return nil, false, errorf(Invalid, "client", "is required")
	case len(c.Digest) != 64:
		return nil, false, errorf(Invalid, "digest", "must be a SHA-256 in hex")
	case c.Namespace == "":
		return nil, false, errorf(Invalid, "namespace", "is required")
	}
	if err := screenNamespace(c.Namespace); err != nil {
		return nil, false, err
	}
	if c.Summary != nil {
		s := *c.Summary
		s.Namespace, s.Writer = c.Namespace, c.Client
		c.Summary = &s
		if err := c.Summary.validate(); err != nil {
			return nil, false, err
		}
	}
	if c.Extraction != nil {
		if err := validateJob(c.Extraction); err != nil {
			return nil, false, err
		}
	}

	if err := db.writeGrouped(ctx, "close session", func(tx *txn) (err error) {
		rec, replayed, err = db.closeSessionTx(ctx, tx, c)
		return err
	}); err != nil {
		return nil, false, err
	}
	return rec, replayed, nil
}

// closeSessionTx records a validated close, or replays its receipt.
func (db *DB) closeSessionTx(ctx context.Context, tx *txn, c SessionClose) (*Receipt, bool, error) {
	prev, err := sessions.Find(ctx, tx, c.OpID)
	if err != nil {
		return nil, false, err
	}
	if prev != nil {
		r, err := prev.Replay(c.Client, c.Digest, c.Retention, tx.Now)
		return r, err == nil, err
	}

	r := &Receipt{
		OpID: c.OpID, Client: c.Client, SessionID: c.SessionID.String(), Namespace: c.Namespace, ClosedAt: tx.Now,
		SummaryKept: c.SummaryKept, NotesRefused: c.NotesRefusedPattern != "", NotesRefusedPattern: c.NotesRefusedPattern,
	}
	if c.Summary != nil {
		s, err := db.storeTx(ctx, tx, *c.Summary)
		if err != nil {
			return nil, false, err
		}
		r.SummaryID = s.ID
	}
	if c.Extraction != nil {
		j, _, err := db.enqueueTx(ctx, tx, *c.Extraction)
		if err != nil {
			return nil, false, err
		}
		r.JobID = j.ID
	}
	if r.NotesRefused {
		// The notes' refusal is audited like any screen refusal (docs/design.md R-S2).
		if err := refuseTx(ctx, tx, RefusalEntry{
			Client: c.Client, Action: ActionRefuseScreen, Namespace: c.Namespace,
			Field: "notes", Pattern: c.NotesRefusedPattern,
		}); err != nil {
			return nil, false, err
		}
	}
	if err := insertAuditTx(ctx, tx, AuditEntry{
		Client: c.Client, Action: ActionSessionClose, Namespace: c.Namespace, RecordID: r.SummaryID,
		Detail: screen.Redact(r.Detail()),
	}); err != nil {
		return nil, false, err
	}
	if err := sessions.Keep(ctx, tx, r, c.Digest); err != nil {
		return nil, false, err
	}
	return r, false, nil
}

// Receipt returns the receipt kept under opID, tombstones included. It
// returns NotFound (Field "op_id") when there is none.
func (db *DB) Receipt(ctx context.Context, opID string) (*Receipt, error) {
	var r *sessions.Stored
	if err := db.read(ctx, "receipt", func(tx *txn) (err error) {
		r, err = sessions.Find(ctx, tx, opID)
		return err
	}); err != nil {
		return nil, err
	}
	if r == nil {
		return nil, errorf(NotFound, "op_id", "no receipt has this op_id")
	}
	return &r.Receipt, nil
}
