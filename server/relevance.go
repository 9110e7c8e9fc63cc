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
	"github.com/hearth-memory/hearth/storage"
)

// rerankSuffix marks the ranking of a reply the rerank server ordered:
// "fts+rerank", "rrf+rerank".
const rerankSuffix = "+rerank"

// maxRerankDoc bounds the bytes of a record the rerank server reads
// (title, a newline, content): a cross-encoder reads a passage, and a
// longer one would overflow a small model's context.
const maxRerankDoc = 2048

// minHeldWords is how many of the query's words (all of them, when it has
// fewer) one returned hit must hold to clear the relevance bar: a record
// sharing one word with a prompt shares it by chance as often as not.
const minHeldWords = 2

// relevant measures the hits a search returns against the relevance bar
// (docs/abstention.md) and, with abstain, returns none unless they clear
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
// paraphrases included). Otherwise the candidates are first reordered by
// fusing their order with their order by coverage (storage.Coverage, the
// IDF-weighted share of the query's words, or their synonyms, a record
// holds), and the first limit must hold between them every word the query
// writes as a name memory may not know (Coverage.NamedWords), and one of
// them must both hold minHeldWords of the query's words and cover at least
// min_coverage of it. When they clear the bar, every hit is returned as
// ranked: an answer often ranks under a hit that covers the query better.
// Every hit's why says its coverage ("covers 0.62"), a few bytes that tell
// a caller why it was kept. Under any ranking coverage is the same measure,
// so a search abstains alike with and without an encoder. min_coverage 0
// never abstains, nor does a store of fewer than
// storage.MinCoverageRecords records by coverage: its word weights cannot
// tell a rare word from a common one.
func (s *Server) relevant(ctx context.Context, query string, hits []ranking.Hit, limit int, abstain, rr bool) (out []ranking.Hit, reranked bool, err error) {
	if len(hits) == 0 {
		return hits, false, nil
	}
	if abstain && rr {
		reranked = s.rerankHits(ctx, query, hits)
	}
	cov, err := s.db.QueryCoverage(ctx, query)
	if err != nil {
		return nil, false, err
	}
	bar := abstain && !reranked && s.opts.MinCoverage > 0 && cov.Telling()
	covers := make([]float64, len(hits))
	held := make([][]string, len(hits))
	for i := range hits {
		covers[i], held[i] = cov.Of(hits[i].Record)
	}
	if bar {
		hits, covers, held = byCoverage(hits, covers, held)
	}
	hits = hits[:min(limit, len(hits))]
	for i := range hits {
		c := math.Round(covers[i]*100) / 100
		hits[i].Why += ", covers " + strconv.FormatFloat(c, 'f', 2, 64)
	}
	switch {
	case reranked && hits[0].Score < s.opts.MinCoverage:
		return nil, true, nil
	case bar && !clears(cov, covers[:len(hits)], held[:len(hits)], s.opts.MinCoverage):
		return nil, false, nil
	}
	return hits, reranked, nil
}

// byCoverage reorders hits (with their coverage and held words) by
// reciprocal rank fusion (ranking.K) of their order and their order by
// coverage, highest first; a tie keeps the earlier hit first. A hit that
// covers more of the query comes up among the few the prompt hook injects
// without losing the ranking's judgement.
func byCoverage(hits []ranking.Hit, covers []float64, held [][]string) ([]ranking.Hit, []float64, [][]string) {
	type cand struct {
		hit   ranking.Hit
		cover float64
		held  []string
		fused float64
	}
	cs := make([]cand, len(hits))
	for i := range hits {
		better := 0 // hits covering strictly more: the coverage rank, ties shared
		for _, c := range covers {
			if c > covers[i] {
				better++
			}
		}
		cs[i] = cand{hits[i], covers[i], held[i], 1/float64(ranking.K+i+1) + 1/float64(ranking.K+better+1)}
	}
	slices.SortStableFunc(cs, func(a, b cand) int { return cmp.Compare(b.fused, a.fused) })
	for i, c := range cs {
		hits[i], covers[i], held[i] = c.hit, c.cover, c.held
	}
	return hits, covers, held
}

// clears reports whether hits, covering covers of the query and holding
// held of its words, clear the relevance bar: between them they hold every
// word the query names (Coverage.NamedWords), and one holds minHeldWords of
// its words (all, for a shorter query) and covers at least bar.
func clears(cov storage.Coverage, covers []float64, held [][]string, bar float64) bool {
	for _, w := range cov.NamedWords() {
		if !slices.ContainsFunc(held, func(h []string) bool { return slices.Contains(h, w) }) {
			return false
		}
	}
	need := min(minHeldWords, cov.Words())
	for i := range covers {
		if len(held[i]) >= need && math.Round(covers[i]*100)/100 >= bar {
			return true
		}
	}
	return false
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
