// Package ranking orders search hits. Every ranked list contributes
// 1/(K + position) for each record it holds (reciprocal rank fusion, K = 60);
// with full text alone that is one list. The sum is then multiplied by the
// record's evidence factor, its effective confidence over the confidence its
// writer asserted (1 while unwitnessed), so corroborated records rise and
// contradicted ones sink (SPEC R-K3, R-E3).
package ranking

import (
	"math"
	"slices"
	"strconv"

	"github.com/hearth-memory/hearth/storage"
)

// Ranking modes reported in search responses.
const (
	ModeFTS = "fts"
	ModeRRF = "rrf"
)

// K is the reciprocal-rank-fusion constant.
const K = 60

// Hit is a ranked search hit.
type Hit struct {
	Record  *storage.Record
	Snippet string
	Score   float64
	// Why explains the score, e.g. "fts #2" or "fts #1, evidence x1.11".
	Why string
}

// EvidenceFactor returns effective over asserted confidence, or 1 for a
// record nobody corroborated or contradicted.
func EvidenceFactor(r *storage.Record) float64 {
	if r.ProofCount+r.RefutationCount == 0 || r.Confidence <= 0 {
		return 1
	}
	return r.EffectiveConfidence / r.Confidence
}

// FTS ranks full-text hits, given best first, within the scope chain. Equal
// scores go to the earlier scope, then the lower id.
func FTS(hits []storage.Hit, chain []string) []Hit {
	scope := make(map[string]int, len(chain))
	for i, ns := range chain {
		if _, ok := scope[ns]; !ok {
			scope[ns] = i
		}
	}
	out := make([]Hit, len(hits))
	for i, h := range hits {
		f := EvidenceFactor(h.Record)
		why := "fts #" + strconv.Itoa(i+1)
		if f != 1 {
			why += ", evidence x" + strconv.FormatFloat(f, 'f', 2, 64)
		}
		out[i] = Hit{Record: h.Record, Snippet: h.Snippet, Score: round(f/float64(K+i+1), 6), Why: why}
	}
	slices.SortStableFunc(out, func(a, b Hit) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		if d := scope[a.Record.Namespace] - scope[b.Record.Namespace]; d != 0 {
			return d
		}
		switch {
		case a.Record.ID < b.Record.ID:
			return -1
		case a.Record.ID > b.Record.ID:
			return 1
		}
		return 0
	})
	return out
}

func round(x float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(x*p) / p
}
