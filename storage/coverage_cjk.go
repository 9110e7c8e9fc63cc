package storage

import (
	"context"
	"strings"

	"github.com/hearth-memory/hearth/storage/fulltext"
	"github.com/hearth-memory/hearth/storage/internal/fts"
)

// The query coverage of CJK text (docs/abstention.md, "CJK"). Chinese,
// Japanese and Korean are written without spaces, so a query's CJK run is
// no word a record holds as a word: "表结构" is inside "管理表结构的变更",
// whose whole run is one word to both full-text indexes' word tokenizers
// and to fulltext.Holds. A CJK query weighed by such words is covered by
// no record, and the relevance bar abstains on every CJK search. Instead
// coverage weighs the query's CJK terms, the bigrams the CJK list looks
// up (fulltext.CJKTerms), each held by a record whose title or content
// holds it, each by its document frequency in the CJK index of either
// backend.

// cjkQueryWords returns the query words of words that hold no CJK
// character: a word that holds one is weighed by the query's CJK terms.
func cjkQueryWords(words []string) []string {
	out := words[:0:0]
	for _, w := range words {
		if !fulltext.HasCJK(w) {
			out = append(out, w)
		}
	}
	return out
}

// cjkFreqs returns how many records hold each of terms (fulltext.CJKTerms)
// in the CJK index: records_cjk on SQLite, records.cjk on PostgreSQL.
func (db *DB) cjkFreqs(ctx context.Context, terms []string) ([]int64, error) {
	dfs := make([]int64, len(terms))
	if len(terms) == 0 {
		return dfs, nil
	}
	query := `SELECT count(*) FROM records_cjk WHERE records_cjk MATCH ?`
	arg := func(t string) string { return fts.Quoted([]string{t}, "") }
	if db.pg != nil {
		query = `SELECT count(*) FROM records WHERE cjk @@ CAST(? AS tsquery)`
		arg = fts.Lexeme
	}
	err := db.read(ctx, "coverage", func(tx *txn) error {
		for i, t := range terms {
			if err := tx.QueryRowContext(ctx, query, arg(t)).Scan(&dfs[i]); err != nil {
				return classify("coverage", err)
			}
		}
		return nil
	})
	return dfs, err
}

// holdsCJK reports whether a record's title or content holds the CJK
// term t.
func holdsCJK(t string, r *Record) bool {
	return strings.Contains(r.Title, t) || strings.Contains(r.Content, t)
}
