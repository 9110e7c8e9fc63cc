package storage

import (
	"context"
	"database/sql"
	"time"

	"github.com/hearth-memory/hearth/storage/internal/sqlval"
)

// Usage is how often a record was handed out (docs/design.md R-K5): Returned counts
// search, recall and context hits, Fetched counts memory_get results. The
// times are zero when it never happened.
type Usage struct {
	Returned       int
	Fetched        int
	LastReturnedAt time.Time
	LastFetchedAt  time.Time
}

// CountReturned counts the records in ids (a repeated id once) as returned
// and stores every use counted so far before it returns (NoteReturned, then
// FlushUsage). Unknown ids are skipped. It never touches the records table
// or its full-text index. Request paths use NoteReturned, which never waits.
func (db *DB) CountReturned(ctx context.Context, ids []string) error {
	db.NoteReturned(ids)
	return db.FlushUsage(ctx)
}

// CountFetched counts the records in ids as fetched and stores every use
// counted so far, like CountReturned.
func (db *DB) CountFetched(ctx context.Context, ids []string) error {
	db.NoteFetched(ids)
	return db.FlushUsage(ctx)
}

// Usage returns the usage counters of record id, those still in memory
// included; a record never counted has zero counts. It returns NotFound
// (Field "id") for an unknown record.
func (db *DB) Usage(ctx context.Context, id string) (Usage, error) {
	var (
		u                 Usage
		lastRet, lastFech sql.NullInt64
	)
	// No flush moves the uses between the read and the memory meanwhile.
	defer db.uses.Hold()()
	if err := db.read(ctx, "usage", func(tx *txn) error {
		err := tx.QueryRowContext(ctx, `
			SELECT COALESCE(u.returned, 0), COALESCE(u.fetched, 0),
				u.last_returned_at, u.last_fetched_at
			FROM records AS r LEFT JOIN usage AS u ON u.record_id = r.id
			WHERE r.id = ?`, id,
		).Scan(&u.Returned, &u.Fetched, &lastRet, &lastFech)
		if err == sql.ErrNoRows {
			return errorf(NotFound, "id", "no record has this id")
		}
		return classify("usage", err)
	}); err != nil {
		return Usage{}, err
	}
	u.LastReturnedAt = sqlval.Time(lastRet)
	u.LastFetchedAt = sqlval.Time(lastFech)
	db.addPending(id, &u)
	return u, nil
}
