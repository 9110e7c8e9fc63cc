package storage

import (
	"context"
	"database/sql"
	"time"
)

// Usage is how often a record was handed out (SPEC R-K5): Returned counts
// search, recall and context hits, Fetched counts memory_get results. The
// times are zero when it never happened.
type Usage struct {
	Returned       int
	Fetched        int
	LastReturnedAt time.Time
	LastFetchedAt  time.Time
}

// CountReturned adds one to the returned count of each record in ids (a
// repeated id counts once) and sets its last_returned_at. Unknown ids are
// skipped. It never touches the records table or its full-text index.
func (db *DB) CountReturned(ctx context.Context, ids []string) error {
	return db.count(ctx, ids, `
		INSERT INTO usage (record_id, returned, last_returned_at)
		SELECT id, 1, ?2 FROM records WHERE id = ?1
		ON CONFLICT (record_id) DO UPDATE SET
			returned = returned + 1, last_returned_at = excluded.last_returned_at`)
}

// CountFetched adds one to the fetched count of each record in ids (a
// repeated id counts once) and sets its last_fetched_at. Unknown ids are
// skipped. It never touches the records table or its full-text index.
func (db *DB) CountFetched(ctx context.Context, ids []string) error {
	return db.count(ctx, ids, `
		INSERT INTO usage (record_id, fetched, last_fetched_at)
		SELECT id, 1, ?2 FROM records WHERE id = ?1
		ON CONFLICT (record_id) DO UPDATE SET
			fetched = fetched + 1, last_fetched_at = excluded.last_fetched_at`)
}

func (db *DB) count(ctx context.Context, ids []string, query string) error {
	ids = uniq(ids)
	if len(ids) == 0 {
		return nil
	}
	return db.write(ctx, "count usage", func(tx *txn) error {
		return countTx(ctx, tx, ids, query)
	})
}

func countTx(ctx context.Context, tx *txn, ids []string, query string) error {
	// Through the statement cache: the upsert compiles the usage triggers,
	// which is worth doing once, not on every search.
	for _, id := range ids {
		if _, err := tx.ExecContext(ctx, query, id, tx.now.UnixMilli()); err != nil {
			return classify("count usage", err)
		}
	}
	return nil
}

// Usage returns the usage counters of record id; a record never counted has
// zero counts. It returns NotFound (Field "id") for an unknown record.
func (db *DB) Usage(ctx context.Context, id string) (Usage, error) {
	var (
		u                 Usage
		lastRet, lastFech sql.NullInt64
	)
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
	u.LastReturnedAt = fromMS(lastRet)
	u.LastFetchedAt = fromMS(lastFech)
	return u, nil
}
