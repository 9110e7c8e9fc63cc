package storage

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
)

// TestSearch_Synonyms: a query finds records by its words' synonyms; with
// everything else equal, the record holding the word asked for ranks above
// the one holding a synonym; a synonym of a word no record holds ranks as
// that word would; the snippet shows the synonym.
func TestSearch_Synonyms(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openTestDB(t)
	store := func(title, content string) string { return storeNote(t, db, "global", title, content).ID }
	for i := range 10 {
		store(fmt.Sprintf("Lunch %d", i), "Pizza on Fridays at the office.")
	}
	byBill := store("Monthly run", "Each bill is numbered per merchant.")
	byInvoice := store("Monthly run", "Each invoice is numbered per merchant.")
	long := store("Cluster notes", strings.Repeat("The cluster has three nodes and one control plane. ", 6)+
		"Upgrades go through kubernetes minor versions one at a time.")
	mirror := store("Mirrors", "The repository is mirrored nightly.")

	hits, err := db.Search(ctx, SearchQuery{Text: "how are invoices numbered"})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 2 || hits[0].Record.ID != byInvoice || hits[1].Record.ID != byBill {
		t.Fatalf("got %v, want the invoice record, then the bill record", ids(hits))
	}
	if !(hits[0].BM25 < hits[1].BM25) {
		t.Errorf("bm25 %v then %v, want the word asked for to rank strictly better", hits[0].BM25, hits[1].BM25)
	}

	// A literal search (an answer's sources) keeps to the words asked.
	hits, err = db.Search(ctx, SearchQuery{Text: "invoices", Literal: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].Record.ID != byInvoice {
		t.Fatalf("literal: got %v, want the invoice record alone", ids(hits))
	}

	// No record says k8s: the record that says kubernetes is found, and
	// its snippet shows that word, not the content's start.
	hits, err = db.Search(ctx, SearchQuery{Text: "k8s"})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 {
		t.Fatalf("got %v, want the record that says kubernetes", ids(hits))
	}
	if hits[0].Record.ID != long || !strings.Contains(hits[0].Snippet, "kubernetes") {
		t.Errorf("got %v (%q), want the record with a snippet showing kubernetes", ids(hits), hits[0].Snippet)
	}

	// No record says repo: its synonym counts as the word itself would.
	bySyn, err := db.Search(ctx, SearchQuery{Text: "repo mirrored"})
	if err != nil {
		t.Fatal(err)
	}
	byWord, err := db.Search(ctx, SearchQuery{Text: "repository mirrored"})
	if err != nil {
		t.Fatal(err)
	}
	if len(bySyn) != 1 || len(byWord) != 1 || bySyn[0].Record.ID != mirror || byWord[0].Record.ID != mirror {
		t.Fatalf("got %v and %v, want the mirror record", ids(bySyn), ids(byWord))
	}
	if math.Abs(bySyn[0].BM25-byWord[0].BM25) > 1e-9 {
		t.Errorf("bm25 by the synonym of an absent word %v, by the word itself %v", bySyn[0].BM25, byWord[0].BM25)
	}
}

func ids(hits []Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.Record.ID)
	}
	return out
}
