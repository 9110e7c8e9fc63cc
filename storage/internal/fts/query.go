package fts

import (
	"context"
	"math"
	"strings"

	"github.com/hearth-memory/hearth/storage/fulltext"
	"github.com/hearth-memory/hearth/storage/internal/engine"
)

// Pruning: on a large store, a word that most records hold adds little to
// a rank but makes every record holding it a candidate to score.
var (
	// PruneMinRows is the size of index below which every match is scored
	// (a variable for tests).
	PruneMinRows int64 = 5000
	// pruneCommon: a word held by more than this share of the records is
	// common.
	pruneCommon = 0.05
)

// A full-text rowid is the record's namespace key shifted SeqBits left,
// ORed with its seq (migration 0075).
const (
	SeqBits       = 40
	SeqMask int64 = 1<<SeqBits - 1
)

// RowRange bounds the full-text rowids a query reads, both ends included.
type RowRange struct{ Lo, Hi int64 }

// GateOf returns the pruning gate for words (see Search in storage), how many
// phrases it holds, or 0 when every match is to be scored, and whether the
// gate is of common words, all of which a row must hold, rather than of
// rare words, any of which it may.
func (x *Index) GateOf(words []string) (gate string, n int, common bool) {
	rows := x.dfs.rowsSeen.Load()
	if rows < PruneMinRows {
		return "", 0, false
	}
	var rare, commons []string
	for _, w := range words {
		if stem, ok := x.stems.Get(w); ok {
			if x.dfs.absent(x, stem) {
				// In no record (a synonym the store never uses, say): a
				// gate of it would hold nothing back but cost a query.
				continue
			}
			if df, ok := x.dfs.estimate(stem); ok && float64(df) > pruneCommon*float64(rows) {
				commons = append(commons, w)
				continue
			}
		}
		rare = append(rare, w)
	}
	switch {
	case len(commons) == 0:
		return "", 0, false
	case len(rare) > 0:
		return Quoted(rare, " OR "), len(rare), false
	default:
		return Quoted(commons, " AND "), len(commons), true
	}
}

// Quoted quotes each word (a string, never FTS5 syntax) and joins them by op.
func Quoted(words []string, op string) string {
	var b strings.Builder
	for i, w := range words {
		if i > 0 {
			b.WriteString(op)
		}
		b.WriteString(`"` + w + `"`)
	}
	return b.String()
}

// Query turns natural-language text into an FTS5 query: its words (see
// fulltext.QueryWords), each in double quotes (a string, never an operator
// or column filter), joined by OR. It returns "" when no word is left.
func Query(text string) string {
	return Quoted(fulltext.QueryWords(text), " OR ")
}

// GateHolds reports whether a gate of rare words lets through at least
// limit rows of the range (every row when nil): counting them reads only
// those words' entries, and a gate that lets fewer through would only
// be followed by scoring every match.
func GateHolds(ctx context.Context, tx *engine.Tx, gate string, rows *RowRange, limit int) bool {
	lo, hi := int64(0), int64(math.MaxInt64)
	if rows != nil {
		lo, hi = rows.Lo, rows.Hi
	}
	rs, err := tx.QueryContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM records_fts
		WHERE records_fts MATCH ? AND records_fts.rowid BETWEEN ? AND ? LIMIT +?)`,
		"{title content} : ("+gate+")", lo, hi, limit)
	if err != nil {
		return true // the gate's own query will say what went wrong
	}
	defer rs.Close()
	n := 0
	if rs.Next() {
		rs.Scan(&n)
	}
	return n >= limit
}
