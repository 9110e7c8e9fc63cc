package harness

// QueryResult is what one query got under one mode.
type QueryResult struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	// Ranking is what the server reported answering with (fts or rrf).
	Ranking string `json:"ranking"`
	// Ranks holds, for each answer in the query's order, its 1-based
	// position among the hits, or 0 when it was not returned.
	Ranks []int `json:"ranks"`
	// Hits is how many hits came back; LeftOut how many the search budget
	// dropped (docs/design.md R-B2).
	Hits    int `json:"hits"`
	LeftOut int `json:"left_out,omitempty"`
	// Top lists the hits in order by set key (a record id the set does
	// not know stays an id), to see what outranked an answer.
	Top []string `json:"top"`
}

// RecallAt is the fraction of the query's answers found at position k or
// better.
func (q QueryResult) RecallAt(k int) float64 {
	if len(q.Ranks) == 0 {
		return 0
	}
	found := 0
	for _, r := range q.Ranks {
		if r > 0 && r <= k {
			found++
		}
	}
	return float64(found) / float64(len(q.Ranks))
}

// ReciprocalRank is 1 over the position of the best-placed answer, or 0
// when no answer was returned.
func (q QueryResult) ReciprocalRank() float64 {
	best := 0
	for _, r := range q.Ranks {
		if r > 0 && (best == 0 || r < best) {
			best = r
		}
	}
	if best == 0 {
		return 0
	}
	return 1 / float64(best)
}

// compare orders two results of the same query: recall@10 first, then the
// reciprocal rank. It returns +1 when a is better, -1 when worse, 0 on a tie.
func compare(a, b QueryResult) int {
	for _, d := range [][2]float64{
		{a.RecallAt(10), b.RecallAt(10)},
		{a.ReciprocalRank(), b.ReciprocalRank()},
	} {
		switch {
		case d[0] > d[1]+1e-12:
			return 1
		case d[0] < d[1]-1e-12:
			return -1
		}
	}
	return 0
}

// Row is one line of the table: a mode's figures over one kind of query
// (or "all"). Wins and Losses count queries where the mode did better or
// worse than full-text ranking (recall@10 first, then reciprocal rank);
// both are -1 for the fts rows and when fts was not run.
type Row struct {
	Kind     string  `json:"kind"`
	Queries  int     `json:"queries"`
	Recall5  float64 `json:"recall_at_5"`
	Recall10 float64 `json:"recall_at_10"`
	MRR      float64 `json:"mrr"`
	Wins     int     `json:"wins"`
	Losses   int     `json:"losses"`
}

// AllKinds is the Kind of the row over every query.
const AllKinds = "all"

// Rows aggregates results into the "all" row and one row per kind, in
// Kinds order, leaving out kinds with no query. base holds the fts results
// by query id; nil when there is nothing to compare with.
func Rows(results []QueryResult, base map[string]QueryResult) []Row {
	rows := []Row{row(AllKinds, results, base)}
	for _, k := range Kinds {
		var of []QueryResult
		for _, r := range results {
			if r.Kind == k {
				of = append(of, r)
			}
		}
		if len(of) > 0 {
			rows = append(rows, row(k, of, base))
		}
	}
	return rows
}

func row(kind string, results []QueryResult, base map[string]QueryResult) Row {
	r := Row{Kind: kind, Queries: len(results), Wins: -1, Losses: -1}
	if len(results) == 0 {
		return r
	}
	if base != nil {
		r.Wins, r.Losses = 0, 0
	}
	for _, q := range results {
		r.Recall5 += q.RecallAt(5)
		r.Recall10 += q.RecallAt(10)
		r.MRR += q.ReciprocalRank()
		if base == nil {
			continue
		}
		if b, ok := base[q.ID]; ok {
			switch compare(q, b) {
			case 1:
				r.Wins++
			case -1:
				r.Losses++
			}
		}
	}
	n := float64(len(results))
	r.Recall5 /= n
	r.Recall10 /= n
	r.MRR /= n
	return r
}
