// Package fts is the store's full-text engine: the FTS5 setup of every
// connection (hearth_rank, the CJK tokenizer and hearth_has_cjk), the
// ranking with its document frequencies cached per write generation, the
// pruning gate of common words, and the merging of the index's segments.
// The index itself is kept by SQL triggers beside the records; storage
// runs the queries (docs/design.md, §1b).
package fts

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/ext/fts5"

	"github.com/hearth-memory/hearth/storage/fulltext"
	"github.com/hearth-memory/hearth/storage/internal/engine"
)

// BM25 constants, as FTS5's own bm25 uses them.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// rankFunction is the name of the full-text rank function, registered on
// every connection: hearth_rank(records_fts, nSkip, docsize, words, weight...).
const rankFunction = "hearth_rank"

// Index is what the full-text queries keep between them: document
// frequencies per write generation, the stems hearth_rank learned. gen
// gives the store's write generation (the engine's Gen) and vocab the pool
// frequencies are counted on; both are read only when a query ranks.
type Index struct {
	gen   func() uint64
	vocab func() *sql.DB
	// dfs caches document frequencies for one generation, counted on
	// vocab; stems, the index tokens of query words hearth_rank learned.
	dfs   dfCache
	stems fulltext.StemCache
}

// New returns an Index over the store whose write generation gen gives
// and whose vocabulary pool vocab gives.
func New(gen func() uint64, vocab func() *sql.DB) *Index {
	return &Index{gen: gen, vocab: vocab}
}

// Counted is how many document frequencies were counted on the
// vocabulary rather than taken from the cache.
func (x *Index) Counted() int64 { return x.dfs.counted.Load() }

// RowsSeen is the index's row count the last ranked query saw.
func (x *Index) RowsSeen() int64 { return x.dfs.rowsSeen.Load() }

// CountRows counts the index's rows in tx (one per row of
// records_fts_docsize) and keeps the count as RowsSeen when no ranked
// query has set it yet: for the weights of a query that ranks no word (a
// CJK-only one) before any word search of the process has run.
func (x *Index) CountRows(ctx context.Context, tx *engine.Tx) (int64, error) {
	var rows int64
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM records_fts_docsize`).Scan(&rows); err != nil {
		return 0, err
	}
	x.dfs.rowsSeen.CompareAndSwap(0, rows)
	return rows, nil
}

// Stem returns the index token hearth_rank learned for a query word.
func (x *Index) Stem(word string) (string, bool) { return x.stems.Get(word) }

// DocFreq returns how many of the index's rows rows hold token: cached for
// the write generation, else counted on the vocabulary.
func (x *Index) DocFreq(token string, rows int64) (int64, error) { return x.dfs.get(x, token, rows) }

// Register prepares a new connection: the query planner's stability
// guarantee on, FTS5 registered (registerFTS), and hearth_has_cjk
// (registerCJK).
//
// With the guarantee (SQLITE_DBCONFIG_ENABLE_QPSG) the planner never plans
// for the values bound to a statement's parameters, so rebinding them never
// makes SQLite prepare the statement again. Without it, FTS5's own lookup of
// a term in a segment (SELECT pgno FROM '%_idx' WHERE segid=? AND term<=?
// ORDER BY term DESC LIMIT 1, which no query of ours can change) was
// prepared again on nearly every run: a quarter of a one-word search's time
// (TestSQL_FTS5LookupIsNotReprepared). Nothing here plans on bound values:
// no LIKE or GLOB takes a bound pattern, LIMIT takes +? (sqllimit_test.go),
// and the store keeps no sqlite_stat4.
func (x *Index) Register(c *sqlite3.Conn) error {
	if _, err := c.Config(sqlite3.DBCONFIG_ENABLE_QPSG, true); err != nil {
		return fmt.Errorf("storage: query planner stability guarantee: %w", err)
	}
	if err := x.registerFTS(c); err != nil {
		return err
	}
	return registerCJK(c)
}

// registerFTS registers FTS5 on a new connection, with hearth_rank and the
// hearth_cjk tokenizer.
func (x *Index) registerFTS(c *sqlite3.Conn) error {
	return fts5.RegisterCustom(c, func(api *fts5.API) error {
		if err := api.CreateTokenizer("hearth_cjk", func([]string) (fts5.Tokenizer, error) { return fulltext.CJKTokenizer{}, nil }); err != nil {
			return err
		}
		return api.CreateFunction(rankFunction, x.rank)
	})
}

// rankData is what hearth_rank computes once per query: each phrase's
// inverse document frequency (0 for the scope phrases) and the average row
// size in tokens.
type rankData struct {
	nScope int
	idf    []float64
	avgdl  float64
	freq   []float64 // scratch, one per phrase
}

// rank is hearth_rank(records_fts, nSkip, docsize, words, w0, w1, ...):
// FTS5's bm25 — lower is better, per-column weights w — computed in Go with
// each phrase's document frequency taken from dfs, a cache kept per write
// generation, instead of counted on every query from the phrase's whole
// doclist. The first nSkip phrases of the query are not scored: the scope
// tokens (migration 0006), whose column weighs 0 and whose frequency is the
// costliest to count, and the phrases of a gate (Search's pruning), which
// repeat scored ones. words lists, space-separated, the words of the scored
// phrases in order, so that their stems are learned; a synonym's entry
// (fulltext.RankWord) also says its weight, which multiplies its phrase's IDF, and
// which words of the query it stands for: it weighs 1 when no record holds
// one of them. Without such an entry a phrase weighs 1, so with no synonym
// the score is bm25's. docsize is the row's records_fts_docsize.sz
// blob (its size in tokens per column), which the query joins in: asking
// FTS5 for it from Go (xColumnSize) crashes go-sqlite3 v0.37 when the
// lookup statement is not yet prepared. With a fresh cache the score equals
// bm25's (rank_test.go).
func (x *Index) rank(fts fts5.Context, ctx sqlite3.Context, args ...sqlite3.Value) {
	d, _ := fts.GetAuxdata(false).(*rankData)
	if d == nil {
		nScope := 0
		if len(args) > 0 {
			nScope = args[0].Int()
		}
		var words string
		if len(args) > 2 {
			words = args[2].Text()
		}
		var err error
		if d, err = x.rankData(fts, nScope, strings.Fields(words)); err != nil {
			ctx.ResultError(err)
			return
		}
		if err := fts.SetAuxdata(d); err != nil {
			ctx.ResultError(err)
			return
		}
	}
	clear(d.freq)
	n, err := fts.InstCount()
	if err != nil {
		ctx.ResultError(err)
		return
	}
	for i := range n {
		p, col, _, err := fts.Inst(i)
		if err != nil {
			ctx.ResultError(err)
			return
		}
		w := 1.0
		if 3+col < len(args) {
			w = args[3+col].Float()
		}
		d.freq[p] += w
	}
	// The row's size in tokens: the sum of the docsize blob's varints.
	size := 0
	if len(args) > 1 {
		for b := args[1].RawBlob(); len(b) > 0; {
			v, n := varint(b)
			if n == 0 {
				break
			}
			size += int(v)
			b = b[n:]
		}
	}
	norm := bm25K1 * (1 - bm25B + bm25B*float64(size)/d.avgdl)
	score := 0.0
	for i := d.nScope; i < len(d.idf); i++ {
		if f := d.freq[i]; f != 0 {
			score += d.idf[i] * (f * (bm25K1 + 1)) / (f + norm)
		}
	}
	ctx.ResultFloat(-score)
}

// rankData computes a query's IDFs from cached document frequencies, each
// times its phrase's weight (fulltext.RankWord.Weigh), and learns the stems of
// words, the words of the scored phrases.
func (x *Index) rankData(fts fts5.Context, nScope int, words []string) (*rankData, error) {
	rows, err := fts.RowCount()
	if err != nil {
		return nil, err
	}
	tokens, err := fts.ColumnTotalSize(-1)
	if err != nil {
		return nil, err
	}
	n := fts.PhraseCount()
	d := &rankData{nScope: min(nScope, n), idf: make([]float64, n), freq: make([]float64, n)}
	d.avgdl = 1
	if rows > 0 && tokens > 0 {
		d.avgdl = float64(tokens) / float64(rows)
	}
	x.dfs.rowsSeen.Store(rows)
	terms := make([]fulltext.RankWord, n-d.nScope)
	dfs := make([]int64, n-d.nScope)
	for i := d.nScope; i < n; i++ {
		rw := &terms[i-d.nScope]
		rw.Weight = 1
		if w := i - d.nScope; w < len(words) {
			*rw = fulltext.ParseRankWord(words[w])
		}
		// A phrase of several tokens (a synonym such as "pull request")
		// counts as often as its rarest token: an upper bound, so its IDF
		// is never overstated.
		hits := int64(-1)
		for t := range fts.PhraseSize(i) {
			token, err := fts.QueryToken(i, t)
			if err != nil {
				return nil, err
			}
			if t == 0 && rw.Word != "" && fts.PhraseSize(i) == 1 {
				x.stems.Learn(rw.Word, token)
			}
			df, err := x.dfs.get(x, token, rows)
			if err != nil {
				return nil, err
			}
			if hits < 0 || df < hits {
				hits = df
			}
		}
		// The cache may hold a count from a snapshot newer than the query's:
		// never more records than the query sees.
		hits = min(max(hits, 0), rows)
		dfs[i-d.nScope] = hits
		idf := math.Log((float64(rows) - float64(hits) + 0.5) / (float64(hits) + 0.5))
		if idf <= 0 || math.IsNaN(idf) {
			idf = 1e-6
		}
		d.idf[i] = idf
	}
	for i := d.nScope; i < n; i++ {
		d.idf[i] *= terms[i-d.nScope].Weigh(dfs)
	}
	return d, nil
}

// dfCache holds the document frequencies of the terms queries asked for,
// valid for one write generation of the store and one row count of the
// index: any commit that may change the index empties it, so a term's
// frequency is counted once between writes, not once per query.
type dfCache struct {
	mu   sync.Mutex
	gen  uint64
	rows int64
	df   map[string]int64
	// approx keeps the last count of every term across generations, for
	// decisions that need only an estimate (Search's pruning).
	approx map[string]int64
	// rowsSeen is the index's row count the last ranked query saw.
	rowsSeen atomic.Int64
	// counted is how many frequencies were counted on the vocabulary.
	counted atomic.Int64
}

// estimate returns the last count of token's document frequency, of any
// generation, and whether there is one.
func (c *dfCache) estimate(token string) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	df, ok := c.approx[token]
	return df, ok
}

// absent reports whether token is in no record by a count made since the
// last write: a word the store holds nowhere, for certain.
func (c *dfCache) absent(x *Index, token string) bool {
	gen := x.gen()
	c.mu.Lock()
	defer c.mu.Unlock()
	df, ok := c.df[token]
	return ok && c.gen == gen && df == 0
}

// maxCachedTerms bounds the cache between writes.
const maxCachedTerms = 1 << 16

// get returns how many records hold token, from the cache or counted on the
// vocabulary table (vocab, a pool of its own: the query that asks is
// running on a reader connection).
func (c *dfCache) get(x *Index, token string, rows int64) (int64, error) {
	gen := x.gen()
	c.mu.Lock()
	if c.gen != gen || c.rows != rows || c.df == nil || len(c.df) >= maxCachedTerms {
		c.gen, c.rows, c.df = gen, rows, map[string]int64{}
	}
	df, ok := c.df[token]
	c.mu.Unlock()
	if ok {
		return df, nil
	}
	c.counted.Add(1)
	err := x.vocab().QueryRowContext(context.Background(), `SELECT doc FROM records_vocab WHERE term = ?`, token).Scan(&df)
	if errors.Is(err, sql.ErrNoRows) {
		df, err = 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("storage: document frequency: %w", err)
	}
	c.mu.Lock()
	if c.gen == gen && c.rows == rows {
		c.df[token] = df
	}
	if c.approx == nil || len(c.approx) >= maxCachedTerms {
		c.approx = map[string]int64{}
	}
	c.approx[token] = df
	c.mu.Unlock()
	return df, nil
}

// varint decodes an SQLite varint (1 to 9 bytes, big-endian groups of 7
// bits, the ninth byte whole), as FTS5 writes its docsize blobs. It returns
// the value and the bytes read, 0 when b is cut short.
func varint(b []byte) (uint64, int) {
	var v uint64
	for i := range min(len(b), 9) {
		if i == 8 {
			return v<<8 | uint64(b[i]), 9
		}
		v = v<<7 | uint64(b[i]&0x7f)
		if b[i] < 0x80 {
			return v, i + 1
		}
	}
	return 0, 0
}
