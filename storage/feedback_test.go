package storage

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/storage/fulltext"
)

// feedbackHits makes hits of the texts, scores falling from 10 by 1.
func feedbackHits(texts ...string) []Hit {
	hits := make([]Hit, len(texts))
	for i, s := range texts {
		hits[i] = Hit{Record: &Record{ID: string(rune('A' + i)), Title: "t", Content: s}, Snippet: s, BM25: -10 + float64(i)}
	}
	return hits
}

// TestFeedback_Words: feedback words come from the best feedbackDocs hits
// only, are held by at least feedbackMinHits hits, and are never the
// query's words or their synonyms.
func TestFeedback_Words(t *testing.T) {
	x := fulltext.Expand(fulltext.QueryWords("invoice numbering"))
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

// TestFeedback_ScratchReused: a scratch used by one feedback and reset
// gives the next what a new one gives.
func TestFeedback_ScratchReused(t *testing.T) {
	x := fulltext.Expand(fulltext.QueryWords("invoice numbering"))
	first := feedbackHits("ledger sequence merchant", "ledger sequence", "ledger merchant", "sequence merchant ledger")
	next := feedbackHits("payout batch schedule", "payout batch", "batch schedule", "ledger sequence merchant")
	stems := func(sc *feedbackScratch, hits []Hit) string {
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
// other hit to give feedback, come back as they were.
func TestFeedback_Unchanged(t *testing.T) {
	texts := []string{"invoice ledger", "ledger ledger", "other ledger", "ledger"}
	hits := feedback(fulltext.Expand(fulltext.QueryWords("invoice")), feedbackHits(texts...))
	if want := feedbackHits(texts...); !sameHits(hits, want) {
		t.Errorf("one word: got %v, want %v", hits, want)
	}
	hits = feedback(fulltext.Expand(fulltext.QueryWords("invoice ledger")), feedbackHits(texts[:feedbackDocs]...))
	if want := feedbackHits(texts[:feedbackDocs]...); !sameHits(hits, want) {
		t.Errorf("%d hits: got %v, want %v", feedbackDocs, hits, want)
	}
}

func sameHits(a, b []Hit) bool {
	return slices.EqualFunc(a, b, func(x, y Hit) bool { return x.Record.ID == y.Record.ID && x.BM25 == y.BM25 })
}

// TestSearch_Feedback: of two records that each hold one word of a
// question, the one that shares the best hits' other words (dead letter
// queue) ranks above the one that bm25 alone puts first (shorter); a
// literal search, without feedback, keeps bm25's order.
func TestSearch_Feedback(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t)
	store := func(title, content string) string { return storeNote(t, db, "global", title, content).ID }
	for i := range 6 {
		store("Lunch", "Pizza on Fridays at the office, table "+string(rune('a'+i)))
	}
	store("Webhook retries", "Webhook retries back off; after the last one the event goes to the dead letter queue.")
	store("Webhook retries drained", "Retries of a webhook end in the dead letter queue, which the on-call drains.")
	dlq := store("Dead letter queue", "Events in the dead letter queue are replayed by hand once the outage is over; a webhook is one source.")
	short := store("Client policy", "Client retries: three.")

	order := func(literal bool) (int, int) {
		t.Helper()
		hits, err := db.Search(ctx, SearchQuery{Text: "what happens to webhook retries", Literal: literal, Feedback: true})
		if err != nil {
			t.Fatal(err)
		}
		pos := map[string]int{}
		for i, h := range hits {
			pos[h.Record.ID] = i + 1
			if i > 0 && h.BM25 < hits[i-1].BM25 {
				t.Errorf("hit %d: bm25 %v after %v, want best first", i, h.BM25, hits[i-1].BM25)
			}
		}
		if pos[dlq] == 0 || pos[short] == 0 {
			t.Fatalf("got %v, want both records", ids(hits))
		}
		return pos[dlq], pos[short]
	}
	if d, s := order(true); d < s {
		t.Fatalf("literal: the dead letter record at %d, the short one at %d: want bm25 to rank the short one first", d, s)
	}
	if d, s := order(false); d > s {
		t.Errorf("feedback: the dead letter record at %d, the short one at %d: want the dead letter record first", d, s)
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
		st := fulltext.Stem(w)
		if st == "" || !strings.HasPrefix(w, st[:len(st)-1]) {
			t.Fatalf("fulltext.Stem(%q) = %q: more than its last letter changed", w, st)
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
