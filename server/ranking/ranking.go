// Package ranking orders search hits. Every ranked list contributes
// 1/(K + position) for each record it holds (reciprocal rank fusion, K = 60);
// with full text alone that is one list. The sum is then multiplied by the
// record's evidence factor, its effective confidence over the confidence its
// writer asserted (1 while unwitnessed), so corroborated records rise and
// contradicted ones sink (docs/design.md R-K3, R-E3).
package ranking

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/hearth-memory/hearth/storage"
)

// Ranking modes reported in search responses: full text alone, fusion,
// and cosine alone (only when asked for by name, as the eval does).
const (
	ModeFTS    = "fts"
	ModeRRF    = "rrf"
	ModeCosine = "cosine"
)

// K is the reciprocal-rank-fusion constant.
const K = 60

// List is one ranked list: its name, as `why` reports it ("fts"), and its
// hits, best first. Cosine, set by a similarity list, holds the cosine
// similarity to the query of records by id: of its own hits and of any
// other record it was asked about.
type List struct {
	Name   string
	Hits   []storage.Hit
	Cosine map[string]float64
}

// Hit is a ranked search hit.
type Hit struct {
	Record  *storage.Record
	Snippet string
	Score   float64
	// Why explains the score, e.g. "fts #2" or "fts #1, evidence x1.11".
	Why string
	// Cosine is the record's cosine similarity to the query when a list
	// knew it (HasCosine).
	Cosine    float64
	HasCosine bool
}

// EvidenceFactor returns effective over asserted confidence, or 1 for a
// record nobody corroborated or contradicted.
func EvidenceFactor(r *storage.Record) float64 {
	if r.ProofCount+r.RefutationCount == 0 || r.Confidence <= 0 {
		return 1
	}
	return r.EffectiveConfidence / r.Confidence
}

// FTS ranks full-text hits, given best first, within the scope chain: Fuse
// over the one list "fts".
func FTS(hits []storage.Hit, chain []string) []Hit {
	return Fuse(chain, List{Name: ModeFTS, Hits: hits})
}

// Fuse ranks the records of every list by reciprocal rank fusion within the
// scope chain: each list a record is in adds 1/(K + its position), and the
// sum is multiplied by the record's evidence factor. A hit's snippet is the
// first list's that has one; its why names each list and position in list
// order, then the evidence factor when it is not 1. A hit carries the
// cosine any list knew for it.
//
// Equal scores go to the higher cosine, then the lower id, when any list
// knew cosines (R-K3; a hit without one counts as less similar than any
// with one); otherwise, as full text alone ranks, to the earlier scope of
// chain, then the lower id.
func Fuse(chain []string, lists ...List) []Hit {
	scope := make(map[string]int, len(chain))
	for i, ns := range chain {
		if _, ok := scope[ns]; !ok {
			scope[ns] = i
		}
	}
	type fused struct {
		hit Hit
		sum float64
		why []string
	}
	var order []string
	byID := make(map[string]*fused)
	similar := false
	for _, l := range lists {
		similar = similar || l.Cosine != nil
		for i, h := range l.Hits {
			f, ok := byID[h.Record.ID]
			if !ok {
				f = &fused{hit: Hit{Record: h.Record}}
				byID[h.Record.ID] = f
				order = append(order, h.Record.ID)
			}
			if f.hit.Snippet == "" {
				f.hit.Snippet = h.Snippet
			}
			f.sum += 1 / float64(K+i+1)
			f.why = append(f.why, l.Name+" #"+strconv.Itoa(i+1))
		}
	}
	out := make([]Hit, len(order))
	for i, id := range order {
		f := byID[id]
		factor := EvidenceFactor(f.hit.Record)
		if factor != 1 {
			f.why = append(f.why, "evidence x"+strconv.FormatFloat(factor, 'f', 2, 64))
		}
		f.hit.Score = round(f.sum*factor, 6)
		f.hit.Why = strings.Join(f.why, ", ")
		for _, l := range lists {
			if c, ok := l.Cosine[id]; ok {
				f.hit.Cosine, f.hit.HasCosine = c, true
				break
			}
		}
		out[i] = f.hit
	}
	slices.SortStableFunc(out, func(a, b Hit) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		if similar {
			switch {
			case a.HasCosine != b.HasCosine:
				if a.HasCosine {
					return -1
				}
				return 1
			case a.Cosine > b.Cosine:
				return -1
			case a.Cosine < b.Cosine:
				return 1
			}
			return strings.Compare(a.Record.ID, b.Record.ID)
		}
		if d := scope[a.Record.Namespace] - scope[b.Record.Namespace]; d != 0 {
			return d
		}
		return strings.Compare(a.Record.ID, b.Record.ID)
	})
	return out
}

func round(x float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(x*p) / p
}
