package ranking_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/hearth-memory/hearth/server/ranking"
	"github.com/hearth-memory/hearth/storage"
)

func rec(id, ns string, conf, eff float64, proofs, refutations int) *storage.Record {
	return &storage.Record{ID: id, Namespace: ns, Confidence: conf, EffectiveConfidence: eff, ProofCount: proofs, RefutationCount: refutations}
}

func TestEvidenceFactor(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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

// TestFuse_Ties checks R-K3's tie rule under fusion: equal scores go to the
// higher cosine, then the lower id, whatever their scopes; and a hit
// carries the cosine a list knew for it, its own or asked about.
func TestFuse_Ties(t *testing.T) {
	t.Parallel()
	chain := []string{"github/acme/api", "global"}
	// X and Y each sit at #1 of one list and nowhere in the other: equal
	// sums (1/61). Y is more similar, and in the later scope.
	x := rec("X", "github/acme/api", 0.8, 0.8, 0, 0)
	y := rec("Y", "global", 0.8, 0.8, 0, 0)
	fts := ranking.List{Name: "fts", Hits: []storage.Hit{{Record: x}}}
	cos := ranking.List{Name: "cosine", Hits: []storage.Hit{{Record: y}}, Cosine: map[string]float64{"X": 0.31, "Y": 0.52}}
	got := ranking.Fuse(chain, fts, cos)
	if len(got) != 2 || got[0].Record.ID != "Y" || got[0].Score != got[1].Score {
		t.Fatalf("got %v, want Y then X on equal scores (higher cosine first)", ids(got))
	}
	if !got[0].HasCosine || got[0].Cosine != 0.52 || !got[1].HasCosine || got[1].Cosine != 0.31 {
		t.Errorf("cosines = %v/%v %v/%v, want 0.52 and 0.31 (X's from the cosine list's map)", got[0].Cosine, got[0].HasCosine, got[1].Cosine, got[1].HasCosine)
	}

	// Equal scores and equal cosines: the lower id, not the earlier scope.
	b := rec("B", "github/acme/api", 0.8, 0.8, 0, 0)
	a := rec("A", "global", 0.8, 0.8, 0, 0)
	fts = ranking.List{Name: "fts", Hits: []storage.Hit{{Record: b}}}
	cos = ranking.List{Name: "cosine", Hits: []storage.Hit{{Record: a}}, Cosine: map[string]float64{"A": 0.4, "B": 0.4}}
	if got := ranking.Fuse(chain, fts, cos); ids(got) != "A,B" {
		t.Errorf("equal cosines: got %s, want A,B (lower id)", ids(got))
	}

	// The same lists without cosines rank as full text does: earlier scope.
	fts = ranking.List{Name: "fts", Hits: []storage.Hit{{Record: b}}}
	other := ranking.List{Name: "other", Hits: []storage.Hit{{Record: a}}}
	if got := ranking.Fuse(chain, fts, other); ids(got) != "B,A" || got[0].HasCosine {
		t.Errorf("no cosines: got %s, want B,A (earlier scope) and no cosine", ids(got))
	}
}

// TestFuse_Arithmetic checks the sums on lists cut to max(limit, 20): a
// record at #20 of both lists beats one at #1 of one list only when 2/80 >
// 1/61, a record past the cut contributes nothing, and the evidence factor
// multiplies the sum.
func TestFuse_Arithmetic(t *testing.T) {
	t.Parallel()
	chain := []string{"global"}
	var ftsHits, cosHits []storage.Hit
	recs := map[string]*storage.Record{}
	for i := 1; i <= 20; i++ {
		id := fmt.Sprintf("F%02d", i)
		recs[id] = rec(id, "global", 0.8, 0.8, 0, 0)
	}
	for i := 1; i <= 20; i++ {
		ftsHits = append(ftsHits, storage.Hit{Record: recs[fmt.Sprintf("F%02d", i)]})
	}
	// The cosine list holds the fts list in reverse, then "C" at its top:
	// F20 is #20 of fts and #2 of cosine.
	c := rec("C", "global", 0.6, 0.9, 2, 0) // corroborated: x1.5
	cosHits = append(cosHits, storage.Hit{Record: c})
	for i := 20; i >= 2; i-- {
		cosHits = append(cosHits, storage.Hit{Record: recs[fmt.Sprintf("F%02d", i)]})
	}
	cosine := map[string]float64{"C": 0.9}
	for i := 1; i <= 20; i++ {
		cosine[fmt.Sprintf("F%02d", i)] = 0.5
	}
	got := ranking.Fuse(chain, ranking.List{Name: "fts", Hits: ftsHits}, ranking.List{Name: "cosine", Hits: cosHits, Cosine: cosine})
	want := map[string]float64{
		"C":   1.0 / 61 * 1.5,
		"F20": 1.0/80 + 1.0/62,
		"F01": 1.0 / 61, // #1 of fts, cut from cosine (F01 is not in it)
		"F02": 1.0/62 + 1.0/80,
		"F11": 1.0/71 + 1.0/71,
	}
	for _, h := range got {
		if w, ok := want[h.Record.ID]; ok && math.Abs(h.Score-w) > 1e-6 {
			t.Errorf("%s: score %v, want %v (why %q)", h.Record.ID, h.Score, w, h.Why)
		}
	}
	for _, h := range got {
		if h.Record.ID == "C" && h.Why != "cosine #1, evidence x1.50" {
			t.Errorf("C why = %q, want cosine #1, evidence x1.50", h.Why)
		}
	}
	// F02 (#2 fts, #20 cosine) and F20 (#20 fts, #2 cosine) tie at the top
	// on score and cosine: the lower id wins.
	if ids(got[:2]) != "F02,F20" {
		t.Errorf("top two = %s, want F02,F20", ids(got[:2]))
	}
	var i02, i20 int
	for i, h := range got {
		switch h.Record.ID {
		case "F02":
			i02 = i
		case "F20":
			i20 = i
		}
	}
	if got[i02].Score != got[i20].Score || i02 > i20 {
		t.Errorf("F02 at %d (%v), F20 at %d (%v): want equal scores, F02 first", i02, got[i02].Score, i20, got[i20].Score)
	}
	if got[i20].Why != "fts #20, cosine #2" {
		t.Errorf("F20 why = %q", got[i20].Why)
	}
}

func ids(hs []ranking.Hit) string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.Record.ID
	}
	return join(out)
}
