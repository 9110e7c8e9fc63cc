package storage

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// TimelineQuery selects records by creation time. Namespaces, Types and
// Statuses filter when not empty; with no Statuses every record but deleted
// ones is listed. Since is inclusive and Until exclusive; a zero time leaves
// that end open. After, the id of the last record of a previous page, goes
// on from there in the timeline's order. Limit <= 0 means
// DefaultTimelineLimit.
type TimelineQuery struct {
	Namespaces []string
	Types      []string
	Statuses   []string
	Since      time.Time
	Until      time.Time
	After      string
	Limit      int
}

// timelineStatuses are the statuses a timeline lists when none is asked
// for: every one but deleted.
var timelineStatuses = []string{StatusActive, StatusCandidate, StatusSuperseded}

// maxTimelineWalks bounds the walks one timeline merges when it walks each
// namespace and status asked for. Past it (many namespaces), it walks each
// status and judges the namespace on the index entry instead.
const maxTimelineWalks = 16

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
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultTimelineLimit
	}
	return db.read(ctx, "timeline", func(tx *txn) error {
		var after *timelineCursor
		if q.After != "" {
			after = &timelineCursor{id: q.After}
			switch err := tx.QueryRowContext(ctx, `SELECT created_at FROM records WHERE id = ?`, q.After).Scan(&after.at); {
			case err == sql.ErrNoRows:
				return errorf(NotFound, "after_id", "no record has this id")
			case err != nil:
				return classify("timeline", err)
			}
		}
		query, args := timelineSQL(q, after, limit)
		rows, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return classify("timeline", err)
		}
		defer rows.Close()
		p := &Page{ctx: ctx, tx: tx}
		for rows.Next() {
			var seq int64
			if err := rows.Scan(&seq); err != nil {
				return classify("timeline", err)
			}
			p.seqs = append(p.seqs, seq)
		}
		if err := rows.Err(); err != nil {
			return classify("timeline", err)
		}
		rows.Close()
		return fn(p)
	})
}

// timelineCursor is where a page goes on from: the created_at and id of the
// previous page's last record.
type timelineCursor struct {
	at int64
	id string
}

// timelineSQL returns the statement that lists the row ids (seq) of a
// timeline's page in its order, and its arguments.
//
// Each status, or each namespace and status, is a walk of its own index
// (records_status_timeline_idx, records_namespace_status_timeline_idx,
// migration 0072) already in the timeline's order; the walks are merged
// (UNION ALL under one ORDER BY), so the page costs about its own rows
// whatever the filters leave out, and no two walks hold the same record.
// Only the filters asked for are in the statement, so every walk seeks to
// its range and to the cursor. Nothing is sorted.
func timelineSQL(q TimelineQuery, after *timelineCursor, limit int) (string, []any) {
	var p params
	var filters []string
	if len(q.Types) > 0 {
		// `|| ''` (SQLite's unary +, which PostgreSQL has not for text)
		// keeps the planner off any index that begins with
		// type (records_type_status_idx was one, until 0086): its matches
		// would have to be sorted.
		filters = append(filters, `t.type || '' IN (SELECT value FROM json_each(`+p.add(jsonList(q.Types))+`))`)
	}
	if !q.Since.IsZero() {
		filters = append(filters, `t.created_at >= `+p.add(ms(q.Since)))
	}
	if !q.Until.IsZero() {
		filters = append(filters, `t.created_at < `+p.add(ms(q.Until)))
	}
	if after != nil {
		filters = append(filters, `(t.created_at, t.id) < (`+p.add(after.at)+`, `+p.add(after.id)+`)`)
	}
	statuses := distinct(q.Statuses)
	if len(statuses) == 0 {
		statuses = timelineStatuses
	}
	namespaces := distinct(q.Namespaces)
	var walks []string
	if len(namespaces) > 0 && len(namespaces)*len(statuses) <= maxTimelineWalks {
		for _, ns := range namespaces {
			for _, st := range statuses {
				walks = append(walks, `t.namespace = `+p.add(ns)+` AND t.status = `+p.add(st))
			}
		}
	} else {
		if len(namespaces) > 0 {
			// `|| ''` (as unary + would) keeps the planner on the status's walk.
			filters = append(filters, `t.namespace || '' IN (SELECT value FROM json_each(`+p.add(jsonList(namespaces))+`))`)
		}
		for _, st := range statuses {
			walks = append(walks, `t.status = `+p.add(st))
		}
	}
	var b strings.Builder
	b.WriteString(`SELECT seq FROM (`)
	for i, w := range walks {
		if i > 0 {
			b.WriteString(` UNION ALL `)
		}
		b.WriteString(`SELECT t.seq, t.created_at, t.id FROM records AS t WHERE `)
		b.WriteString(w)
		for _, f := range filters {
			b.WriteString(` AND `)
			b.WriteString(f)
		}
	}
	b.WriteString(` ORDER BY created_at DESC, id DESC LIMIT +` + p.add(limit) + `) AS w`)
	return b.String(), p.args
}

// params numbers a statement's arguments as they are added, so a value
// every part of a compound statement uses is bound once.
type params struct{ args []any }

// add appends v and returns its parameter, ?N.
func (p *params) add(v any) string {
	p.args = append(p.args, v)
	return "?" + strconv.Itoa(len(p.args))
}

// distinct returns ss without repeats, in order.
func distinct(ss []string) []string {
	var out []string
	for _, s := range ss {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
