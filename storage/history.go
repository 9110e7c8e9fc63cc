package storage

import (
	"context"
	"database/sql"
	"time"

	"github.com/hearth-memory/hearth/storage/internal/sqlval"
	"github.com/hearth-memory/hearth/storage/screen"
)

// HistoryEntry is one audit row about a record. Revision is the record's
// revision as the row was written (after the change, for a row that made
// one; the revision a refused write met, for a refusal); 0 for rows written
// before revisions were kept (migration 0070).
type HistoryEntry struct {
	AuditEntry
	Revision int
}

// Stance is one client's evidence about a record (docs/design.md R-E1): its stance,
// its note and when it gave them.
type Stance struct {
	Client string
	Stance string
	Note   string
	At     time.Time
}

// History is what the store knows of one record's past.
type History struct {
	// Record is the record as it stands; nil when it was purged and only
	// its audit rows remain.
	Record *Record
	// Entries are its latest audit rows, newest (last appended) first;
	// Total counts all of them.
	Entries []HistoryEntry
	Total   int
	// Evidence holds each client's current stance, in arrival order.
	Evidence []Stance
	// Usage is how often it was handed out (zero once purged).
	Usage Usage
}

// History returns the record id with its latest limit audit rows, its
// evidence and its usage, read in one transaction. It writes nothing and
// counts no use. A purged record whose audit rows remain comes back with a
// nil Record. limit <= 0 means DefaultAuditLimit.
//
// It returns NotFound (Field "id") when neither a record nor an audit row
// has this id.
func (db *DB) History(ctx context.Context, id string, limit int) (*History, error) {
	if limit <= 0 {
		limit = DefaultAuditLimit
	}
	// No flush runs between the read and the uses still in memory being
	// added, as for Usage: a flush takes its batch out of memory before it
	// commits, and a read in between would count that batch nowhere.
	defer db.uses.Hold()()
	var h *History
	err := db.read(ctx, "history", func(tx *txn) (err error) {
		h, err = historyTx(ctx, tx, id, limit)
		return err
	})
	if err == nil && h.Record != nil {
		db.addPending(id, &h.Usage)
	}
	return h, err
}

func historyTx(ctx context.Context, tx *txn, id string, limit int) (*History, error) {
	h := &History{}
	recs, err := findRecordsTx(ctx, tx, `WHERE r.id = ?`, id)
	if err != nil {
		return nil, err
	}
	if len(recs) == 1 {
		h.Record = recs[0]
	}
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM audit WHERE record_id = ?`, id).Scan(&h.Total); err != nil {
		return nil, classify("history", err)
	}
	if h.Record == nil && h.Total == 0 {
		return nil, errorf(NotFound, "id", "no record has this id")
	}
	if h.Entries, err = historyEntriesTx(ctx, tx, id, limit); err != nil {
		return nil, err
	}
	if h.Record == nil {
		return h, nil
	}
	if h.Evidence, err = stancesTx(ctx, tx, id); err != nil {
		return nil, err
	}
	var lastRet, lastFetch sql.NullInt64
	err = tx.QueryRowContext(ctx, `
		SELECT returned, fetched, last_returned_at, last_fetched_at FROM usage WHERE record_id = ?`, id,
	).Scan(&h.Usage.Returned, &h.Usage.Fetched, &lastRet, &lastFetch)
	if err != nil && err != sql.ErrNoRows {
		return nil, classify("history", err)
	}
	h.Usage.LastReturnedAt, h.Usage.LastFetchedAt = sqlval.Time(lastRet), sqlval.Time(lastFetch)
	return h, nil
}

func historyEntriesTx(ctx context.Context, tx *txn, id string, limit int) ([]HistoryEntry, error) {
	rows, err := tx.QueryContext(ctx, `
		SELECT at, client, action, namespace, record_id, detail, COALESCE(revision, 0)
		FROM audit WHERE record_id = ? ORDER BY seq DESC LIMIT +?`, id, limit)
	if err != nil {
		return nil, classify("history", err)
	}
	defer rows.Close()
	var out []HistoryEntry
	for rows.Next() {
		var (
			e      HistoryEntry
			at     int64
			detail string
		)
		if err := rows.Scan(&at, &e.Client, &e.Action, &e.Namespace, &e.RecordID, &detail, &e.Revision); err != nil {
			return nil, classify("history", err)
		}
		e.At = time.UnixMilli(at).UTC()
		// The row was screened when it was written.
		e.Detail = screen.Redact(detail)
		out = append(out, e)
	}
	return out, classify("history", rows.Err())
}

func stancesTx(ctx context.Context, tx *txn, id string) ([]Stance, error) {
	rows, err := tx.QueryContext(ctx, `
		SELECT client, stance, note, at FROM evidence WHERE record_id = ? ORDER BY seq`, id)
	if err != nil {
		return nil, classify("history", err)
	}
	defer rows.Close()
	var out []Stance
	for rows.Next() {
		var (
			s  Stance
			at int64
		)
		if err := rows.Scan(&s.Client, &s.Stance, &s.Note, &at); err != nil {
			return nil, classify("history", err)
		}
		s.At = time.UnixMilli(at).UTC()
		out = append(out, s)
	}
	return out, classify("history", rows.Err())
}
