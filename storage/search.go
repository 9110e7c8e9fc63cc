package storage

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"
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
// text can be FTS5 syntax. Text with no meaningful word finds nothing.
//
// It returns Invalid (Field "types[i]") for an unknown type.
func (db *DB) Search(ctx context.Context, q SearchQuery) ([]Hit, error) {
	for i, t := range q.Types {
		if !ValidType(t) {
			return nil, errorf(Invalid, fmt.Sprintf("types[%d]", i), "must be one of %s", strings.Join(Types, ", "))
		}
	}
	words := ftsQuery(q.Text)
	if words == "" {
		return nil, nil
	}
	// Words match title and content only. A scope chain is ANDed in as the
	// namespaces' index tokens (migration 0006), so FTS5 scores only rows in
	// the chain; the exact namespace filter below stays the authority.
	match := "{title content} : (" + words + ")"
	if len(q.Namespaces) > 0 && !q.AllRepositories {
		keys := make([]string, len(q.Namespaces))
		for i, ns := range q.Namespaces {
			keys[i] = `"` + scopeToken(ns) + `"`
		}
		match = "fts_scope : (" + strings.Join(keys, " OR ") + ") AND " + match
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

	var hits []Hit
	err := db.read(ctx, "search", func(tx *txn) (err error) {
		hits, err = searchTx(ctx, tx, match, q, exclude, limit)
		return err
	})
	return hits, err
}

// searchTx runs the full-text query match with Search's filters.
func searchTx(ctx context.Context, tx *txn, match string, q SearchQuery, exclude []string, limit int) ([]Hit, error) {
	rows, err := tx.QueryContext(ctx, `
		SELECT `+recordColumns+`,
			snippet(records_fts, 1, '', '', '…', 24),
			bm25(records_fts, 3.0, 1.0, 0.0) AS rank
		FROM records_fts
		JOIN records AS r ON r.seq = records_fts.rowid
		WHERE records_fts MATCH ?1
			AND r.status IN ('active', 'candidate')
			AND (?2 IS NULL OR r.namespace IN (SELECT value FROM json_each(?2))
				OR (?6 AND (r.namespace GLOB 'github/*' OR r.namespace GLOB 'gitea/*' OR r.namespace GLOB 'local/*')))
			AND (?3 IS NULL OR r.type IN (SELECT value FROM json_each(?3)))
			AND (?4 IS NULL OR NOT EXISTS (
				SELECT 1 FROM json_each(?4) AS x WHERE substr(r.id, 1, length(x.value)) = x.value))
		ORDER BY rank, r.id
		LIMIT ?5`,
		match, jsonList(q.Namespaces), jsonList(q.Types), jsonList(exclude), limit, q.AllRepositories,
	)
	if err != nil {
		return nil, classify("search", err)
	}
	defer rows.Close()
	var (
		hits []Hit
		recs []*Record
	)
	for rows.Next() {
		var h Hit
		h.Record, err = scanRecord(rows, &h.Snippet, &h.BM25)
		if err != nil {
			return nil, classify("search", err)
		}
		hits = append(hits, h)
		recs = append(recs, h.Record)
	}
	if err := rows.Err(); err != nil {
		return nil, classify("search", err)
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

// ftsQuery turns natural-language text into an FTS5 query: the distinct
// lower-cased words (runs of letters and digits) that are not stopwords, each
// in double quotes (a string, never an operator or column filter), joined by
// OR. It returns "" when no word is left.
func ftsQuery(text string) string {
	words := strings.FieldsFunc(text, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	var b strings.Builder
	seen := make(map[string]bool)
	for _, w := range words {
		w = strings.ToLower(w)
		if stopwords[w] || seen[w] {
			continue
		}
		seen[w] = true
		if b.Len() > 0 {
			b.WriteString(" OR ")
		}
		b.WriteString(`"` + w + `"`)
		if len(seen) == maxQueryTerms {
			break
		}
	}
	return b.String()
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

// Timeline returns records newest first by creation time, then by id
// descending: by default those that are not deleted (superseded and
// candidate records included), or those of q.Statuses.
//
// It returns Invalid (Field "types[i]" or "statuses[i]") for an unknown type
// or status, and NotFound (Field "after_id") when q.After names no record.
func (db *DB) Timeline(ctx context.Context, q TimelineQuery) ([]*Record, error) {
	for i, t := range q.Types {
		if !ValidType(t) {
			return nil, errorf(Invalid, fmt.Sprintf("types[%d]", i), "must be one of %s", strings.Join(Types, ", "))
		}
	}
	for i, s := range q.Statuses {
		if !ValidStatus(s) {
			return nil, errorf(Invalid, fmt.Sprintf("statuses[%d]", i), "must be one of active, candidate, superseded, deleted")
		}
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultTimelineLimit
	}
	// Only the filters asked for are in the statement, so the planner can
	// use an index for them and seek to the cursor.
	var (
		where []string
		args  []any
	)
	add := func(cond string, arg ...any) {
		where = append(where, cond)
		args = append(args, arg...)
	}
	if len(q.Statuses) == 0 {
		add(`t.status <> 'deleted'`)
	} else {
		add(`t.status IN (SELECT value FROM json_each(?))`, jsonList(q.Statuses))
	}
	if len(q.Namespaces) > 0 {
		// The unary + keeps the planner off the namespace index: walking
		// records_timeline_idx in order (migration 0071) stops after a page,
		// where a namespace's index would sort all its records first.
		add(`+t.namespace IN (SELECT value FROM json_each(?))`, jsonList(q.Namespaces))
	}
	if len(q.Types) > 0 {
		add(`t.type IN (SELECT value FROM json_each(?))`, jsonList(q.Types))
	}
	if !q.Since.IsZero() {
		add(`t.created_at >= ?`, ms(q.Since))
	}
	if !q.Until.IsZero() {
		add(`t.created_at < ?`, ms(q.Until))
	}
	var recs []*Record
	err := db.read(ctx, "timeline", func(tx *txn) (err error) {
		where, args := where, args
		if q.After != "" {
			var at int64
			switch err := tx.QueryRowContext(ctx, `SELECT created_at FROM records WHERE id = ?`, q.After).Scan(&at); {
			case err == sql.ErrNoRows:
				return errorf(NotFound, "after_id", "no record has this id")
			case err != nil:
				return classify("timeline", err)
			}
			where = append(slices.Clip(where), `(t.created_at, t.id) < (?, ?)`)
			args = append(slices.Clip(args), at, q.After)
		}
		// The page is chosen by its row ids alone, so ordering sorts narrow
		// rows, never every candidate's content.
		recs, err = findRecordsTx(ctx, tx, `WHERE r.seq IN (
				SELECT t.seq FROM records AS t WHERE `+strings.Join(where, " AND ")+`
				ORDER BY t.created_at DESC, t.id DESC LIMIT ?)
			ORDER BY r.created_at DESC, r.id DESC`, append(slices.Clip(args), limit)...)
		return err
	})
	return recs, err
}
