package storage

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestReorder: reorder puts hits in the order of any permutation, as
// copying each hit to its place does.
func TestReorder(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	for range 2000 {
		n := rng.IntN(40)
		hits := make([]Hit, n)
		for i := range hits {
			hits[i] = Hit{Record: &Record{ID: string(rune('A' + i))}, BM25: float64(i)}
		}
		order := rng.Perm(n)
		want := make([]Hit, n)
		for i, j := range order {
			want[i] = hits[j]
		}
		reorder(hits, slices.Clone(order))
		if !slices.Equal(hits, want) {
			t.Fatalf("order %v: got %v, want %v", order, ids(hits), ids(want))
		}
	}
}

// TestSearch_Feedback: of two records that each hold one word of a
// question, the one that shares the best hits' other words (dead letter
// queue) ranks above the one that bm25 alone puts first (shorter); a
// literal search, without feedback, keeps bm25's order.
func TestSearch_Feedback(t *testing.T) {
	t.Parallel()
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
