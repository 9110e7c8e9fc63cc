package storage

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/storage/fulltext"
	"github.com/hearth-memory/hearth/storage/thesaurus"
)

// TestThesaurus_Keys holds the thesaurus to what expandQuery can match: every
// entry has a key (a word that is not a stopword), an entry of several
// words keeps at least two (else its one word would stand for the phrase),
// and no key is in two groups or twice in one, so a query word leads to one
// group and each synonym adds a term of its own.
func TestThesaurus_Keys(t *testing.T) {
	owner := map[string]string{} // key → the entry that holds it
	for _, g := range thesaurus.Groups() {
		for _, e := range g {
			k := synonymKey(e)
			switch {
			case k == "":
				t.Errorf("%q: only stopwords", e)
			case strings.Contains(e, " ") && !strings.Contains(k, " "):
				t.Errorf("%q: one word (%q) is left of a phrase", e, k)
			}
			if o, ok := owner[k]; ok {
				t.Errorf("%q and %q share the key %q", o, e, k)
			}
			owner[k] = e
		}
	}
}

func TestThesaurus_ExpandQuery(t *testing.T) {
	t.Run("OKSynonymsAfterWords", func(t *testing.T) {
		x := expandQuery(fulltext.QueryWords("Where do we keep the invoices?"))
		if x.nWords != 2 || x.terms[0] != "keep" || x.terms[1] != "invoices" {
			t.Fatalf("terms %q (%d words), want the query's words first", x.terms, x.nWords)
		}
		if got := x.terms[2:]; len(got) != 1 || got[0] != "bill" {
			t.Errorf("synonyms %q, want [bill]", got)
		}
		if got := x.rankWords(); got != "keep invoices bill^0.5@1" {
			t.Errorf("rankWords = %q", got)
		}
	})
	t.Run("OKPhrase", func(t *testing.T) {
		// "pull request" is matched as one entry, its words' stems in a
		// row; the phrase's synonyms stand for both words.
		x := expandQuery(fulltext.QueryWords("who reviews pull requests"))
		want := []string{"reviews", "pull", "requests", "pr", "merge request", "mr"}
		if strings.Join(x.terms, "|") != strings.Join(want, "|") {
			t.Errorf("terms %q, want %q", x.terms, want)
		}
		if got := x.rankWords(); got != "reviews pull requests pr^0.5@1,2 merge+request^0.5@1,2 mr^0.5@1,2" {
			t.Errorf("rankWords = %q", got)
		}
		if got := x.snippetWords(); strings.Join(got, " ") != "reviews pull requests pr merge request mr" {
			t.Errorf("snippetWords = %q", got)
		}
	})
	t.Run("OKNothingTheQueryHolds", func(t *testing.T) {
		// Both words are in one group: neither adds the other.
		if x := expandQuery(fulltext.QueryWords("bill or invoice")); len(x.terms) != 2 {
			t.Errorf("terms %q, want only the query's words", x.terms)
		}
		if x := expandQuery(fulltext.QueryWords("pizza at lunch")); len(x.terms) != 2 {
			t.Errorf("terms %q, want the words alone", x.terms)
		}
	})
	t.Run("OKBounded", func(t *testing.T) {
		// Words of large groups: each adds at most maxSynonyms, in turns,
		// and the query stays within fulltext.MaxQueryTerms.
		words := fulltext.QueryWords("deploy error auth delete config database retry k8s timeout crash hang slow monitoring incident")
		x := expandQuery(words)
		if len(x.terms) != fulltext.MaxQueryTerms {
			t.Fatalf("%d terms, want %d", len(x.terms), fulltext.MaxQueryTerms)
		}
		per := map[int]int{}
		for _, of := range x.of {
			per[of[0]]++
		}
		for w, n := range per {
			if n > maxSynonyms {
				t.Errorf("%q added %d synonyms, more than %d", words[w], n, maxSynonyms)
			}
		}
		// Taken in turns: the first word's first synonym, then the second
		// word's.
		if x.of[0][0] != 0 || x.of[1][0] != 1 {
			t.Errorf("synonyms of %v, want one per word in turn", x.of[:2])
		}
		long := make([]string, fulltext.MaxQueryTerms)
		for i := range long {
			long[i] = "invoice"
		}
		long[0] = "word"
		if x := expandQuery(long); len(x.terms) != fulltext.MaxQueryTerms {
			t.Errorf("%d terms for a full query, want %d", len(x.terms), fulltext.MaxQueryTerms)
		}
	})
}

func TestParseRankWord(t *testing.T) {
	for _, tt := range []struct {
		entry  string
		word   string
		weight float64
		of     []int
	}{
		{"invoice", "invoice", 1, nil},
		{"bill^0.5@3", "bill", 0.5, []int{3}},
		{"merge+request^0.25@1,2", "merge+request", 0.25, []int{1, 2}},
		{"bill^x@a,2", "bill", 1, []int{2}},
		{"bill^-1", "bill", 1, nil},
		{"bill^0", "bill", 1, nil},
	} {
		rw := parseRankWord(tt.entry)
		if rw.word != tt.word || rw.weight != tt.weight || fmt.Sprint(rw.of) != fmt.Sprint(tt.of) {
			t.Errorf("parseRankWord(%q) = %+v, want %q %v %v", tt.entry, rw, tt.word, tt.weight, tt.of)
		}
	}
	rw := parseRankWord("bill^0.5@0,1")
	if got := rw.weigh([]int64{3, 2}); got != 0.5 {
		t.Errorf("weigh with both words held = %v, want 0.5", got)
	}
	if got := rw.weigh([]int64{3, 0}); got != 1 {
		t.Errorf("weigh with a word no record holds = %v, want 1", got)
	}
}

// TestSearch_Synonyms: a query finds records by its words' synonyms; with
// everything else equal, the record holding the word asked for ranks above
// the one holding a synonym; a synonym of a word no record holds ranks as
// that word would; the snippet shows the synonym.
func TestSearch_Synonyms(t *testing.T) {
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
