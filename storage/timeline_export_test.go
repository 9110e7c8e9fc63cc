package storage

import (
	"context"

	"github.com/hearth-memory/hearth/storage/internal/timeline"
)

// MaxTimelineWalks exposes timeline.MaxWalks.
const MaxTimelineWalks = timeline.MaxWalks

// TimelinePlan returns the query plan of q's timeline statement, one
// detail per line; a cursor (q.After) is planned at created_at 0.
func (db *DB) TimelinePlan(ctx context.Context, q TimelineQuery) ([]string, error) {
	var after *timeline.Cursor
	if q.After != "" {
		after = &timeline.Cursor{ID: q.After}
	}
	query, args := timeline.SQL(timelineDefaults(q), after)
	return db.queryPlan(ctx, query, args...)
}

// queryPlan returns the query plan of query with args on a reader, one
// detail per line.
func (db *DB) queryPlan(ctx context.Context, query string, args ...any) ([]string, error) {
	rows, err := db.lite.Reader().QueryContext(ctx, `EXPLAIN QUERY PLAN `+query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var (
			id, parent, notUsed int
			detail              string
		)
		if err := rows.Scan(&id, &parent, &notUsed, &detail); err != nil {
			return nil, err
		}
		plan = append(plan, detail)
	}
	return plan, rows.Err()
}
