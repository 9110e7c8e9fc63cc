package fulltext

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// feedbackHits makes docs of the texts (their snippets), scores falling
// from 10 by 1.
func feedbackHits(texts ...string) []Doc {
	docs := make([]Doc, len(texts))
	for i, s := range texts {
		docs[i] = Doc{Title: "t", Snippet: s, BM25: -10 + float64(i)}
	}
	return docs
}

// TestFeedback_Words: feedback words come from the best feedbackDocs hits
// only, are held by at least feedbackMinHits hits, and are never the
// query's words or their synonyms.
func TestFeedback_Words(t *testing.T) {
	x := Expand(QueryWords("invoice numbering"))
	hits := feedbackHits(
		"Invoice numbering uses a ledger sequence per merchant.",
		"The ledger sequence is gapless; invoices say so.",
		"Merchant ledger sequence exports run nightly.",
		"Zebra quokka zebra quokka, nothing of the best hits.",
		"Zebra quokka again.",
	)
	var got []string
	for _, w := range feedbackWords(x, hits, feedbackScratches.New().(*feedbackScratch)) {
		got = append(got, w.stem)
	}
	// ledger, sequenc: both best hits hold them; merchant: the first and
	// third. gapless (the second alone) is held by too few; zebra and
	// quokka are held by two hits, neither among the best; invoice,
	// number and bill are the query's.
	want := []string{"ledger", "sequenc", "merchant"}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("feedback words %q, want %q", got, want)
	}
}

// TestFeedback_Order: Feedback returns a permutation of the docs, best
// first by the scores it leaves in their BM25, and a doc holding the
// feedback words passes one that holds none.
func TestFeedback_Order(t *testing.T) {
	docs := feedbackHits(
		"Invoice numbering uses a ledger sequence per merchant.",
		"The ledger sequence is per merchant; invoices say so.",
		"Zebra quokka zebra quokka.",
		"Merchant ledger sequence exports run nightly.",
	)
	order := Feedback(Expand(QueryWords("invoice numbering")), docs)
	if got := slices.Sorted(slices.Values(order)); !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Fatalf("order %v, want a permutation of the docs", order)
	}
	for i := 1; i < len(order); i++ {
		if docs[order[i]].BM25 < docs[order[i-1]].BM25 {
			t.Errorf("order %v: bm25 %v after %v, want best first", order, docs[order[i]].BM25, docs[order[i-1]].BM25)
		}
	}
	if slices.Index(order, 3) > slices.Index(order, 2) {
		t.Errorf("order %v: want the doc holding the feedback words (3) before the one holding none (2)", order)
	}
}

// TestFeedback_ScratchReused: a scratch used by one feedback and reset
// gives the next what a new one gives.
func TestFeedback_ScratchReused(t *testing.T) {
	x := Expand(QueryWords("invoice numbering"))
	first := feedbackHits("ledger sequence merchant", "ledger sequence", "ledger merchant", "sequence merchant ledger")
	next := feedbackHits("payout batch schedule", "payout batch", "batch schedule", "ledger sequence merchant")
	stems := func(sc *feedbackScratch, hits []Doc) string {
		var out []string
		for _, w := range feedbackWords(x, hits, sc) {
			out = append(out, fmt.Sprintf("%s %.6f %v", w.stem, w.weight, w.tf))
		}
		slices.Sort(out)
		return strings.Join(out, "; ")
	}
	used := feedbackScratches.New().(*feedbackScratch)
	stems(used, first)
	used.reset()
	if got, want := stems(used, next), stems(feedbackScratches.New().(*feedbackScratch), next); got != want {
		t.Errorf("reused scratch: %s\nnew scratch: %s", got, want)
	}
}

// TestFeedback_Unchanged: a query of one word, and hits too few for any
// other hit to give feedback, come back as they were: no new order, the
// same scores.
func TestFeedback_Unchanged(t *testing.T) {
	texts := []string{"invoice ledger", "ledger ledger", "other ledger", "ledger"}
	hits := feedbackHits(texts...)
	if order := Feedback(Expand(QueryWords("invoice")), hits); order != nil || !slices.Equal(hits, feedbackHits(texts...)) {
		t.Errorf("one word: got order %v and %v, want none and %v", order, hits, feedbackHits(texts...))
	}
	hits = feedbackHits(texts[:feedbackDocs]...)
	if order := Feedback(Expand(QueryWords("invoice ledger")), hits); order != nil || !slices.Equal(hits, feedbackHits(texts[:feedbackDocs]...)) {
		t.Errorf("%d hits: got order %v and %v, want none and %v", feedbackDocs, order, hits, feedbackHits(texts[:feedbackDocs]...))
	}
}

// TestStem_KeepsAllButTheLastLetter holds stemHeads to Porter stemming: a
// word's stem, but for its last letter, is the word's start, so a word is
// told from a stem by its first letters.
func TestStem_KeepsAllButTheLastLetter(t *testing.T) {
	for w := range suffixedWords(rand.New(rand.NewPCG(5, 6)), 50_000) {
		if len(w) < 3 {
			continue
		}
		st := Stem(w)
		if st == "" || !strings.HasPrefix(w, st[:len(st)-1]) {
			t.Fatalf("Stem(%q) = %q: more than its last letter changed", w, st)
		}
		var h stemHeads
		h.add(st)
		if !h.mayStem(strings.ToUpper(w[:1]) + w[1:]) {
			t.Fatalf("stemHeads of %q rule out %q", st, w)
		}
	}
	var h stemHeads
	h.add("ledger")
	if h.mayStem("merchant") || h.mayStem("Lexicon") {
		t.Error("stemHeads of ledger let through a word of other first letters")
	}
}
