package storage

import (
	"context"
	"database/sql"

	"github.com/hearth-memory/hearth/storage/internal/sqlval"
)

// MaxExportLimit is the most records one Export returns.
const MaxExportLimit = 1000

// ExportQuery selects one page of an export.
type ExportQuery struct {
	// Prefix keeps the records whose namespace is Prefix or lies below it
	// (Prefix + "/…"), so "github/acme" holds github/acme/api but not
	// github/acmecorp/api; "" keeps every namespace.
	Prefix string
	// After resumes after this record id; "" starts from the first.
	After string
	// Limit is the most records on the page, 1 to MaxExportLimit.
	Limit int
}

// ExportedRecord is a record with everything an export carries beyond the
// record itself: its evidence, in arrival order.
type ExportedRecord struct {
	*Record
	Evidence []Stance
}

// Export returns the next page of records that are not deleted, in id
// order (creation order), with their anchors (with their last check) and
// evidence; more is true while records remain after the page. A page is
// read in one transaction; pages are not one snapshot, so a record stored
// between two pages is exported at the end, and one changed between them
// as it stood when its page was read.
//
// It returns Invalid (Field "limit") for a limit outside 1 to
// MaxExportLimit.
func (db *DB) Export(ctx context.Context, q ExportQuery) (recs []*ExportedRecord, more bool, err error) {
	if q.Limit < 1 || q.Limit > MaxExportLimit {
		return nil, false, errorf(Invalid, "limit", "must be 1 to %d", MaxExportLimit)
	}
	err = db.read(ctx, "export", func(tx *txn) error {
		found, err := findRecordsTx(ctx, tx, `
			WHERE r.status <> 'deleted' AND r.id > ?1
			AND (?2 = '' OR r.namespace = ?2 OR substr(r.namespace, 1, length(?2) + 1) = ?2 || '/')
			ORDER BY r.id LIMIT +?3`, q.After, q.Prefix, q.Limit+1)
		if err != nil {
			return err
		}
		page, rest := found, false
		if len(found) > q.Limit {
			page, rest = found[:q.Limit], true
		}
		out := make([]*ExportedRecord, len(page))
		byID := make(map[string]*ExportedRecord, len(page))
		ids := make([]string, len(page))
		for i, r := range page {
			out[i] = &ExportedRecord{Record: r}
			byID[r.ID] = out[i]
			ids[i] = r.ID
		}
		if len(ids) > 0 {
			rows, err := tx.QueryContext(ctx, `
				SELECT record_id, client, stance, note, at FROM evidence
				WHERE record_id IN (SELECT value FROM json_each(?))
				ORDER BY record_id, seq`, jsonList(ids))
			if err != nil {
				return classify("export evidence", err)
			}
			defer rows.Close()
			for rows.Next() {
				var (
					id string
					s  Stance
					at sql.NullInt64
				)
				if err := rows.Scan(&id, &s.Client, &s.Stance, &s.Note, &at); err != nil {
					return classify("export evidence", err)
				}
				s.At = sqlval.Time(at)
				if e := byID[id]; e != nil {
					e.Evidence = append(e.Evidence, s)
				}
			}
			if err := rows.Err(); err != nil {
				return classify("export evidence", err)
			}
		}
		recs, more = out, rest
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return recs, more, nil
}
