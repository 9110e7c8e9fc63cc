package fts

// Full-text search on PostgreSQL (docs/postgres.md, "Full-text search"):
// the same query as on SQLite — the words of fulltext.QueryWords and the
// synonyms fulltext.Expand adds, ORed; the CJK bigrams of
// fulltext.CJKTerms — matched against records.fts and records.cjk (the
// schema's generated tsvector columns, with GIN indexes) and ranked by the
// same BM25 hearth_rank computes on SQLite: each term's IDF from its
// document frequency (a synonym's times its weight), its frequency in a
// record counted from the tsvector's positions with the title (weight A)
// three times the content (weight B), and the record's length in tokens
// against the average.

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hearth-memory/hearth/storage/fulltext"
)

// Querier runs a query of a read transaction, its placeholders written
// ?NNN as the record domain writes them (the PostgreSQL engine's
// transaction rebinds them, docs/postgres.md "The dialect").
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Column weights, as SQLite's searches give bm25 and hearth_rank: a
// title match counts three times a content match.
const (
	pgTitleWeight   = 3.0
	pgContentWeight = 1.0
)

// pgStatsAge is how long the index's statistics (its rows and their
// average length) and the document frequencies counted serve once the
// write generation has moved, or another front end may have written:
// counting the average length reads every row's tsvector, and a ranking
// moves little with a minute's writes.
var pgStatsAge = time.Minute

// maxPGWords bounds the words whose lexemes PGIndex remembers.
const maxPGWords = 1 << 14

// PGIndex is the PostgreSQL full-text ranking's state between queries:
// the lexemes of the words it met (fixed by the schema's text search
// configuration), the index's statistics and the document frequencies of
// the terms it counted, both per write generation (gen, the engine's Gen),
// at most pgStatsAge old once it moved.
type PGIndex struct {
	gen func() uint64

	mu    sync.Mutex
	words map[string]pgWord
	stats map[pgColumn]pgStats
	dfs   map[pgColumn]map[string]int64
	dfGen uint64
	dfAt  time.Time
}

// NewPG returns a PGIndex over the store whose write generation gen gives.
func NewPG(gen func() uint64) *PGIndex {
	return &PGIndex{gen: gen}
}

// pgColumn is a full-text column of records.
type pgColumn string

const (
	pgWords pgColumn = "fts" // words, in the hearth configuration
	pgCJK   pgColumn = "cjk" // CJK bigrams and characters
)

// pgWord is a query word as the hearth configuration reads it: the
// tsquery that finds it (PostgreSQL's own text of phraseto_tsquery) and
// its lexemes; none for a word the configuration indexes nothing of.
type pgWord struct {
	query string
	lex   []string
}

// pgStats are a column's rows and their average length in tokens.
type pgStats struct {
	rows  int64
	avgdl float64
	gen   uint64
	at    time.Time
}

// pgTerm is one term of a query: the tsquery that matches it, its
// lexemes (a record's frequency of the term is its rarest lexeme's: for
// a phrase, an upper bound), its document frequency and its weight.
type pgTerm struct {
	// parts are the tsqueries of the term's words, each counted on its
	// own; query, the term's, is theirs in a row (<->).
	parts  []string
	query  string
	lex    []string
	df     int64
	weight fulltext.RankWord
	idf    float64
}

// Filter is Search's filter: live records (active or candidate) in
// Namespaces (any when empty) or, with AllRepositories, in a repository
// namespace; of Types (any when empty); whose ids start with none of
// Exclude (upper-case prefixes).
type Filter struct {
	Namespaces      []string
	AllRepositories bool
	Types           []string
	Exclude         []string
}

// Ranked is a record a PostgreSQL search found: its seq and id, and its
// rank, BM25 negated as FTS5 gives it (lower is better).
type Ranked struct {
	Seq  int64
	ID   string
	Rank float64
}

// Words ranks the records that hold a term of x (its words and their
// synonyms, each word or phrase) in records.fts, best first, at most
// limit, with f's filter: Search's word list on PostgreSQL.
func (x *PGIndex) Words(ctx context.Context, q Querier, ex fulltext.Expansion, f Filter, limit int) ([]Ranked, error) {
	terms, err := x.wordTerms(ctx, q, ex)
	if err != nil {
		return nil, err
	}
	return x.rank(ctx, q, pgWords, terms, f, limit)
}

// wordTerms are the terms of a word search of ex, as the hearth
// configuration reads them, asked in q.
func (x *PGIndex) wordTerms(ctx context.Context, q Querier, ex fulltext.Expansion) ([]pgTerm, error) {
	words, err := x.lexemes(ctx, q, ex.Terms())
	if err != nil {
		return nil, err
	}
	weights := strings.Fields(ex.RankWords())
	var terms []pgTerm
	for i, t := range ex.Terms() {
		term := pgTerm{weight: fulltext.RankWord{Weight: 1}}
		if i < len(weights) {
			term.weight = fulltext.ParseRankWord(weights[i])
		}
		var parts []string
		for _, w := range strings.Fields(t) {
			pw := words[w]
			if pw.query == "" {
				continue
			}
			parts = append(parts, "("+pw.query+")")
			term.parts = append(term.parts, pw.query)
			term.lex = append(term.lex, pw.lex...)
		}
		// A term of which nothing is indexed matches no record: it keeps
		// its place (a synonym's weight names terms by index) with no
		// query.
		term.query = strings.Join(parts, " <-> ")
		terms = append(terms, term)
	}
	return terms, nil
}

// CJK ranks the records whose CJK text holds a CJK term of text
// (fulltext.CJKTerms: bigrams, or a lone character) in records.cjk, best
// first, at most limit, with f's filter: Search's CJK list on PostgreSQL.
func (x *PGIndex) CJK(ctx context.Context, q Querier, text string, f Filter, limit int) ([]Ranked, error) {
	return x.rank(ctx, q, pgCJK, cjkTerms(text), f, limit)
}

// WordFreqs returns the number of records and, for each of words (query
// words, fulltext.QueryWords), how many records hold it in records.fts,
// counted or cached as Words counts them: the document frequencies
// storage's query coverage weighs words by.
func (x *PGIndex) WordFreqs(ctx context.Context, q Querier, words []string) (rows int64, dfs []int64, err error) {
	lex, err := x.lexemes(ctx, q, words)
	if err != nil {
		return 0, nil, err
	}
	st, err := x.statsOf(ctx, q, pgWords)
	if err != nil {
		return 0, nil, err
	}
	terms := make([]pgTerm, len(words))
	for i, w := range words {
		if pw := lex[w]; pw.query != "" {
			terms[i] = pgTerm{parts: []string{pw.query}, query: pw.query, lex: pw.lex}
		}
	}
	if err := x.docFreqs(ctx, q, pgWords, terms, st.rows); err != nil {
		return 0, nil, err
	}
	dfs = make([]int64, len(words))
	for i, t := range terms {
		dfs[i] = t.df
	}
	return st.rows, dfs, nil
}

// Lexeme writes s as a tsquery of the one lexeme s, taken as it is (no
// configuration reads it): quoted, its quotes doubled and its backslashes
// escaped, so that no text can be tsquery syntax. s must not be empty.
func Lexeme(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(s) + "'"
}

// lexemes returns the hearth configuration's reading of each word of
// terms (pgWord), from those it remembers or asked PostgreSQL for in q.
func (x *PGIndex) lexemes(ctx context.Context, q Querier, terms []string) (map[string]pgWord, error) {
	out := map[string]pgWord{}
	var ask []string
	x.mu.Lock()
	for _, t := range terms {
		for _, w := range strings.Fields(t) {
			if pw, ok := x.words[w]; ok {
				out[w] = pw
			} else if _, asked := out[w]; !asked {
				out[w] = pgWord{}
				ask = append(ask, w)
			}
		}
	}
	x.mu.Unlock()
	if len(ask) == 0 {
		return out, nil
	}
	rows, err := q.QueryContext(ctx, `
		SELECT t.i, phraseto_tsquery('hearth', t.w)::text, to_jsonb(tsvector_to_array(to_tsvector('hearth', t.w)))::text
		FROM jsonb_array_elements_text(?1::jsonb) WITH ORDINALITY AS t (w, i)`, jsonText(ask))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			i      int
			pw     pgWord
			lexeme string
		)
		if err := rows.Scan(&i, &pw.query, &lexeme); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(lexeme), &pw.lex); err != nil {
			return nil, fmt.Errorf("lexemes of %q: %w", ask[i-1], err)
		}
		if len(pw.lex) == 0 {
			pw.query = ""
		}
		out[ask[i-1]] = pw
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.words == nil || len(x.words)+len(ask) > maxPGWords {
		x.words = map[string]pgWord{}
	}
	for _, w := range ask {
		x.words[w] = out[w]
	}
	return out, nil
}

// rank finds the records of column that match a term and ranks them by
// BM25 over terms, in q: first, when gateOf gives a gate, only the records
// that match one of its terms, and when the limit-th best of them beats
// what a record matching none could score, those are the answer; else
// every match.
func (x *PGIndex) rank(ctx context.Context, q Querier, col pgColumn, terms []pgTerm, f Filter, limit int) ([]Ranked, error) {
	match := orQuery(terms)
	if match == "" || limit <= 0 {
		return nil, nil
	}
	st, err := x.weigh(ctx, q, col, terms)
	if err != nil {
		return nil, err
	}
	if gate, rest := gateOf(terms, st.rows); gate != "" {
		top, err := x.score(ctx, q, col, gate, terms, f, st, limit)
		if err != nil || len(top) == limit && -top[limit-1].Rank > rest {
			return top, err
		}
	}
	return x.score(ctx, q, col, match, terms, f, st, limit)
}

// weigh sets each term's document frequency and IDF in col (docFreqs,
// weighTerms) and returns col's statistics, counted or cached, in q.
func (x *PGIndex) weigh(ctx context.Context, q Querier, col pgColumn, terms []pgTerm) (pgStats, error) {
	st, err := x.statsOf(ctx, q, col)
	if err != nil {
		return st, err
	}
	if err := x.docFreqs(ctx, q, col, terms, st.rows); err != nil {
		return st, err
	}
	weighTerms(terms, st.rows)
	return st, nil
}

// pgGateShare: a gate whose terms more than this share of the records
// hold is not tried (scoring its matches would cost nearly what scoring
// all does).
const pgGateShare = 0.5

// gateOf returns the gate of a ranking (docs/postgres.md, "Cost"): the
// tsquery matching the records that hold one of the terms a record may
// score most by — each term bounded by the most it can add to a score,
// its IDF times k1+1, the rarer first — and the most a record holding none
// of them can score, the other terms' bounds summed. The gate holds every
// term of at most pruneCommon of rows (those of no record too: their
// counts may be a minute old), and the first of the others when those
// match nothing. It gives "" when the gate would hold every term, or
// terms held by more than pgGateShare of rows.
func gateOf(terms []pgTerm, rows int64) (gate string, rest float64) {
	var order []int
	for i, t := range terms {
		if t.query != "" {
			order = append(order, i)
		}
	}
	bound := func(t pgTerm) float64 { return t.idf * (bm25K1 + 1) }
	slices.SortStableFunc(order, func(a, b int) int {
		if c := cmp.Compare(bound(terms[b]), bound(terms[a])); c != 0 {
			return c
		}
		return cmp.Compare(terms[a].df, terms[b].df)
	})
	var in []pgTerm
	var held int64
	for _, i := range order {
		t := terms[i]
		if float64(t.df) <= pruneCommon*float64(rows) || held == 0 {
			in = append(in, t)
			held += t.df
			continue
		}
		rest += bound(t)
	}
	if len(in) == len(order) || float64(held) > pgGateShare*float64(rows) {
		return "", 0
	}
	// Summed in another order than the score's: a margin for rounding.
	return orQuery(in), rest * (1 + 1e-9)
}

// score ranks the records of col that match the tsquery match by BM25
// over terms, best first, at most limit, with f's filter, in q. Each
// match is ranked on its own row alone (no join across matches): its
// length (pgColumn.length), and per term the frequency of its rarest
// lexeme, title positions weighing pgTitleWeight and content ones
// pgContentWeight, when the record holds all of them (and for a phrase,
// the phrase). The row's tsvector is cut down to the query's lexemes
// before it is unnested: ts_delete of the others, the row's lexemes
// less the query's (tsvector_to_array), all done by PostgreSQL's C. A
// term of one lexeme adds to the score from that row alone, its IDF looked
// up by the lexeme (the IDFs of terms of one lexeme summed: a word and its
// synonym of one stem); a phrase is matched against the row first.
func (x *PGIndex) score(ctx context.Context, q Querier, col pgColumn, match string, terms []pgTerm, f Filter, st pgStats, limit int) ([]Ranked, error) {
	type phraseArg struct {
		Q   string   `json:"q"`
		Lex []string `json:"lex"`
		IDF float64  `json:"idf"`
	}
	var (
		phrases = []phraseArg{} // [], not null: jsonb_to_recordset reads an array
		all     []string
		single  = map[string]float64{}
	)
	for _, t := range terms {
		if t.query == "" {
			continue
		}
		// Each lexeme once: a term's frequency in a record is its rarest
		// lexeme's, found only when all of them are.
		lex := slices.Compact(slices.Sorted(slices.Values(t.lex)))
		all = append(all, lex...)
		if len(lex) == 1 {
			single[lex[0]] += t.idf
		} else {
			phrases = append(phrases, phraseArg{t.query, lex, t.idf})
		}
	}
	phrasesJSON, err := json.Marshal(phrases)
	if err != nil {
		return nil, err
	}
	singleLex := slices.Sorted(maps.Keys(single))
	singleIDF := make([]float64, len(singleLex))
	for i, l := range singleLex {
		singleIDF[i] = single[l]
	}
	idfJSON, err := json.Marshal(singleIDF)
	if err != nil {
		return nil, err
	}
	slices.Sort(all)
	rows, err := q.QueryContext(ctx, `
		WITH t AS MATERIALIZED (
			SELECT t.q::tsquery AS q, t.lex, t.idf
			FROM jsonb_to_recordset(?2::jsonb) AS t (q text, lex text[], idf double precision)
		), k AS MATERIALIZED (
			SELECT ARRAY(SELECT jsonb_array_elements_text(?13::jsonb)) AS lex,
				ARRAY(SELECT e FROM jsonb_array_elements_text(?14::jsonb) WITH ORDINALITY AS e (e, o) ORDER BY o) AS sl,
				ARRAY(SELECT e::double precision FROM jsonb_array_elements_text(?15::jsonb) WITH ORDINALITY AS e (e, o) ORDER BY o) AS si
		), m AS (
			SELECT r.seq, r.id, r.`+string(col)+` AS v, `+col.length()+` AS dl
			FROM records AS r
			WHERE r.`+string(col)+` @@ ?1::tsquery
				AND r.status IN ('active', 'candidate')
				AND (jsonb_array_length(?3::jsonb) = 0
					OR r.namespace IN (SELECT jsonb_array_elements_text(?3::jsonb))
					OR (?4::bigint = 1 AND (starts_with(r.namespace, 'github/') OR starts_with(r.namespace, 'gitea/')
						OR starts_with(r.namespace, 'local/'))))
				AND (jsonb_array_length(?5::jsonb) = 0 OR r.type IN (SELECT jsonb_array_elements_text(?5::jsonb)))
				AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements_text(?6::jsonb) AS x (p) WHERE starts_with(r.id, x.p))
		)
		SELECT m.seq, m.id, -(CASE WHEN x.single IS NOT NULL OR p.phrase IS NOT NULL
			THEN coalesce(x.single, 0) + coalesce(p.phrase, 0) END) AS rank
		FROM m CROSS JOIN k CROSS JOIN LATERAL (
			SELECT sum(k.si[array_position(k.sl, u.lexeme)] * u.f * (?9::double precision + 1)
					/ (u.f + ?9::double precision * (1 - ?10::double precision + ?10::double precision * m.dl / ?11::double precision))) AS single,
				array_agg(u.lexeme) AS l, array_agg(u.f) AS f
			FROM (SELECT u.lexeme, ?8::double precision * cardinality(u.weights)
					+ (?7::double precision - ?8::double precision) * cardinality(array_positions(u.weights, 'A')) AS f
				FROM unnest(ts_delete(m.v, tsvector_to_array(ts_delete(m.v, k.lex)))) AS u) AS u
		) AS x CROSS JOIN LATERAL (
			SELECT sum(t.idf * tf.f * (?9::double precision + 1)
				/ (tf.f + ?9::double precision * (1 - ?10::double precision + ?10::double precision * m.dl / ?11::double precision))) AS phrase
			FROM t CROSS JOIN LATERAL (
				SELECT CASE WHEN count(*) = cardinality(t.lex) THEN min(y.f) END AS f
				FROM unnest(x.l, x.f) AS y (l, f) WHERE y.l = ANY (t.lex)
			) AS tf
			WHERE tf.f > 0 AND m.v @@ t.q
		) AS p
		WHERE x.single IS NOT NULL OR p.phrase IS NOT NULL
		ORDER BY rank, m.id
		LIMIT ?12`,
		match, string(phrasesJSON), jsonText(f.Namespaces), flag(f.AllRepositories), jsonText(f.Types), jsonText(f.Exclude),
		pgTitleWeight, pgContentWeight, bm25K1, bm25B, st.avgdl, limit, jsonText(slices.Compact(all)),
		jsonText(singleLex), string(idfJSON))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Ranked
	for rows.Next() {
		var r Ranked
		if err := rows.Scan(&r.Seq, &r.ID, &r.Rank); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// length is the SQL of a record r's length in col, in positions: stored
// for the words (records.fts_len, pgschema's 0003); counted from the
// tsvector for CJK text, which few records hold (0004 says why it is not
// stored).
func (c pgColumn) length() string {
	if c == pgWords {
		return "r.fts_len"
	}
	return "hearth_tsv_len(r." + string(c) + ")"
}

// orQuery is the tsquery that matches any of terms: each term's query in
// parentheses, ORed; "" when no term has one.
func orQuery(terms []pgTerm) string {
	var b strings.Builder
	for _, t := range terms {
		if t.query == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(" | ")
		}
		b.WriteString("(" + t.query + ")")
	}
	return b.String()
}

// cjkTerms are the terms of a CJK search of text.
func cjkTerms(text string) []pgTerm {
	var terms []pgTerm
	for _, t := range fulltext.CJKTerms(text) {
		q := Lexeme(t)
		terms = append(terms, pgTerm{parts: []string{q}, query: q, lex: []string{t}, weight: fulltext.RankWord{Weight: 1}})
	}
	return terms
}

// weighTerms sets each term's IDF from its document frequency among rows,
// as hearth_rank does on SQLite: BM25's, at least 1e-6, times the term's
// weight (a synonym's, fulltext.RankWord.Weigh).
func weighTerms(terms []pgTerm, rows int64) {
	dfs := make([]int64, len(terms))
	for i, t := range terms {
		dfs[i] = t.df
	}
	for i := range terms {
		t := &terms[i]
		idf := math.Log((float64(rows) - float64(t.df) + 0.5) / (float64(t.df) + 0.5))
		if idf <= 0 || math.IsNaN(idf) {
			idf = 1e-6
		}
		t.idf = idf * t.weight.Weigh(dfs)
	}
}

// statsOf returns col's statistics: counted in q unless those of the
// current write generation are at hand, or older ones under pgStatsAge.
func (x *PGIndex) statsOf(ctx context.Context, q Querier, col pgColumn) (pgStats, error) {
	gen := x.gen()
	x.mu.Lock()
	st, ok := x.stats[col]
	x.mu.Unlock()
	if ok && (st.gen == gen || time.Since(st.at) < pgStatsAge) {
		return st, nil
	}
	st = pgStats{gen: gen, at: time.Now(), avgdl: 1}
	var avg sql.NullFloat64
	rows, err := q.QueryContext(ctx, `SELECT count(*), avg(`+col.length()+`)
		FROM records AS r WHERE r.`+string(col)+` IS NOT NULL`)
	if err != nil {
		return st, err
	}
	defer rows.Close()
	if rows.Next() {
		if err := rows.Scan(&st.rows, &avg); err != nil {
			return st, err
		}
	}
	if err := rows.Err(); err != nil {
		return st, err
	}
	if avg.Valid && avg.Float64 > 0 {
		st.avgdl = avg.Float64
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.stats == nil {
		x.stats = map[pgColumn]pgStats{}
	}
	x.stats[col] = st
	return st, nil
}

// docFreqs sets each term's document frequency in col, never more than
// rows: its rarest word's (a phrase's is at most that), from the counts
// of the write generation or counted in q.
func (x *PGIndex) docFreqs(ctx context.Context, q Querier, col pgColumn, terms []pgTerm, rows int64) error {
	gen := x.gen()
	x.mu.Lock()
	if x.dfs == nil || x.dfGen != gen && time.Since(x.dfAt) >= pgStatsAge {
		x.dfs, x.dfGen, x.dfAt = map[pgColumn]map[string]int64{}, gen, time.Now()
	}
	if x.dfs[col] == nil || len(x.dfs[col]) >= maxCachedTerms {
		x.dfs[col] = map[string]int64{}
	}
	cached := x.dfs[col]
	var ask []string
	known := map[string]int64{}
	for _, t := range terms {
		for _, p := range t.parts {
			if df, ok := cached[p]; ok {
				known[p] = df
			} else if _, asked := known[p]; !asked {
				known[p] = -1
				ask = append(ask, p)
			}
		}
	}
	x.mu.Unlock()
	if len(ask) > 0 {
		rs, err := q.QueryContext(ctx, `
			SELECT t.i, (SELECT count(*) FROM records AS r WHERE r.`+string(col)+` @@ t.q::tsquery)
			FROM jsonb_array_elements_text(?1::jsonb) WITH ORDINALITY AS t (q, i)`, jsonText(ask))
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var (
				i  int
				df int64
			)
			if err := rs.Scan(&i, &df); err != nil {
				return err
			}
			known[ask[i-1]] = df
		}
		if err := rs.Err(); err != nil {
			return err
		}
		x.mu.Lock()
		if x.dfs[col] != nil {
			for _, p := range ask {
				x.dfs[col][p] = known[p]
			}
		}
		x.mu.Unlock()
	}
	for i := range terms {
		t := &terms[i]
		t.df = -1
		for _, p := range t.parts {
			if df := known[p]; t.df < 0 || df < t.df {
				t.df = df
			}
		}
		t.df = min(max(t.df, 0), rows)
	}
	return nil
}

// flag is b as the 0/1 integer the record domain's flags are on both
// backends.
func flag(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// jsonText encodes a string list as a JSON array, [] when empty.
func jsonText(ss []string) string {
	if len(ss) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(ss) // a []string always marshals
	return string(b)
}
