package storage

import (
	"context"
	"database/sql"

	"github.com/hearth-memory/hearth/storage/screen"
)

// supersedeTx retires target in favour of repl inside the caller's
// transaction: the one place the supersession rules (docs/design.md R-R5) live. repl
// must already hold its new status. field names the request field for errors.
// On success target becomes superseded (revision + 1, superseded_by = repl),
// repl.supersedes = target, and an audit row "supersede" names the target.
// A refusal returns an error and the caller's rollback undoes everything.
func supersedeTx(ctx context.Context, tx *txn, repl *Record, targetID, field, client string) error {
	if targetID == repl.ID {
		return errorf(Invalid, field, "a record cannot supersede itself")
	}
	target, err := findRecordTx(ctx, tx, targetID)
	if ErrorCode(err) == NotFound {
		return errorf(NotFound, field, "no record has this id")
	} else if err != nil {
		return err
	}
	if target.Namespace != repl.Namespace {
		return errorf(Invalid, field, "the record to supersede is in another namespace (%s)", target.Namespace)
	}
	// Walk the target's supersedes chain: meeting repl there would close a
	// cycle. The visited set stops a corrupt chain from looping forever.
	seen := map[string]bool{target.ID: true}
	for next := target.Supersedes; next != ""; {
		if next == repl.ID {
			return errorf(Invalid, field, "superseding %s would make a cycle: it already descends from this record", target.ID)
		}
		if seen[next] {
			break
		}
		seen[next] = true
		var up sql.NullString
		err := tx.QueryRowContext(ctx, `SELECT supersedes FROM records WHERE id = ?`, next).Scan(&up)
		if err == sql.ErrNoRows {
			break
		} else if err != nil {
			return classify("supersede", err)
		}
		next = up.String
	}
	if repl.Status != StatusActive {
		return errorf(Invalid, field, "only an active record can supersede; this one is %s", repl.Status)
	}
	if target.Status != StatusActive {
		return errorf(Invalid, field, "only an active record can be superseded; %s is %s", target.ID, target.Status)
	}

	if _, err := tx.ExecContext(ctx, `
		UPDATE records SET status = ?, superseded_by = ?, revision = revision + 1, updated_at = ?
		WHERE id = ?`,
		StatusSuperseded, repl.ID, tx.Now.UnixMilli(), target.ID,
	); err != nil {
		return classify("supersede", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE records SET supersedes = ? WHERE id = ?`, target.ID, repl.ID); err != nil {
		return classify("supersede", err)
	}
	return insertAuditTx(ctx, tx, AuditEntry{
		Client: client, Action: ActionSupersede, Namespace: target.Namespace, RecordID: target.ID,
		Detail: screen.Redact("superseded by " + repl.ID),
	})
}
