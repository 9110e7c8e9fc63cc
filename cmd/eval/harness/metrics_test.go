package harness

import (
	"math"
	"testing"
)

func TestQueryResult_RecallAt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		ranks []int
		k     int
		want  float64
	}{
		{"OKFirst", []int{1}, 5, 1},
		{"OKAtK", []int{5}, 5, 1},
		{"PastK", []int{6}, 5, 0},
		{"Missing", []int{0}, 10, 0},
		{"HalfOfTwo", []int{3, 0}, 10, 0.5},
		{"OneOfTwoWithinK", []int{2, 7}, 5, 0.5},
		{"BothOfTwo", []int{2, 7}, 10, 1},
		{"NoAnswers", nil, 10, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := (QueryResult{Ranks: tc.ranks}).RecallAt(tc.k); got != tc.want {
				t.Errorf("RecallAt(%d) with ranks %v = %v, want %v", tc.k, tc.ranks, got, tc.want)
			}
		})
	}
}

func TestQueryResult_ReciprocalRank(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		ranks []int
		want  float64
	}{
		{"OKFirst", []int{1}, 1},
		{"Third", []int{3}, 1.0 / 3},
		{"Missing", []int{0}, 0},
		// The best-placed answer counts, whatever the answers' order.
		{"BestOfTwo", []int{0, 4}, 0.25},
		{"BestFirstListed", []int{4, 2}, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := (QueryResult{Ranks: tc.ranks}).ReciprocalRank(); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("ReciprocalRank with ranks %v = %v, want %v", tc.ranks, got, tc.want)
			}
		})
	}
}

func TestRows(t *testing.T) {
	t.Parallel()
	results := []QueryResult{
		{ID: "k1", Kind: KindKeywords, Ranks: []int{1}},
		{ID: "k2", Kind: KindKeywords, Ranks: []int{4}},
		{ID: "p1", Kind: KindParaphrase, Ranks: []int{0}},
		{ID: "m1", Kind: KindMulti, Ranks: []int{2, 8}},
	}
	t.Run("OK", func(t *testing.T) {
		rows := Rows(results, nil)
		want := []Row{
			// recall@5: (1 + 1 + 0 + 0.5)/4; recall@10: (1+1+0+1)/4; MRR: (1 + 1/4 + 0 + 1/2)/4.
			{Kind: AllKinds, Queries: 4, Recall5: 0.625, Recall10: 0.75, MRR: 0.4375, Wins: -1, Losses: -1},
			{Kind: KindKeywords, Queries: 2, Recall5: 1, Recall10: 1, MRR: 0.625, Wins: -1, Losses: -1},
			{Kind: KindParaphrase, Queries: 1, Recall5: 0, Recall10: 0, MRR: 0, Wins: -1, Losses: -1},
			{Kind: KindMulti, Queries: 1, Recall5: 0.5, Recall10: 1, MRR: 0.5, Wins: -1, Losses: -1},
		}
		checkRows(t, rows, want)
	})
	t.Run("OKKindLeftOutWhenEmpty", func(t *testing.T) {
		rows := Rows(results[:2], nil)
		if len(rows) != 2 || rows[0].Kind != AllKinds || rows[1].Kind != KindKeywords {
			t.Errorf("rows = %+v, want all and keywords only", rows)
		}
	})
	t.Run("OKWinsLosses", func(t *testing.T) {
		base := map[string]QueryResult{
			"k1": {ID: "k1", Ranks: []int{1}},    // same: tie
			"k2": {ID: "k2", Ranks: []int{2}},    // fts placed it higher: a loss
			"p1": {ID: "p1", Ranks: []int{0}},    // both missed: tie
			"m1": {ID: "m1", Ranks: []int{0, 9}}, // fts found one of two: a win on recall
		}
		rows := Rows(results, base)
		checkRows(t, rows[:1], []Row{{Kind: AllKinds, Queries: 4, Recall5: 0.625, Recall10: 0.75, MRR: 0.4375, Wins: 1, Losses: 1}})
		if k := rows[1]; k.Wins != 0 || k.Losses != 1 {
			t.Errorf("keywords wins/losses = %d/%d, want 0/1", k.Wins, k.Losses)
		}
		if m := rows[3]; m.Wins != 1 || m.Losses != 0 {
			t.Errorf("multi wins/losses = %d/%d, want 1/0", m.Wins, m.Losses)
		}
	})
	t.Run("OKRecallBeforeRank", func(t *testing.T) {
		// More answers found beats a better first rank.
		a := QueryResult{Ranks: []int{5, 6}}
		b := QueryResult{Ranks: []int{1, 0}}
		if got := compare(a, b); got != 1 {
			t.Errorf("compare(%v, %v) = %d, want 1", a.Ranks, b.Ranks, got)
		}
		if got := compare(b, a); got != -1 {
			t.Errorf("compare(%v, %v) = %d, want -1", b.Ranks, a.Ranks, got)
		}
	})
}

func checkRows(t *testing.T, got, want []Row) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d rows %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Kind != w.Kind || g.Queries != w.Queries || g.Wins != w.Wins || g.Losses != w.Losses ||
			math.Abs(g.Recall5-w.Recall5) > 1e-9 || math.Abs(g.Recall10-w.Recall10) > 1e-9 || math.Abs(g.MRR-w.MRR) > 1e-9 {
			t.Errorf("row %d = %+v, want %+v", i, g, w)
		}
	}
}
