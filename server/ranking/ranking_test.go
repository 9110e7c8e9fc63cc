package ranking_test

import (
	"math"
	"testing"

	"github.com/hearth-memory/hearth/server/ranking"
	"github.com/hearth-memory/hearth/storage"
)

func rec(id, ns string, conf, eff float64, proofs, refutations int) *storage.Record {
	return &storage.Record{ID: id, Namespace: ns, Confidence: conf, EffectiveConfidence: eff, ProofCount: proofs, RefutationCount: refutations}
}

func TestEvidenceFactor(t *testing.T) {
	cases := []struct {
		name string
		r    *storage.Record
		want float64
	}{
		{"Unwitnessed", rec("a", "global", 0.6, 0.6, 0, 0), 1},
		{"Corroborated", rec("a", "global", 0.6, 0.8222, 2, 0), 0.8222 / 0.6},
		{"Contradicted", rec("a", "global", 0.6, 0.3, 0, 1), 0.5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ranking.EvidenceFactor(c.r); math.Abs(got-c.want) > 1e-12 {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

// TestFTS checks the reciprocal-rank score, the evidence factor reordering
// hits and the tie-breaks: earlier scope first, then lower id.
func TestFTS(t *testing.T) {
	chain := []string{"github/acme/api", "projects/p", "global"}
	hits := []storage.Hit{
		{Record: rec("B", "global", 0.8, 0.8, 0, 0)},
		{Record: rec("C", "github/acme/api", 0.8, 0.4, 0, 1)}, // halved: sinks
		{Record: rec("A", "github/acme/api", 0.8, 0.8, 0, 0)},
	}
	got := ranking.FTS(hits, chain)
	var ids []string
	for _, h := range got {
		ids = append(ids, h.Record.ID)
	}
	if want := "B,A,C"; join(ids) != want {
		t.Fatalf("order = %s, want %s", join(ids), want)
	}
	if got[0].Score != math.Round(1.0/61*1e6)/1e6 || got[0].Why != "fts #1" {
		t.Errorf("first: score %v why %q, want 1/61 and fts #1", got[0].Score, got[0].Why)
	}
	if got[2].Why != "fts #2, evidence x0.50" {
		t.Errorf("contradicted why = %q", got[2].Why)
	}

	// Equal scores: the earlier scope wins, then the lower id.
	tie := []storage.Hit{
		{Record: rec("Z", "global", 0.8, 0.8*61/62, 0, 1)}, // 1/61 x 61/62 = 1/62
		{Record: rec("Y", "github/acme/api", 0.8, 0.8, 0, 0)},
	}
	got = ranking.FTS(tie, chain)
	if got[0].Score != got[1].Score || got[0].Record.ID != "Y" {
		t.Errorf("tie: got %s (%v) then %s (%v), want Y first on equal scores", got[0].Record.ID, got[0].Score, got[1].Record.ID, got[1].Score)
	}

	// Equal scores in the same scope: the lower id wins.
	sameScope := []storage.Hit{
		{Record: rec("N", "github/acme/api", 0.8, 0.8*61/62, 0, 1)},
		{Record: rec("M", "github/acme/api", 0.8, 0.8, 0, 0)},
	}
	got = ranking.FTS(sameScope, chain)
	if got[0].Score != got[1].Score || got[0].Record.ID != "M" {
		t.Errorf("same-scope tie: got %s then %s, want M (the lower id) first", got[0].Record.ID, got[1].Record.ID)
	}
}

func join(ss []string) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += ","
		}
		out += s
	}
	return out
}

// TestFuse checks reciprocal rank fusion over two lists: the sums, the
// evidence factor on the sum, the why naming each list, the snippet taken
// from the first list that has one, and records held by one list only.
func TestFuse(t *testing.T) {
	chain := []string{"github/acme/api", "global"}
	a := rec("A", "github/acme/api", 0.8, 0.8, 0, 0)
	b := rec("B", "global", 0.8, 0.4, 0, 1) // contradicted: x0.50
	c := rec("C", "global", 0.8, 0.8, 0, 0)
	fts := ranking.List{Name: "fts", Hits: []storage.Hit{{Record: a, Snippet: "from fts"}, {Record: b, Snippet: "b"}}}
	cos := ranking.List{Name: "cosine", Hits: []storage.Hit{{Record: c}, {Record: a}, {Record: b}}}
	got := ranking.Fuse(chain, fts, cos)

	want := map[string]struct {
		score float64
		why   string
	}{
		"A": {1.0/61 + 1.0/62, "fts #1, cosine #2"},
		"B": {(1.0/62 + 1.0/63) * 0.5, "fts #2, cosine #3, evidence x0.50"},
		"C": {1.0 / 61, "cosine #1"},
	}
	if len(got) != 3 {
		t.Fatalf("got %d hits, want 3", len(got))
	}
	for _, h := range got {
		w := want[h.Record.ID]
		if math.Abs(h.Score-w.score) > 1e-6 || h.Why != w.why {
			t.Errorf("%s: score %v why %q, want %v %q", h.Record.ID, h.Score, h.Why, w.score, w.why)
		}
	}
	if ids := []string{got[0].Record.ID, got[1].Record.ID, got[2].Record.ID}; join(ids) != "A,C,B" {
		t.Errorf("order = %s, want A,C,B", join(ids))
	}
	if got[0].Snippet != "from fts" {
		t.Errorf("A's snippet = %q, want the fts list's", got[0].Snippet)
	}

	// One list alone is exactly FTS.
	one := ranking.Fuse(chain, fts)
	ftsOnly := ranking.FTS(fts.Hits, chain)
	for i := range one {
		if one[i] != ftsOnly[i] {
			t.Errorf("Fuse of one list [%d] = %+v, FTS gives %+v", i, one[i], ftsOnly[i])
		}
	}
}
