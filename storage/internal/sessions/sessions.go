// Package sessions is the vocabulary of session closes (docs/design.md
// §10, R-Z2): the op_id that makes a close idempotent, the digest that
// binds it to its client and inputs, the receipt it keeps and how a replay
// is answered, and the keyed digest a recorded search keeps of its session
// (docs/questions.md). What a close writes besides its receipt (the
// summary record, the extraction job, the audit) is the record domain's
// (package storage), which calls on this one in the same transaction.
package sessions

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"regexp"
	"strings"
	"time"

	"github.com/hearth-memory/hearth/storage/internal/engine"
	"github.com/hearth-memory/hearth/storage/internal/errs"
)

var opIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{8,64}$`)

// ValidOpID reports whether s is an op_id: 8-64 of A-Za-z0-9_- (docs/design.md R-Z2).
func ValidOpID(s string) bool { return opIDPattern.MatchString(s) }

// CheckOpID refuses s unless it is an op_id: Invalid naming field.
func CheckOpID(field, s string) error {
	if !ValidOpID(s) {
		return errs.Errorf(errs.Invalid, field, "must be 8-64 of A-Za-z0-9_-")
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

// Stored is a receipt row with its binding (CloseDigest).
type Stored struct {
	Receipt
	Digest string
}

// Replay decides what a second close with the same op_id, by client with
// digest, gets at now: the stored receipt, or a refusal. A receipt older
// than retention (0: forever) is refused as expired even before
// maintenance makes it a tombstone.
func (prev *Stored) Replay(client, digest string, retention time.Duration, now time.Time) (*Receipt, error) {
	switch {
	case prev.Client != client:
		return nil, errs.Errorf(errs.Exists, "op_id", "is already used by another client; choose a new op_id for this close")
	case prev.Digest != digest:
		return nil, errs.Errorf(errs.Exists, "op_id", "is already used by a close with other inputs; choose a new op_id for this close")
	case prev.Tombstone || (retention > 0 && !prev.ClosedAt.After(now.Add(-retention))):
		return nil, errs.Errorf(errs.Expired, "op_id",
			"the receipt of this close (closed %s) is past retention_deleted_days and has expired; choose a new op_id to close again",
			prev.ClosedAt.Format(time.RFC3339))
	}
	return &prev.Receipt, nil
}

// Detail is the audit detail of a close.
func (r *Receipt) Detail() string {
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

// Keep stores the receipt r of a close bound by digest.
func Keep(ctx context.Context, tx *engine.Tx, r *Receipt, digest string) error {
	_, err := tx.ExecContext(ctx, `
		INSERT INTO receipts (
			op_id, client, digest, closed_at, session_id, namespace, summary_id, summary_kept,
			notes_refused, notes_refused_pattern, job_id
		) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.OpID, r.Client, digest, r.ClosedAt.UnixMilli(), r.SessionID, r.Namespace, r.SummaryID, r.SummaryKept,
		r.NotesRefused, r.NotesRefusedPattern, r.JobID,
	)
	return errs.Classify("close session", err)
}

// Find returns the receipt of opID, or nil.
func Find(ctx context.Context, tx *engine.Tx, opID string) (*Stored, error) {
	var (
		r         Stored
		closed    int64
		tombstone sql.NullInt64
	)
	err := tx.QueryRowContext(ctx, `
		SELECT op_id, client, digest, closed_at, session_id, namespace, summary_id, summary_kept,
			notes_refused, notes_refused_pattern, job_id, tombstoned_at
		FROM receipts WHERE op_id = ?`, opID,
	).Scan(&r.OpID, &r.Client, &r.Digest, &closed, &r.SessionID, &r.Namespace, &r.SummaryID, &r.SummaryKept,
		&r.NotesRefused, &r.NotesRefusedPattern, &r.JobID, &tombstone)
	if err == sql.ErrNoRows {
		return nil, nil
	} else if err != nil {
		return nil, errs.Classify("find receipt", err)
	}
	r.ClosedAt = time.UnixMilli(closed).UTC()
	r.Tombstone = tombstone.Valid
	return &r, nil
}
