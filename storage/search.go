package storage

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hearth-memory/hearth/storage/fulltext"
	"github.com/hearth-memory/hearth/storage/internal/fts"
)

// Default limits when a query gives none.
const (
	DefaultSearchLimit   = 10
	DefaultTimelineLimit = 20
)

// MinExcludePrefix is the shortest id prefix SearchQuery.Exclude honours;
// shorter entries are ignored (docs/design.md R-K4).
const MinExcludePrefix = 8

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
	// local/…) besides Namespaces: a hub's reach (docs/design.md R-N5).
	AllRepositories bool
	// Literal searches the text's own words alone, without their synonyms
	// (fulltext.Expand): for an answer, which must stand on what was asked.
	Literal bool
	// NoSnippets leaves every Hit.Snippet empty, unless Feedback read
	// them: a caller that returns fewer hits than it asks for cuts the
	// snippets of those it returns with NewSnippets, instead of every
	// hit's here.
	NoSnippets bool
	// Feedback re-ranks the hits read by the words their best ones share
	// (fulltext.Feedback); a Literal search has none.
	Feedback bool
}

// Snippets cuts the snippets of a query's hits as Search does: around the
// words (and, unless Literal, the synonyms) the query searched for. It
// serves one goroutine at a time, until Release.
type Snippets struct{ s *fulltext.Snippetter }

// NewSnippets returns the snippet cutter of q.
func NewSnippets(q SearchQuery) Snippets {
	return Snippets{fulltext.NewSnippetter(expansionOf(fulltext.QueryWords(q.Text), q.Literal).SnippetWords(), q.Text)}
}

// Cut returns the snippet of a hit's content.
func (s Snippets) Cut(content string) string { return s.s.Cut(content) }

// Release hands the cutter's scratch to later searches: s is not used
// again. The snippets it cut stay the caller's.
func (s Snippets) Release() { s.s.Release() }

// expansionOf is what a search of words looks for: the words and, unless
// literal, their synonyms (fulltext.Expand).
func expansionOf(words []string, literal bool) fulltext.Expansion {
	if literal {
		return fulltext.Literal(words)
	}
	return fulltext.Expand(words)
}

// Hit is one search result. BM25 is FTS5's bm25 score with the title
// weighted 3 to the content's 1 (with SearchQuery.Feedback, plus what
// feedback adds): lower is better, and hits come best first.
// Snippet is a fragment of the content around the matched words.
type Hit struct {
	Record  *Record
	Snippet string
	BM25    float64
}

// Search finds live records (active or candidate) that share at least one
// meaningful word with q.Text, best first. Text is split into words, lower-cased
// and stripped of stopwords; each word is quoted and the words are ORed, so no
// text can be FTS5 syntax. The words' synonyms (fulltext.Expand) are ORed in
// too, ranked below the words themselves. With q.Feedback, the hits
// read are then re-ranked by the words their best ones share with the rest
// (feedback). Text with no meaningful word finds nothing. Runs
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
	words, cjk := fulltext.QueryWords(q.Text), fulltext.CJKQuery(q.Text)
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

	x := expansionOf(words, q.Literal)
	// Feedback reads the hits' snippets: then they are cut here, and
	// returned, whatever NoSnippets says.
	withFeedback := q.Feedback && !q.Literal && len(x.Words()) >= 2
	var snip *fulltext.Snippetter
	if !q.NoSnippets || withFeedback {
		snip = fulltext.NewSnippetter(x.SnippetWords(), q.Text)
		defer snip.Release()
	}
	var hits []Hit
	// The write generation before the read begins: what the read does not
	// see had not been written then (namespaceKeysTx).
	gen := db.eng.Gen()
	err := db.read(ctx, "search", func(tx *txn) error {
		var lists [][]Hit
		if len(words) > 0 {
			top, err := db.searchWords(ctx, tx, gen, x, q, exclude, limit)
			if err != nil {
				return err
			}
			h, err := readHits(ctx, tx, top, snip)
			if err != nil {
				return err
			}
			if withFeedback {
				h = feedback(x, h)
			}
			lists = append(lists, h)
		}
		if cjk != "" {
			top, err := db.searchCJK(ctx, tx, cjk, q, exclude, limit)
			if err != nil {
				return err
			}
			h, err := readHits(ctx, tx, top, snip)
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

// feedback re-ranks hits, best first, in place by pseudo-relevance
// feedback on their records' titles and their snippets (fulltext.Feedback),
// and returns them: each hit's BM25 then holds the score ranked by.
func feedback(x fulltext.Expansion, hits []Hit) []Hit {
	docs := make([]fulltext.Doc, len(hits))
	for i, h := range hits {
		docs[i] = fulltext.Doc{Title: h.Record.Title, Snippet: h.Snippet, BM25: h.BM25}
	}
	order := fulltext.Feedback(x, docs)
	if order == nil {
		return hits
	}
	for i := range hits {
		hits[i].BM25 = docs[i].BM25
	}
	reorder(hits, order)
	return hits
}

// reorder puts hits in order, in place: hits[i] becomes the hit at
// order[i], a permutation of their indexes.
func reorder(hits []Hit, order []int) {
	moved := make([]Hit, len(hits))
	for i, k := range order {
		moved[i] = hits[k]
	}
	copy(hits, moved)
}

// searchWords searches records_fts for the terms of x: the query's words
// and their synonyms (fulltext.Expand), which match title and content only.
// Within namespaces (not a hub's reach), each namespace is searched on its
// own range of full-text rowids (migration 0075), which FTS5 seeks to in
// each term's doclist, and the ranked lists are merged by score: a
// namespace's search reads its own rows, however large the store.
//
// On a large store, when some words are common (held by more than
// pruneCommon of the records, by the last count), each search first scores
// only the records holding one of the other words — or, when every word is
// common, all of them — still ranked by every word; only when that gate
// gives fewer than limit hits are all matches scored (a gate of rare words
// is counted first, and not run when it would: gateHolds). A record held
// out is one that shares nothing but common words with the query while
// limit better ones exist: it would rank below them.
func (db *DB) searchWords(ctx context.Context, tx *txn, gen uint64, x fulltext.Expansion, q SearchQuery, exclude []string, limit int) ([]ranked, error) {
	if db.pg != nil {
		return db.searchWordsPostgres(ctx, tx, x, q, exclude, limit)
	}
	all := "{title content} : (" + fts.Quoted(x.Terms(), " OR ") + ")"
	joined := x.RankWords()
	gate, n, common := db.fts.GateOf(x.Terms())
	search := func(rows *fts.RowRange) ([]ranked, error) {
		run := func(match string, nSkip int) ([]ranked, error) {
			if len(q.Types) == 0 {
				if top, ok, err := db.rankLeanTx(ctx, tx, match, nSkip, joined, rows, q, exclude, limit); err != nil || ok {
					return top, err
				}
			}
			return rankTx(ctx, tx, wordIndex, match, []any{nSkip, joined}, rows, q, exclude, limit)
		}
		// A gate of rare words that lets fewer than limit rows through is
		// not run: every match would be scored after it anyway.
		if n > 0 && (common || fts.GateHolds(ctx, tx, gate, rows, limit)) {
			top, err := run("{title content} : ("+gate+") AND "+all, n)
			if err != nil || len(top) >= limit {
				return top, err
			}
		}
		return run(all, 0)
	}
	if len(q.Namespaces) == 0 || q.AllRepositories {
		return search(nil)
	}
	keys, err := db.namespaceKeysTx(ctx, tx, q.Namespaces, gen)
	if err != nil {
		return nil, err
	}
	var top []ranked
	for _, k := range keys {
		t, err := search(&fts.RowRange{Lo: k << fts.SeqBits, Hi: k<<fts.SeqBits | fts.SeqMask})
		if err != nil {
			return nil, err
		}
		top = append(top, t...)
	}
	if len(keys) > 1 {
		slices.SortFunc(top, func(a, b ranked) int {
			if c := cmp.Compare(a.rank, b.rank); c != 0 {
				return c
			}
			return strings.Compare(a.id, b.id)
		})
	}
	return top[:min(len(top), limit)], nil
}

// nsKeyCache remembers the namespaces' full-text keys (namespace_keys,
// migration 0075), so a search looks up only namespaces it has not met: a
// key, once given, is never changed or reused, and a namespace without one
// is remembered as such for the write generation (DB.gen) it was looked up
// in — a store that gives a namespace its key moves the generation on
// before it returns.
type nsKeyCache struct {
	mu     sync.Mutex
	keys   map[string]int64
	gen    uint64          // the generation absent holds for
	absent map[string]bool // namespaces without a key at gen
}

// namespaceKeysTx returns the keys of the namespaces that hold or held
// records, in tx; a namespace never used has none, and no rows. gen is
// the write generation loaded before tx read anything: what tx does not
// find had no key then either.
func (db *DB) namespaceKeysTx(ctx context.Context, tx *txn, namespaces []string, gen uint64) ([]int64, error) {
	c := &db.nsKeys
	var keys []int64
	var unknown []string
	c.mu.Lock()
	for _, ns := range namespaces {
		if k, ok := c.keys[ns]; ok {
			keys = append(keys, k)
		} else if c.gen != gen || !c.absent[ns] {
			unknown = append(unknown, ns)
		}
	}
	c.mu.Unlock()
	if len(unknown) == 0 {
		return keys, nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT namespace, key FROM namespace_keys WHERE namespace IN (SELECT value FROM json_each(?))`, jsonList(unknown))
	if err != nil {
		return nil, classify("search", err)
	}
	defer rows.Close()
	found := make(map[string]int64, len(unknown))
	for rows.Next() {
		var ns string
		var k int64
		if err := rows.Scan(&ns, &k); err != nil {
			return nil, classify("search", err)
		}
		found[ns] = k
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return nil, classify("search", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.keys == nil {
		c.keys = make(map[string]int64)
	}
	if gen > c.gen || c.absent == nil {
		c.gen, c.absent = gen, make(map[string]bool)
	}
	for _, ns := range unknown {
		if k, ok := found[ns]; ok {
			c.keys[ns] = k
		} else if gen == c.gen && len(c.absent) < maxAbsentNamespaces {
			c.absent[ns] = true
		}
	}
	return keys, nil
}

// maxAbsentNamespaces bounds the namespaces without a key one generation
// remembers: a caller naming ever new ones must not grow it without end.
const maxAbsentNamespaces = 1024

// index is a full-text index rankTx reads: its table, rank expression
// (whose arguments from ?7 on rankTx's caller gives), the join it needs,
// and the record's seq as its rowid gives it.
type index struct{ table, rank, join, seq string }

var (
	// wordIndex is records_fts: porter-stemmed words, ranked by hearth_rank,
	// its rowids namespace ranges (migration 0075).
	wordIndex = index{"records_fts", "hearth_rank(records_fts, ?7, ds.sz, ?8, 3.0, 1.0, 0.0)",
		"JOIN records_fts_docsize AS ds ON ds.id = records_fts.rowid",
		"(records_fts.rowid & " + strconv.FormatInt(fts.SeqMask, 10) + ")"}
	// cjkIndex is records_cjk: CJK bigrams (migration 0008), ranked by bm25
	// with the same title weight; its rowids are the records' seqs.
	cjkIndex = index{"records_cjk", "bm25(records_cjk, 3.0, 1.0)", "", "records_cjk.rowid"}
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

// ranked is a matching row as rankTx ranks it; rankLeanTx, which reads
// its record to filter it, keeps the record too.
type ranked struct {
	seq  int64
	rank float64
	id   string
	rec  *Record
	// anchored says the record has anchors, which readHits reads.
	anchored bool
}

// rankTx runs the full-text query match on ix, rankArgs binding the rank
// expression's arguments, with Search's filters, and, when rows is not
// nil, reads only that range of rowids. It returns the best limit rows,
// ranked with only what ranking and the filters need; readHits reads them
// whole. Reading every match whole, or running the match again per hit
// for FTS5's snippet(), cost more than ranking.
func rankTx(ctx context.Context, tx *txn, ix index, match string, rankArgs []any, rows *fts.RowRange, q SearchQuery, exclude []string, limit int) ([]ranked, error) {
	args := append([]any{match, jsonList(q.Namespaces), jsonList(q.Types), jsonList(exclude), limit, q.AllRepositories}, rankArgs...)
	bounds := ""
	if rows != nil {
		bounds = ` AND ` + ix.table + `.rowid BETWEEN ?9 AND ?10`
		args = append(args, rows.Lo, rows.Hi)
	}
	rs, err := tx.QueryContext(ctx, `
		SELECT r.seq, `+ix.rank+` AS rank, r.id
		FROM `+ix.table+`
		`+ix.join+`
		JOIN records AS r ON r.seq = `+ix.seq+`
		WHERE `+ix.table+` MATCH ?1`+bounds+`
			AND r.status IN ('active', 'candidate')
			AND (?2 IS NULL OR r.namespace IN (SELECT value FROM json_each(?2))
				OR (?6 AND (r.namespace GLOB 'github/*' OR r.namespace GLOB 'gitea/*' OR r.namespace GLOB 'local/*')))
			AND (?3 IS NULL OR r.type IN (SELECT value FROM json_each(?3)))
			AND (?4 IS NULL OR NOT EXISTS (
				SELECT 1 FROM json_each(?4) AS x WHERE substr(r.id, 1, length(x.value)) = x.value))
		ORDER BY rank, r.id
		LIMIT +?5`, args...)
	if err != nil {
		return nil, classify("search", err)
	}
	defer rs.Close()
	var top []ranked
	for rs.Next() {
		var r ranked
		if err := rs.Scan(&r.seq, &r.rank, &r.id); err != nil {
			return nil, classify("search", err)
		}
		top = append(top, r)
	}
	return top, classify("search", rs.Err())
}

// leanDepth is how many rows rankLeanTx ranks before it reads any record:
// enough for limit hits when some of them are not live or are excluded.
func leanDepth(limit int) int { return 2*limit + 8 }

// rankLeanTx ranks the words' matches (match, nSkip and words as for
// hearth_rank), within one namespace's range of full-text rowids when rows
// is not nil, without reading the records of every match: FTS5 and the
// compact docsize table rank them all, the best leanDepth(limit) come back,
// and only those are looked up in records, to keep the live ones (active or
// candidate) in q's reach (inReach) that exclude leaves, best first by
// rank, then id — what rankTx returns, at a fraction of the reads on a
// large store, where the records of the matches lie on as many pages as
// matches.
//
// It reports ok false, having decided nothing, when the rows it ranked
// cannot settle the answer: fewer than limit rows kept while more matched,
// or a row past the depth that ties in rank with the last row kept (it
// might come first by id). A tie across the depth below the hits kept
// settles nothing and is no reason. The caller then runs rankTx.
func (db *DB) rankLeanTx(ctx context.Context, tx *txn, match string, nSkip int, words string, rows *fts.RowRange, q SearchQuery, exclude []string, limit int) (top []ranked, ok bool, err error) {
	depth := leanDepth(limit)
	bounds, args := "", []any{match, nSkip, words, depth + 1}
	if rows != nil {
		bounds = ` AND records_fts.rowid BETWEEN ?5 AND ?6`
		args = append(args, rows.Lo, rows.Hi)
	}
	rs, err := tx.QueryContext(ctx, `
		SELECT records_fts.rowid, hearth_rank(records_fts, ?2, ds.sz, ?3, 3.0, 1.0, 0.0) AS rank
		FROM records_fts JOIN records_fts_docsize AS ds ON ds.id = records_fts.rowid
		WHERE records_fts MATCH ?1`+bounds+`
		ORDER BY rank, records_fts.rowid
		LIMIT +?4`, args...)
	if err != nil {
		return nil, false, classify("search", err)
	}
	var cands []ranked
	for rs.Next() {
		var r ranked
		if err := rs.Scan(&r.seq, &r.rank); err != nil {
			rs.Close()
			return nil, false, classify("search", err)
		}
		r.seq &= fts.SeqMask
		cands = append(cands, r)
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return nil, false, classify("search", err)
	}
	// past is the rank of the first row past the depth: every row not
	// ranked here ranks there or below.
	more := len(cands) > depth
	var past float64
	if more {
		past = cands[depth].rank
		cands = cands[:depth]
	}
	if len(cands) == 0 {
		return nil, true, nil
	}
	// The records are looked up in rank order, a chunk at a time (the
	// first sized by the share of rows kept so far, leanShare; then
	// leanChunk(limit)), until limit are kept and the next row ranks below
	// the last of them: no row after it could come first. Mostly one chunk
	// does.
	byRank := func(a, b ranked) int {
		if c := cmp.Compare(a.rank, b.rank); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	}
	chunk := firstLeanChunk(limit, db.lean.get())
	for from := 0; from < len(cands); {
		to := min(len(cands), from+chunk)
		chunk = leanChunk(limit)
		kept, err := keepLiveTx(ctx, tx, cands[from:to], q, exclude)
		if err != nil {
			return nil, false, err
		}
		db.lean.note(to-from, len(kept))
		top = append(top, kept...)
		from = to
		if len(top) >= limit && from < len(cands) {
			slices.SortFunc(top, byRank)
			if cands[from].rank > top[limit-1].rank {
				return top[:limit], true, nil
			}
		}
	}
	slices.SortFunc(top, byRank)
	if more && (len(top) < limit || past == top[limit-1].rank) {
		// Too few kept, or a row past the depth ties with the last hit
		// and might come first by id.
		return nil, false, nil
	}
	return top[:min(len(top), limit)], true, nil
}

// leanChunk is how many ranked rows rankLeanTx looks up at a time: limit
// and a few that are not live or are excluded.
func leanChunk(limit int) int { return limit + 8 }

// firstLeanChunk is how many ranked rows rankLeanTx looks up first, when
// it has kept share of the rows it looked up lately: enough for limit to be
// kept, and two more, but never more than leanChunk(limit). A store whose
// matches are nearly all live reads little more than limit records; one
// with many superseded or forgotten records reads a chunk as before.
func firstLeanChunk(limit int, share float64) int {
	if share <= 0 {
		return leanChunk(limit)
	}
	return min(leanChunk(limit), int(math.Ceil(float64(limit)/share))+2)
}

// leanShare is the share of the rows rankLeanTx looked up that it kept
// (live, in reach, not excluded): a moving average over lookups, 1 until
// the first. Searches update it side by side without a lock; an update
// one of them loses changes only how many records the next search reads
// at first.
type leanShare struct{ bits atomic.Uint64 }

func (s *leanShare) get() float64 {
	if b := s.bits.Load(); b != 0 {
		return math.Float64frombits(b)
	}
	return 1
}

// note counts a lookup of read rows that kept kept.
func (s *leanShare) note(read, kept int) {
	if read > 0 {
		s.bits.Store(math.Float64bits(0.9*s.get() + 0.1*float64(kept)/float64(read)))
	}
}

// keepLiveTx reads the records of cands and returns, in cands' order, with
// their records, those live (active or candidate), in q's reach (inReach)
// and not excluded. Reading them whole here spares readHits reading them
// again.
func keepLiveTx(ctx context.Context, tx *txn, cands []ranked, q SearchQuery, exclude []string) ([]ranked, error) {
	seqs := make([]int64, len(cands))
	for i, c := range cands {
		seqs[i] = c.seq
	}
	recs, anchored, err := readRecordsTx(ctx, tx, "search", seqs)
	if err != nil {
		return nil, err
	}
	var kept []ranked
	for _, c := range cands {
		r := recs[c.seq]
		if r == nil || (r.Status != StatusActive && r.Status != StatusCandidate) || !inReach(q, r.Namespace) ||
			slices.ContainsFunc(exclude, func(p string) bool { return strings.HasPrefix(r.ID, p) }) {
			continue
		}
		c.id, c.rec, c.anchored = r.ID, r, anchored[c.seq]
		kept = append(kept, c)
	}
	return kept, nil
}

// inReach reports whether a record of namespace ns is in the reach of q,
// as rankTx's filter says it: any namespace when q names none, else those
// it names and, with AllRepositories, every repository namespace.
func inReach(q SearchQuery, ns string) bool {
	if len(q.Namespaces) == 0 || slices.Contains(q.Namespaces, ns) {
		return true
	}
	return q.AllRepositories && (strings.HasPrefix(ns, "github/") || strings.HasPrefix(ns, "gitea/") || strings.HasPrefix(ns, "local/"))
}

// readHits reads the records of top whole, in order, but for those
// rankLeanTx read already, with their anchors (read only for records that
// have some: most have none), and snip, when not nil, cuts their snippets
// in Go.
func readHits(ctx context.Context, tx *txn, top []ranked, snip *fulltext.Snippetter) ([]Hit, error) {
	if len(top) == 0 {
		return nil, nil
	}
	var seqs []int64
	for _, t := range top {
		if t.rec == nil {
			seqs = append(seqs, t.seq)
		}
	}
	bySeq, anchored, err := readRecordsTx(ctx, tx, "search", seqs)
	if err != nil {
		return nil, err
	}
	hits := make([]Hit, 0, len(top))
	var recs []*Record // those with anchors
	for _, t := range top {
		rec, has := t.rec, t.anchored
		if rec == nil {
			rec, has = bySeq[t.seq], anchored[t.seq]
		}
		if rec == nil {
			// Ranked in this same read transaction: it cannot be gone.
			return nil, errorf(Internal, "", "search: ranked record %d not found", t.seq)
		}
		h := Hit{Record: rec, BM25: t.rank}
		if snip != nil {
			h.Snippet = snip.Cut(rec.Content)
		}
		hits = append(hits, h)
		if has {
			recs = append(recs, rec)
		}
	}
	if err := attachAnchorsTx(ctx, tx, recs); err != nil {
		return nil, err
	}
	return hits, nil
}
