package server

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
	"strconv"

	"github.com/hearth-memory/hearth/server/budget"
	"github.com/hearth-memory/hearth/server/ranking"
	"github.com/hearth-memory/hearth/server/rerank"
)

// rerankSuffix marks the ranking of a reply the rerank server ordered:
// "fts+rerank", "rrf+rerank".
const rerankSuffix = "+rerank"

// maxRerankDoc bounds the bytes of a record the rerank server reads
// (title, a newline, content): a cross-encoder reads a passage, and a
// longer one would overflow a small model's context.
const maxRerankDoc = 2048

// relevant measures the hits a search returns against the relevance bar
// (docs/abstention.md) and, with abstain, returns none unless one clears
// it. It is the one place the decision is made: memory_search's abstain
// argument, which the prompt hook sets, asks for it on every transport.
//
// With rerank (abstain asked under the best available ranking) and a
// rerank server configured, every candidate (hits, max(limit, 20) of them)
// is scored by the server and reordered by its score; the hit's score
// becomes that score and its why starts "rerank 0.83". A server down, slow
// or answering an error leaves the order as it was, silently: reranked is
// then false. The first limit hits are returned.
//
// The bar: when the rerank server answered, the best hit's rerank score
// must be at least the min_coverage option (a cross-encoder judges meaning,
// paraphrases included); otherwise a hit's coverage of the query
// (storage.Coverage, the IDF-weighted share of the query's words, or their
// synonyms, its record holds) must be. When one hit clears the bar, every
// hit is returned as ranked: an answer often ranks under a hit that covers
// the query better. Every hit's why says its coverage ("covers 0.62"), a
// few bytes that tell a caller why it was kept. Under any ranking coverage
// is the same measure, so a search abstains alike with and without an
// encoder. A store of fewer than storage.MinCoverageRecords records never
// abstains by coverage: its word weights cannot tell a rare word from a
// common one.
func (s *Server) relevant(ctx context.Context, query string, hits []ranking.Hit, limit int, abstain, rr bool) (out []ranking.Hit, reranked bool, err error) {
	if len(hits) == 0 {
		return hits, false, nil
	}
	if abstain && rr {
		reranked = s.rerankHits(ctx, query, hits)
	}
	hits = hits[:min(limit, len(hits))]
	cov, err := s.db.QueryCoverage(ctx, query)
	if err != nil {
		return nil, false, err
	}
	best := 0.0
	for i := range hits {
		c, _ := cov.Of(hits[i].Record)
		c = math.Round(c*100) / 100
		best = max(best, c)
		hits[i].Why += ", covers " + strconv.FormatFloat(c, 'f', 2, 64)
	}
	switch {
	case reranked && hits[0].Score < s.opts.MinCoverage:
		return nil, true, nil
	case !reranked && abstain && best < s.opts.MinCoverage && cov.Telling():
		return nil, false, nil
	}
	return hits, reranked, nil
}

// rerankHits orders hits by the rerank server's scores, best first (equal
// scores keep their order), and reports whether it answered; when it did
// not, hits are left as they were.
func (s *Server) rerankHits(ctx context.Context, query string, hits []ranking.Hit) bool {
	if !s.reranker.Configured() {
		return false
	}
	docs := make([]string, len(hits))
	for i, h := range hits {
		docs[i] = budget.Shorten(h.Record.Title+"\n"+h.Record.Content, maxRerankDoc)
	}
	scores, err := s.reranker.Scores(ctx, query, docs)
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, rerank.ErrDown) {
			s.log.Debug("rerank: keeping the unreranked order", "err", err)
		}
		return false
	}
	for i := range hits {
		sc := math.Round(scores[i]*100) / 100
		hits[i].Score = scores[i]
		hits[i].Why = "rerank " + strconv.FormatFloat(sc, 'f', 2, 64) + ", " + hits[i].Why
	}
	slices.SortStableFunc(hits, func(a, b ranking.Hit) int { return cmp.Compare(b.Score, a.Score) })
	return true
}
