package storage

import (
	"context"
	"fmt"

	"github.com/hearth-memory/hearth/storage/internal/timeline"
)

// TimelineQuery selects records by creation time (timeline.Query); with
// no Statuses every record but deleted ones is listed, and Limit <= 0
// means DefaultTimelineLimit.
type TimelineQuery = timeline.Query

// timelineStatuses are the statuses a timeline lists when none is asked
// for: every one but deleted.
var timelineStatuses = []string{StatusActive, StatusCandidate, StatusSuperseded}

// timelineDefaults returns q with the statuses and the limit it leaves to
// the defaults filled in.
func timelineDefaults(q TimelineQuery) TimelineQuery {
	if len(q.Statuses) == 0 {
		q.Statuses = timelineStatuses
	}
	if q.Limit <= 0 {
		q.Limit = DefaultTimelineLimit
	}
	return q
}

// Timeline returns records newest first by creation time, then by id
// descending: by default those that are not deleted (superseded and
// candidate records included), or those of q.Statuses.
//
// It returns Invalid (Field "types[i]" or "statuses[i]") for an unknown type
// or status, and NotFound (Field "after_id") when q.After names no record.
func (db *DB) Timeline(ctx context.Context, q TimelineQuery) ([]*Record, error) {
	var recs []*Record
	err := db.TimelinePage(ctx, q, func(p *Page) (err error) {
		recs, err = p.Records(0, p.Len())
		return err
	})
	return recs, err
}

// Page is a page of records chosen in one snapshot, in order, whose records
// are read as they are asked for: a caller that keeps only the first few
// (a reply within a budget) reads only those. It is valid only inside the
// function it was handed to.
type Page struct {
	ctx  context.Context
	tx   *txn
	seqs []int64
}

// Len returns the number of records on the page.
func (p *Page) Len() int { return len(p.seqs) }

// Records returns records i to j-1 of the page, with their anchors, in the
// page's order.
//
// The records are looked up by row id and put in the page's order here, not
// sorted again by SQLite; anchors are read only when one of them has any
// (most records have none), as findRecordsTx would read them.
func (p *Page) Records(i, j int) ([]*Record, error) {
	if i >= j {
		return nil, nil
	}
	seqs := p.seqs[i:j]
	recs, has, err := readRecordsTx(p.ctx, p.tx, "find records", seqs)
	if err != nil {
		return nil, err
	}
	// The page was chosen in this snapshot, so each of its rows is found;
	// should one not be, it is left out as a lookup by id would leave it.
	out := make([]*Record, 0, len(seqs))
	var anchored []*Record
	for _, seq := range seqs {
		if r := recs[seq]; r != nil {
			out = append(out, r)
			if has[seq] {
				anchored = append(anchored, r)
			}
		}
	}
	if err := attachAnchorsTx(p.ctx, p.tx, anchored); err != nil {
		return nil, err
	}
	return out, nil
}

// TimelinePage chooses the page Timeline returns for q and calls fn with
// it, in the snapshot that chose it; fn's error is returned.
//
// It returns Invalid (Field "types[i]" or "statuses[i]") for an unknown type
// or status, and NotFound (Field "after_id") when q.After names no record.
func (db *DB) TimelinePage(ctx context.Context, q TimelineQuery, fn func(*Page) error) error {
	for i, t := range q.Types {
		if err := CheckType(fmt.Sprintf("types[%d]", i), t); err != nil {
			return err
		}
	}
	for i, s := range q.Statuses {
		if err := CheckStatus(fmt.Sprintf("statuses[%d]", i), s); err != nil {
			return err
		}
	}
	q = timelineDefaults(q)
	return db.read(ctx, "timeline", func(tx *txn) error {
		seqs, err := timeline.Select(ctx, tx, q)
		if err != nil {
			return err
		}
		return fn(&Page{ctx: ctx, tx: tx, seqs: seqs})
	})
}
