package server

import (
	"context"
	"math"
	"strconv"

	"github.com/hearth-memory/hearth/server/ranking"
)

// relevant measures the hits a search returns against the relevance bar
// (docs/abstention.md) and, with abstain, returns none unless one clears
// it: a hit's coverage of the query (storage.Coverage, the IDF-weighted
// share of the query's words, or their synonyms, its record holds) must be
// at least the min_coverage option. When one hit clears the bar, every hit
// is returned as ranked: an answer often ranks under a hit that covers the
// query better. Every hit's why says its coverage ("covers 0.62"), a few
// bytes that tell a caller why it was kept. Under any ranking the bar is
// the same measure, so a search abstains alike with and without an
// encoder. It is the one place the decision is made: memory_search's
// abstain argument, which the prompt hook sets, asks for it on every
// transport. A store of fewer than storage.MinCoverageRecords records never
// abstains: its word weights cannot tell a rare word from a common one.
func (s *Server) relevant(ctx context.Context, query string, hits []ranking.Hit, abstain bool) ([]ranking.Hit, error) {
	if len(hits) == 0 {
		return hits, nil
	}
	cov, err := s.db.QueryCoverage(ctx, query)
	if err != nil {
		return nil, err
	}
	best := 0.0
	for i := range hits {
		c, _ := cov.Of(hits[i].Record)
		c = math.Round(c*100) / 100
		best = max(best, c)
		hits[i].Why += ", covers " + strconv.FormatFloat(c, 'f', 2, 64)
	}
	if abstain && best < s.opts.MinCoverage && cov.Telling() {
		return nil, nil
	}
	return hits, nil
}
