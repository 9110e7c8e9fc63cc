package storage

import (
	"context"

	"github.com/hearth-memory/hearth/storage/fulltext"
)

// Warm does ahead of time what a store's first search would otherwise do
// while a caller waits: it builds the thesaurus's synonym index and opens
// a connection in the readers' pool and in the vocabulary pool, each
// running fts.Index.Register (FTS5, hearth_rank, the planner's settings). A prompt
// recall must answer within its hook's deadline even as the first query
// after a start. Warm is safe to call more than once; a store that is not
// warmed works the same, its first search slower.
func (db *DB) Warm(ctx context.Context) error {
	fulltext.Warm()
	if db.lite == nil {
		return db.pg.DB().PingContext(ctx)
	}
	return db.lite.Warm(ctx)
}
