package storage

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// Default limits when a query gives none.
const (
	DefaultSearchLimit   = 10
	DefaultTimelineLimit = 20
)

// MinExcludePrefix is the shortest id prefix SearchQuery.Exclude honours;
// shorter entries are ignored (SPEC R-K4).
const MinExcludePrefix = 8

// maxQueryTerms caps the terms a search sends to FTS5: a pasted page should
// not turn into a thousand-way OR.
const maxQueryTerms = 32

// SearchQuery is a full-text search. Text is natural language, never FTS5
// syntax. Namespaces and Types filter when not empty (empty means any).
// Exclude drops records whose id starts with an entry of at least
// MinExcludePrefix characters (case-insensitive). Limit <= 0 means
// DefaultSearchLimit.
type SearchQuery struct {
	Text       string
	Namespaces []string
	Types      []string
	Exclude    []string
	Limit      int
	// AllRepositories admits every repository namespace (github/…, gitea/…,
	// local/…) besides Namespaces: a hub's reach (SPEC R-N5).
	AllRepositories bool
}

// Hit is one search result. BM25 is FTS5's bm25 score with the title
// weighted 3 to the content's 1: lower is better, and hits come best first.
// Snippet is a fragment of the content around the matched words.
type Hit struct {
	Record  *Record
	Snippet string
	BM25    float64
}

// Search finds live records (active or candidate) that share at least one
// meaningful word with q.Text, best first. Text is split into words, lower-cased
// and stripped of stopwords; each word is quoted and the words are ORed, so no
// text can be FTS5 syntax. Text with no meaningful word finds nothing. Runs
// of Chinese, Japanese or Korean text are also looked up, as phrases, in the
// bigram index records_cjk, and the two lists merged by reciprocal rank, so
// a word inside such a sentence is found.
//
// It returns Invalid (Field "types[i]") for an unknown type.
func (db *DB) Search(ctx context.Context, q SearchQuery) ([]Hit, error) {
	for i, t := range q.Types {
		if !ValidType(t) {
			return nil, errorf(Invalid, fmt.Sprintf("types[%d]", i), "must be one of %s", strings.Join(Types, ", "))
		}
	}
	words, cjk := queryWords(q.Text), cjkQuery(q.Text)
	if len(words) == 0 && cjk == "" {
		return nil, nil
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultSearchLimit
	}
	var exclude []string
	for _, p := range q.Exclude {
		if len(p) >= MinExcludePrefix {
			exclude = append(exclude, strings.ToUpper(p))
		}
	}

	snip := newSnippetter(words, q.Text)
	var hits []Hit
	err := db.read(ctx, "search", func(tx *txn) error {
		var lists [][]Hit
		if len(words) > 0 {
			h, err := db.searchWords(ctx, tx, words, snip, q, exclude, limit)
			if err != nil {
				return err
			}
			lists = append(lists, h)
		}
		if cjk != "" {
			h, err := searchTx(ctx, tx, cjkIndex, cjk, nil, snip, q, exclude, limit)
			if err != nil {
				return err
			}
			lists = append(lists, h)
		}
		hits = mergeHits(lists, limit)
		return nil
	})
	return hits, err
}

// Pruning: on a large store, a word that most records hold adds little to
// a rank but makes every record holding it a candidate to score.
var (
	// pruneMinRows is the size of index below which every match is scored
	// (a variable for tests).
	pruneMinRows int64 = 5000
	// pruneCommon: a word held by more than this share of the records is
	// common.
	pruneCommon = 0.05
)

// searchWords searches records_fts for words. Words match title and
// content only; a scope chain is ANDed in as the namespaces' index tokens
// (migration 0006), so FTS5 scores only rows in the chain, the exact
// namespace filter staying the authority.
//
// On a large store, when some words are common (held by more than
// pruneCommon of the records, by the last count), the query first scores
// only the records holding one of the other words — or, when every word is
// common, all of them — still ranked by every word; only when that gate
// gives fewer than limit hits are all matches scored. A record held out is
// one that shares nothing but common words with the query while limit
// better ones exist: it would rank below them.
func (db *DB) searchWords(ctx context.Context, tx *txn, words []string, snip *snippetter, q SearchQuery, exclude []string, limit int) ([]Hit, error) {
	scope, nScope := "", 0
	if len(q.Namespaces) > 0 && !q.AllRepositories {
		nScope = len(q.Namespaces)
		keys := make([]string, len(q.Namespaces))
		for i, ns := range q.Namespaces {
			keys[i] = `"` + scopeToken(ns) + `"`
		}
		scope = "fts_scope : (" + strings.Join(keys, " OR ") + ") AND "
	}
	all := "{title content} : (" + quoted(words, " OR ") + ")"
	joined := strings.Join(words, " ")
	if gate, n := db.gate(words); n > 0 {
		hits, err := searchTx(ctx, tx, wordIndex, scope+"{title content} : ("+gate+") AND "+all,
			[]any{nScope + n, joined}, snip, q, exclude, limit)
		if err != nil || len(hits) >= limit {
			return hits, err
		}
	}
	return searchTx(ctx, tx, wordIndex, scope+all, []any{nScope, joined}, snip, q, exclude, limit)
}

// gate returns the pruning gate for words (see searchWords) and how many
// phrases it holds, or 0 when every match is to be scored.
func (db *DB) gate(words []string) (string, int) {
	rows := db.dfs.rowsSeen.Load()
	if rows < pruneMinRows {
		return "", 0
	}
	var rare, common []string
	for _, w := range words {
		if stem, ok := db.stems.get(w); ok {
			if df, ok := db.dfs.estimate(stem); ok && float64(df) > pruneCommon*float64(rows) {
				common = append(common, w)
				continue
			}
		}
		rare = append(rare, w)
	}
	switch {
	case len(common) == 0:
		return "", 0
	case len(rare) > 0:
		return quoted(rare, " OR "), len(rare)
	default:
		return quoted(common, " AND "), len(common)
	}
}

// quoted quotes each word (a string, never FTS5 syntax) and joins them by op.
func quoted(words []string, op string) string {
	var b strings.Builder
	for i, w := range words {
		if i > 0 {
			b.WriteString(op)
		}
		b.WriteString(`"` + w + `"`)
	}
	return b.String()
}

// index is a full-text index searchTx reads: its table, rank expression
// (whose arguments from ?7 on searchTx's caller gives) and the join it
// needs.
type index struct{ table, rank, join string }

var (
	// wordIndex is records_fts: porter-stemmed words, ranked by hearth_rank.
	wordIndex = index{"records_fts", "hearth_rank(records_fts, ?7, ds.sz, ?8, 3.0, 1.0, 0.0)",
		"JOIN records_fts_docsize AS ds ON ds.id = records_fts.rowid"}
	// cjkIndex is records_cjk: CJK bigrams (migration 0008), ranked by bm25
	// with the same title weight.
	cjkIndex = index{"records_cjk", "bm25(records_cjk, 3.0, 1.0)", ""}
)

// mergeHits merges the hit lists of the word and CJK indexes (each best
// first) by reciprocal rank, as ranking fuses lists, keeping each record
// once; a single list comes back as it is.
func mergeHits(lists [][]Hit, limit int) []Hit {
	switch len(lists) {
	case 0:
		return nil
	case 1:
		return lists[0]
	}
	type merged struct {
		hit   Hit
		score float64
		first int
	}
	var order []string
	byID := map[string]*merged{}
	for _, l := range lists {
		for i, h := range l {
			m := byID[h.Record.ID]
			if m == nil {
				m = &merged{hit: h, first: len(order)}
				byID[h.Record.ID] = m
				order = append(order, h.Record.ID)
			}
			m.score += 1 / float64(60+i+1)
		}
	}
	out := make([]*merged, 0, len(order))
	for _, id := range order {
		out = append(out, byID[id])
	}
	slices.SortStableFunc(out, func(a, b *merged) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return strings.Compare(a.hit.Record.ID, b.hit.Record.ID)
	})
	hits := make([]Hit, 0, min(len(out), limit))
	for _, m := range out[:min(len(out), limit)] {
		hits = append(hits, m.hit)
	}
	return hits
}

// searchTx runs the full-text query match on ix, rankArgs binding the
// rank expression's arguments, with Search's filters, in two steps: every
// matching row is ranked with only what ranking and the filters need, then
// the best limit rows are read whole and snip cuts their snippets. Reading
// every match whole, or running the match again per hit for FTS5's
// snippet(), cost more than ranking.
func searchTx(ctx context.Context, tx *txn, ix index, match string, rankArgs []any, snip *snippetter, q SearchQuery, exclude []string, limit int) ([]Hit, error) {
	rows, err := tx.QueryContext(ctx, `
		SELECT r.seq, `+ix.rank+` AS rank
		FROM `+ix.table+`
		`+ix.join+`
		JOIN records AS r ON r.seq = `+ix.table+`.rowid
		WHERE `+ix.table+` MATCH ?1
			AND r.status IN ('active', 'candidate')
			AND (?2 IS NULL OR r.namespace IN (SELECT value FROM json_each(?2))
				OR (?6 AND (r.namespace GLOB 'github/*' OR r.namespace GLOB 'gitea/*' OR r.namespace GLOB 'local/*')))
			AND (?3 IS NULL OR r.type IN (SELECT value FROM json_each(?3)))
			AND (?4 IS NULL OR NOT EXISTS (
				SELECT 1 FROM json_each(?4) AS x WHERE substr(r.id, 1, length(x.value)) = x.value))
		ORDER BY rank, r.id
		LIMIT +?5`,
		append([]any{match, jsonList(q.Namespaces), jsonList(q.Types), jsonList(exclude), limit, q.AllRepositories}, rankArgs...)...,
	)
	if err != nil {
		return nil, classify("search", err)
	}
	type ranked struct {
		seq  int64
		rank float64
	}
	var top []ranked
	for rows.Next() {
		var r ranked
		if err := rows.Scan(&r.seq, &r.rank); err != nil {
			rows.Close()
			return nil, classify("search", err)
		}
		top = append(top, r)
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return nil, classify("search", err)
	}
	rows.Close()

	// The best rows, read whole; their snippets are cut in Go.
	hits := make([]Hit, 0, len(top))
	recs := make([]*Record, 0, len(top))
	for _, t := range top {
		h := Hit{BM25: t.rank}
		row := tx.QueryRowContext(ctx, `SELECT `+recordColumns+` FROM records AS r WHERE r.seq = ?`, t.seq)
		if h.Record, err = scanRecord(row); err != nil {
			return nil, classify("search", err)
		}
		h.Snippet = snip.cut(h.Record.Content)
		hits = append(hits, h)
		recs = append(recs, h.Record)
	}
	if err := attachAnchorsTx(ctx, tx, recs); err != nil {
		return nil, err
	}
	return hits, nil
}

// scopeToken is a namespace's single token in the full-text index, as the
// generated column records.fts_scope (migration 0006) computes it:
// 'ns' || hex(namespace) || '0'.
func scopeToken(ns string) string {
	return "ns" + strings.ToUpper(hex.EncodeToString([]byte(ns))) + "0"
}

// queryWords returns the distinct lower-cased words (runs of letters and
// digits) of natural-language text that are not stopwords, in order, at
// most maxQueryTerms.
func queryWords(text string) []string {
	var out []string
	seen := make(map[string]bool)
	for _, w := range strings.FieldsFunc(text, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		w = strings.ToLower(w)
		if stopwords[w] || seen[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
		if len(out) == maxQueryTerms {
			break
		}
	}
	return out
}

// ftsQuery turns natural-language text into an FTS5 query: its words (see
// queryWords), each in double quotes (a string, never an operator or column
// filter), joined by OR. It returns "" when no word is left.
func ftsQuery(text string) string {
	return quoted(queryWords(text), " OR ")
}

// stopwords are English words too common to say what a question is about.
// Negations (no, not, never) are kept: they matter in constraints.
var stopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`
		a about am an and any are as at be been being but by can could
		did do does doing don for from had has have having he her here his
		how i if in into is it its just me my of on or our ours she should
		so some such than that the their theirs them then there these they
		this those to us was we were what when where which while who whom
		whose why will with would you your yours s t ll re ve d m`) {
		stopwords[w] = true
	}
}
