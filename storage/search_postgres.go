package storage

import (
	"context"

	"github.com/hearth-memory/hearth/storage/fulltext"
	"github.com/hearth-memory/hearth/storage/internal/fts"
)

// Search's full text on PostgreSQL (docs/postgres.md, "Full-text search"):
// the same words, synonyms and CJK bigrams matched against records.fts and
// records.cjk and ranked by the same BM25 (fts.PGIndex), with the same
// filter; readHits, feedback and the merge of the lists are Search's own.

// searchWordsPostgres is searchWords on PostgreSQL: every match of x's
// terms in q's reach scored, the best limit returned.
func (db *DB) searchWordsPostgres(ctx context.Context, tx *txn, x fulltext.Expansion, q SearchQuery, exclude []string, limit int) ([]ranked, error) {
	rs, err := db.pgfts.Words(ctx, tx, x, pgFilter(q, exclude), limit)
	return rankedOf(rs), classify("search", err)
}

// searchCJK ranks the records whose CJK text holds a bigram of cjk (the
// query's CJK terms, fulltext.CJKQuery's on SQLite) for Search.
func (db *DB) searchCJK(ctx context.Context, tx *txn, cjk string, q SearchQuery, exclude []string, limit int) ([]ranked, error) {
	if db.pg == nil {
		return rankTx(ctx, tx, cjkIndex, cjk, nil, nil, q, exclude, limit)
	}
	rs, err := db.pgfts.CJK(ctx, tx, q.Text, pgFilter(q, exclude), limit)
	return rankedOf(rs), classify("search", err)
}

// pgFilter is Search's filter as fts.PGIndex takes it.
func pgFilter(q SearchQuery, exclude []string) fts.Filter {
	return fts.Filter{Namespaces: q.Namespaces, AllRepositories: q.AllRepositories, Types: q.Types, Exclude: exclude}
}

// rankedOf gives PostgreSQL's ranked records as readHits reads them.
func rankedOf(rs []fts.Ranked) []ranked {
	out := make([]ranked, len(rs))
	for i, r := range rs {
		out[i] = ranked{seq: r.Seq, id: r.ID, rank: r.Rank}
	}
	return out
}
