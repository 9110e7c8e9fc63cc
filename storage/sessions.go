package storage

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"regexp"
	"strings"
	"time"

	"github.com/hearth-memory/hearth/storage/screen"
)

var opIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{8,64}$`)

// ValidOpID reports whether s is an op_id: 8-64 of A-Za-z0-9_- (docs/design.md R-Z2).
func ValidOpID(s string) bool { return opIDPattern.MatchString(s) }

// CheckOpID refuses s unless it is an op_id: Invalid naming field.
func CheckOpID(field, s string) error {
	if !ValidOpID(s) {
		return errorf(Invalid, field, "must be 8-64 of A-Za-z0-9_-")
	}
	return nil
}

// CloseDigest binds a session close to its client and inputs: the SHA-256
// (hex) of client and each input, every one length-prefixed so that no two
// different lists digest alike. A replay must give the same digest. Inputs
// are hashed, never stored, so refused notes may be among them.
func CloseDigest(client string, inputs ...string) string {
	h := sha256.New()
	var n [8]byte
	for _, s := range append([]string{"hearth.session-close.v1", client}, inputs...) {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	return hex.EncodeToString(h.Sum(nil))
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
type Receipt struct {
	OpID                string
	Client              string
	SessionID           string
	Namespace           string
	ClosedAt            time.Time
	SummaryID           string
	SummaryKept         bool
	NotesRefused        bool
	NotesRefusedPattern string
	JobID               string
	Tombstone           bool
}

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
	prev, err := findReceiptTx(ctx, tx, c.OpID)
	if err != nil {
		return nil, false, err
	}
	if prev != nil {
		r, err := replay(prev, c, tx.Now)
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
		Detail: screen.Redact(closeDetail(r)),
	}); err != nil {
		return nil, false, err
	}
	if _, err := tx.ExecContext(ctx, `
		INSERT INTO receipts (
			op_id, client, digest, closed_at, session_id, namespace, summary_id, summary_kept,
			notes_refused, notes_refused_pattern, job_id
		) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.OpID, r.Client, c.Digest, r.ClosedAt.UnixMilli(), r.SessionID, r.Namespace, r.SummaryID, r.SummaryKept,
		r.NotesRefused, r.NotesRefusedPattern, r.JobID,
	); err != nil {
		return nil, false, classify("close session", err)
	}
	return r, false, nil
}

// storedReceipt is a receipt row with its binding.
type storedReceipt struct {
	Receipt
	digest string
}

// replay decides what a second close with the same op_id gets: the stored
// receipt, or a refusal.
func replay(prev *storedReceipt, c SessionClose, now time.Time) (*Receipt, error) {
	switch {
	case prev.Client != c.Client:
		return nil, errorf(Exists, "op_id", "is already used by another client; choose a new op_id for this close")
	case prev.digest != c.Digest:
		return nil, errorf(Exists, "op_id", "is already used by a close with other inputs; choose a new op_id for this close")
	case prev.Tombstone || (c.Retention > 0 && !prev.ClosedAt.After(now.Add(-c.Retention))):
		return nil, errorf(Expired, "op_id",
			"the receipt of this close (closed %s) is past retention_deleted_days and has expired; choose a new op_id to close again",
			prev.ClosedAt.Format(time.RFC3339))
	}
	return &prev.Receipt, nil
}

// closeDetail is the audit detail of a close.
func closeDetail(r *Receipt) string {
	var parts []string
	parts = append(parts, "op "+r.OpID)
	switch {
	case r.SummaryID != "":
		parts = append(parts, "summary candidate "+r.SummaryID)
	case r.SummaryKept:
		parts = append(parts, "summary kept for extraction")
	default:
		parts = append(parts, "no summary")
	}
	if r.NotesRefused {
		parts = append(parts, "notes refused ("+r.NotesRefusedPattern+")")
	}
	if r.JobID != "" {
		parts = append(parts, "extraction job "+r.JobID)
	}
	return strings.Join(parts, "; ")
}

// Receipt returns the receipt kept under opID, tombstones included. It
// returns NotFound (Field "op_id") when there is none.
func (db *DB) Receipt(ctx context.Context, opID string) (*Receipt, error) {
	var r *storedReceipt
	if err := db.read(ctx, "receipt", func(tx *txn) (err error) {
		r, err = findReceiptTx(ctx, tx, opID)
		return err
	}); err != nil {
		return nil, err
	}
	if r == nil {
		return nil, errorf(NotFound, "op_id", "no receipt has this op_id")
	}
	return &r.Receipt, nil
}

// findReceiptTx returns the receipt of opID, or nil.
func findReceiptTx(ctx context.Context, tx *txn, opID string) (*storedReceipt, error) {
	var (
		r         storedReceipt
		closed    int64
		tombstone sql.NullInt64
	)
	err := tx.QueryRowContext(ctx, `
		SELECT op_id, client, digest, closed_at, session_id, namespace, summary_id, summary_kept,
			notes_refused, notes_refused_pattern, job_id, tombstoned_at
		FROM receipts WHERE op_id = ?`, opID,
	).Scan(&r.OpID, &r.Client, &r.digest, &closed, &r.SessionID, &r.Namespace, &r.SummaryID, &r.SummaryKept,
		&r.NotesRefused, &r.NotesRefusedPattern, &r.JobID, &tombstone)
	if err == sql.ErrNoRows {
		return nil, nil
	} else if err != nil {
		return nil, classify("find receipt", err)
	}
	r.ClosedAt = time.UnixMilli(closed).UTC()
	r.Tombstone = tombstone.Valid
	return &r, nil
}
