package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Get returns the records with the given ids in the order asked, whatever
// their status; unknown ids are left out and a repeated id comes once.
func (db *DB) Get(ctx context.Context, ids []string) ([]*Record, error) {
	ids = uniq(ids)
	if len(ids) == 0 {
		return nil, nil
	}
	var recs []*Record
	if err := db.read(ctx, "get", func(tx *txn) (err error) {
		recs, err = findRecordsTx(ctx, tx, `WHERE r.id IN (SELECT value FROM json_each(?))`, jsonList(ids))
		return err
	}); err != nil {
		return nil, err
	}
	byID := make(map[string]*Record, len(recs))
	for _, r := range recs {
		byID[r.ID] = r
	}
	out := make([]*Record, 0, len(recs))
	for _, id := range ids {
		if r, ok := byID[id]; ok {
			out = append(out, r)
		}
	}
	return out, nil
}

// recordColumns is the select list recordScanner reads, over records AS r.
const recordColumns = `r.id, r.namespace, r.type, r.title, r.content, r.status, r.revision, r.writer,
	r.confidence, r.effective_confidence, r.proof_count, r.refutation_count,
	COALESCE(r.supersedes, ''), COALESCE(r.superseded_by, ''), r.topics, r.source,
	r.created_at, r.updated_at`

// readRecordsTx reads the records of seqs whole (op names the reading in
// errors), by seq, and which of them have anchors; attachAnchorsTx reads
// the anchors of those kept. The list stays the outer loop (CROSS JOIN,
// which fixes SQLite's join order; its condition is in WHERE, as
// PostgreSQL takes no ON after CROSS JOIN): each record is one row id
// lookup, with no temporary index of the list.
func readRecordsTx(ctx context.Context, tx *txn, op string, seqs []int64) (map[int64]*Record, map[int64]bool, error) {
	recs := make(map[int64]*Record, len(seqs))
	anchored := make(map[int64]bool)
	if len(seqs) == 0 {
		return recs, anchored, nil
	}
	rs, err := tx.QueryContext(ctx, `SELECT `+recordColumns+`, r.seq,
		EXISTS (SELECT 1 FROM anchors AS a WHERE a.record_id = r.id)
		FROM json_each(?) AS j CROSS JOIN records AS r WHERE r.seq = CAST(j.value AS BIGINT)`, jsonInts(seqs))
	if err != nil {
		return nil, nil, classify(op, err)
	}
	defer rs.Close()
	var (
		seq int64
		has bool
	)
	sc := newRecordScanner(&seq, &has)
	for rs.Next() {
		rec, err := sc.scan(rs)
		if err != nil {
			return nil, nil, classify(op, err)
		}
		recs[seq], anchored[seq] = rec, has
	}
	if err := rs.Err(); err != nil {
		return nil, nil, classify(op, err)
	}
	return recs, anchored, nil
}

type scanner interface{ Scan(dest ...any) error }

// recordScanner reads recordColumns (followed by extra destinations) row
// after row into one set of destinations, built once: a search reads up to
// a few dozen records, and a destination list per row was a tenth of the
// bytes it allocated.
type recordScanner struct {
	r            Record
	topics       string
	created, upd int64
	dest         []any
}

func newRecordScanner(extra ...any) *recordScanner {
	s := &recordScanner{}
	r := &s.r
	s.dest = append([]any{
		&r.ID, &r.Namespace, &r.Type, &r.Title, &r.Content, &r.Status, &r.Revision, &r.Writer,
		&r.Confidence, &r.EffectiveConfidence, &r.ProofCount, &r.RefutationCount,
		&r.Supersedes, &r.SupersededBy, &s.topics, &r.Source, &s.created, &s.upd,
	}, extra...)
	return s
}

// scan reads the current row into a new Record; every column is written,
// so nothing of the row before stays.
func (s *recordScanner) scan(rows scanner) (*Record, error) {
	if err := rows.Scan(s.dest...); err != nil {
		return nil, err
	}
	r := s.r
	// Most records have no topics: "[]" (topicsJSON) needs no decoding.
	if s.topics != "[]" {
		if err := json.Unmarshal([]byte(s.topics), &r.Topics); err != nil {
			return nil, fmt.Errorf("record %s: topics: %w", r.ID, err)
		}
		if len(r.Topics) == 0 {
			r.Topics = nil
		}
	}
	r.CreatedAt = time.UnixMilli(s.created).UTC()
	r.UpdatedAt = time.UnixMilli(s.upd).UTC()
	return &r, nil
}

// findRecordTx returns one record with its anchors, or NotFound (Field "id").
func findRecordTx(ctx context.Context, tx *txn, id string) (*Record, error) {
	recs, err := findRecordsTx(ctx, tx, `WHERE r.id = ?`, id)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, errorf(NotFound, "id", "no record has this id")
	}
	return recs[0], nil
}

// findRecordsTx returns the records matching where (a clause over records AS
// r), with their anchors.
func findRecordsTx(ctx context.Context, tx *txn, where string, args ...any) ([]*Record, error) {
	rows, err := tx.QueryContext(ctx, `SELECT `+recordColumns+` FROM records AS r `+where, args...)
	if err != nil {
		return nil, classify("find records", err)
	}
	defer rows.Close()
	var recs []*Record
	sc := newRecordScanner()
	for rows.Next() {
		r, err := sc.scan(rows)
		if err != nil {
			return nil, classify("find records", err)
		}
		recs = append(recs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, classify("find records", err)
	}
	if err := attachAnchorsTx(ctx, tx, recs); err != nil {
		return nil, err
	}
	return recs, nil
}
