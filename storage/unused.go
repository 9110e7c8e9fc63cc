package storage

import (
	"context"
	"database/sql"
	"time"

	"github.com/hearth-memory/hearth/storage/internal/sqlval"
	"github.com/hearth-memory/hearth/storage/screen"
)

// UnusedAge is how long a record must have gone without use, and how long
// counting must have run, before Unused lists it (docs/design.md R-K6).
const UnusedAge = 30 * 24 * time.Hour

// DefaultUnusedLimit is how many records Unused returns when asked for none.
const DefaultUnusedLimit = 20

// UnusedRecord is a compact line about a record nothing used: no search,
// recall or context packet returned it in UnusedAge (docs/design.md R-K6: fetching it
// by id does not count as use; LastFetchedAt is shown so a reader can tell).
// The last times are zero when it never happened.
type UnusedRecord struct {
	ID             string
	Namespace      string
	Type           string
	Title          string
	CreatedAt      time.Time
	LastReturnedAt time.Time
	LastFetchedAt  time.Time
}

// StartUsage returns when usage counting began: the time of the audit row
// "usage-start", which it writes at the clock's time (client SystemClient)
// when there is none. The daemon calls it at every start, after setting the
// clock, so the first start of a server that counts usage marks the moment;
// later starts find the row and keep it.
func (db *DB) StartUsage(ctx context.Context) (time.Time, error) {
	var since time.Time
	if err := db.writeGrouped(ctx, "start usage", func(tx *txn) (err error) {
		if since, err = usageStartTx(ctx, tx); err != nil || !since.IsZero() {
			return err
		}
		since = tx.Now
		return insertAuditTx(ctx, tx, AuditEntry{
			Client: SystemClient, Action: ActionUsageStart, Detail: screen.Redact("usage counting started"),
		})
	}); err != nil {
		return time.Time{}, err
	}
	return since, nil
}

// usageStartTx returns the time of the first usage-start row, or the zero
// time when there is none. The row is written at the first start, so it sits
// near the head of the log and the scan in seq order stops early.
func usageStartTx(ctx context.Context, tx *txn) (time.Time, error) {
	var at sql.NullInt64
	err := tx.QueryRowContext(ctx, `SELECT at FROM audit WHERE action = ? ORDER BY seq LIMIT 1`,
		string(ActionUsageStart)).Scan(&at)
	if err != nil && err != sql.ErrNoRows {
		return time.Time{}, classify("usage start", err)
	}
	return sqlval.Time(at), nil
}

// Unused lists active records created more than UnusedAge before now that no
// search, recall or context packet returned in that time (memory_get
// fetches do not count, as docs/design.md R-K6 defines it), oldest first (then by id), at most limit (<= 0 means
// DefaultUnusedLimit). namespace filters when not empty. A zero now means
// the clock's time.
//
// countingSince is when usage counting began (see StartUsage), zero when it
// never did. ready is true once counting has run UnusedAge; until then the
// list is empty, because a record not yet counted long enough is not known
// to be unused.
func (db *DB) Unused(ctx context.Context, namespace string, now time.Time, limit int) (recs []UnusedRecord, countingSince time.Time, ready bool, err error) {
	if limit <= 0 {
		limit = DefaultUnusedLimit
	}
	// Unused is about what nothing returned: uses still in memory count,
	// so they are stored first (a rare, administrative read).
	if err := db.FlushUsage(ctx); err != nil {
		return nil, time.Time{}, false, err
	}
	err = db.read(ctx, "unused", func(tx *txn) (err error) {
		recs, countingSince, ready, err = unusedTx(ctx, tx, namespace, now, limit)
		return err
	})
	if err != nil {
		return nil, time.Time{}, false, err
	}
	return recs, countingSince, ready, nil
}

// unusedTx lists what Unused reports, in one snapshot.
func unusedTx(ctx context.Context, tx *txn, namespace string, now time.Time, limit int) (recs []UnusedRecord, countingSince time.Time, ready bool, err error) {
	if now.IsZero() {
		now = tx.Now
	}
	countingSince, err = usageStartTx(ctx, tx)
	if err != nil {
		return nil, time.Time{}, false, err
	}
	cutoff := now.Add(-UnusedAge)
	if countingSince.IsZero() || countingSince.After(cutoff) {
		return nil, countingSince, false, nil
	}

	rows, err := tx.QueryContext(ctx, `
		SELECT r.id, r.namespace, r.type, r.title, r.created_at, u.last_returned_at, u.last_fetched_at
		FROM records AS r LEFT JOIN usage AS u ON u.record_id = r.id
		WHERE r.status = 'active'
			AND r.created_at < ?1
			AND (u.last_returned_at IS NULL OR u.last_returned_at < ?1)
			AND (?2 = '' OR r.namespace = ?2)
		ORDER BY r.created_at, r.id
		LIMIT +?3`,
		cutoff.UnixMilli(), namespace, limit,
	)
	if err != nil {
		return nil, time.Time{}, false, classify("unused", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			u                 UnusedRecord
			created           int64
			lastRet, lastFech sql.NullInt64
		)
		if err := rows.Scan(&u.ID, &u.Namespace, &u.Type, &u.Title, &created, &lastRet, &lastFech); err != nil {
			return nil, time.Time{}, false, classify("unused", err)
		}
		u.CreatedAt = time.UnixMilli(created).UTC()
		u.LastReturnedAt = sqlval.Time(lastRet)
		u.LastFetchedAt = sqlval.Time(lastFech)
		recs = append(recs, u)
	}
	if err := rows.Err(); err != nil {
		return nil, time.Time{}, false, classify("unused", err)
	}
	return recs, countingSince, true, nil
}
