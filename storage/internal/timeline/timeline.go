// Package timeline chooses a page of the timeline (docs/design.md,
// "Storage layout"; memory_timeline): records by creation time, newest
// first, filtered by namespace, type, status and time, from a cursor on.
// It gives the page as the records' row ids (seq), in order; reading the
// records is the storage package's, as are the statuses listed when none
// is asked for.
//
// It works inside the engine's transactions (*engine.Tx). Its refusals
// are *errs.Error.
package timeline

import (
	"context"
	"database/sql"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hearth-memory/hearth/storage/internal/engine"
	"github.com/hearth-memory/hearth/storage/internal/errs"
	"github.com/hearth-memory/hearth/storage/internal/sqlval"
)

// Query selects records by creation time. Namespaces, Types and Statuses
// filter when not empty. Since is inclusive and Until exclusive; a zero
// time leaves that end open. After, the id of the last record of a
// previous page, goes on from there in the timeline's order. Limit is
// the page's size; storage fills in its default for Limit <= 0, and the
// statuses listed when none is asked for.
type Query struct {
	Namespaces []string
	Types      []string
	Statuses   []string
	Since      time.Time
	Until      time.Time
	After      string
	Limit      int
}

// MaxWalks bounds the walks one timeline merges when it walks each
// namespace and status asked for. Past it (many namespaces), it walks each
// status and judges the namespace on the index entry instead.
const MaxWalks = 16

// Cursor is where a page goes on from: the created_at (unix ms) and id of
// the previous page's last record.
type Cursor struct {
	At int64
	ID string
}

// Select returns the row ids of q's page of at most q.Limit records, in
// the timeline's order: created_at descending, then id descending.
// q.Statuses must name at least one status. It returns NotFound (Field
// "after_id") when q.After names no record.
func Select(ctx context.Context, tx *engine.Tx, q Query) ([]int64, error) {
	var after *Cursor
	if q.After != "" {
		after = &Cursor{ID: q.After}
		switch err := tx.QueryRowContext(ctx, `SELECT created_at FROM records WHERE id = ?`, q.After).Scan(&after.At); {
		case err == sql.ErrNoRows:
			return nil, errs.Errorf(errs.NotFound, "after_id", "no record has this id")
		case err != nil:
			return nil, errs.Wrap("timeline", err)
		}
	}
	query, args := SQL(q, after)
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, errs.Wrap("timeline", err)
	}
	defer rows.Close()
	var seqs []int64
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			return nil, errs.Wrap("timeline", err)
		}
		seqs = append(seqs, seq)
	}
	return seqs, errs.Wrap("timeline", rows.Err())
}

// SQL returns the statement that lists the row ids (seq) of a timeline's
// page in its order, and its arguments; q.Statuses must name at least one
// status and q.Limit be positive.
//
// Each status, or each namespace and status, is a walk of its own index
// (records_status_timeline_idx, records_namespace_status_timeline_idx,
// migration 0072) already in the timeline's order; the walks are merged
// (UNION ALL under one ORDER BY), so the page costs about its own rows
// whatever the filters leave out, and no two walks hold the same record.
// Only the filters asked for are in the statement, so every walk seeks to
// its range and to the cursor. Nothing is sorted.
func SQL(q Query, after *Cursor) (string, []any) {
	var p params
	var filters []string
	if len(q.Types) > 0 {
		// `|| ''` (SQLite's unary +, which PostgreSQL has not for text)
		// keeps the planner off any index that begins with
		// type (records_type_status_idx was one, until 0086): its matches
		// would have to be sorted.
		filters = append(filters, `t.type || '' IN (SELECT value FROM json_each(`+p.add(sqlval.Strings(q.Types))+`))`)
	}
	if !q.Since.IsZero() {
		filters = append(filters, `t.created_at >= `+p.add(q.Since.UnixMilli()))
	}
	if !q.Until.IsZero() {
		filters = append(filters, `t.created_at < `+p.add(q.Until.UnixMilli()))
	}
	if after != nil {
		filters = append(filters, `(t.created_at, t.id) < (`+p.add(after.At)+`, `+p.add(after.ID)+`)`)
	}
	statuses := distinct(q.Statuses)
	namespaces := distinct(q.Namespaces)
	var walks []string
	if len(namespaces) > 0 && len(namespaces)*len(statuses) <= MaxWalks {
		for _, ns := range namespaces {
			for _, st := range statuses {
				walks = append(walks, `t.namespace = `+p.add(ns)+` AND t.status = `+p.add(st))
			}
		}
	} else {
		if len(namespaces) > 0 {
			// `|| ''` (as unary + would) keeps the planner on the status's walk.
			filters = append(filters, `t.namespace || '' IN (SELECT value FROM json_each(`+p.add(sqlval.Strings(namespaces))+`))`)
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
	b.WriteString(` ORDER BY created_at DESC, id DESC LIMIT +` + p.add(q.Limit) + `) AS w`)
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
