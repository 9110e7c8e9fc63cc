package fulltext

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/storage/thesaurus"
)

// TestThesaurus_Keys holds the thesaurus to what Expand can match: every
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
		x := Expand(QueryWords("Where do we keep the invoices?"))
		if x.nWords != 2 || x.terms[0] != "keep" || x.terms[1] != "invoices" {
			t.Fatalf("terms %q (%d words), want the query's words first", x.terms, x.nWords)
		}
		if got := x.terms[2:]; len(got) != 1 || got[0] != "bill" {
			t.Errorf("synonyms %q, want [bill]", got)
		}
		if got := x.RankWords(); got != "keep invoices bill^0.5@1" {
			t.Errorf("RankWords = %q", got)
		}
	})
	t.Run("OKPhrase", func(t *testing.T) {
		// "pull request" is matched as one entry, its words' stems in a
		// row; the phrase's synonyms stand for both words.
		x := Expand(QueryWords("who reviews pull requests"))
		want := []string{"reviews", "pull", "requests", "pr", "merge request", "mr"}
		if strings.Join(x.terms, "|") != strings.Join(want, "|") {
			t.Errorf("terms %q, want %q", x.terms, want)
		}
		if got := x.RankWords(); got != "reviews pull requests pr^0.5@1,2 merge+request^0.5@1,2 mr^0.5@1,2" {
			t.Errorf("RankWords = %q", got)
		}
		if got := x.SnippetWords(); strings.Join(got, " ") != "reviews pull requests pr merge request mr" {
			t.Errorf("SnippetWords = %q", got)
		}
	})
	t.Run("OKNothingTheQueryHolds", func(t *testing.T) {
		// Both words are in one group: neither adds the other.
		if x := Expand(QueryWords("bill or invoice")); len(x.terms) != 2 {
			t.Errorf("terms %q, want only the query's words", x.terms)
		}
		if x := Expand(QueryWords("pizza at lunch")); len(x.terms) != 2 {
			t.Errorf("terms %q, want the words alone", x.terms)
		}
	})
	t.Run("OKBounded", func(t *testing.T) {
		// Words of large groups: each adds at most maxSynonyms, in turns,
		// and the query stays within MaxQueryTerms.
		words := QueryWords("deploy error auth delete config database retry k8s timeout crash hang slow monitoring incident")
		x := Expand(words)
		if len(x.terms) != MaxQueryTerms {
			t.Fatalf("%d terms, want %d", len(x.terms), MaxQueryTerms)
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
		long := make([]string, MaxQueryTerms)
		for i := range long {
			long[i] = "invoice"
		}
		long[0] = "word"
		if x := Expand(long); len(x.terms) != MaxQueryTerms {
			t.Errorf("%d terms for a full query, want %d", len(x.terms), MaxQueryTerms)
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
		rw := ParseRankWord(tt.entry)
		if rw.Word != tt.word || rw.Weight != tt.weight || fmt.Sprint(rw.Of) != fmt.Sprint(tt.of) {
			t.Errorf("ParseRankWord(%q) = %+v, want %q %v %v", tt.entry, rw, tt.word, tt.weight, tt.of)
		}
	}
	rw := ParseRankWord("bill^0.5@0,1")
	if got := rw.Weigh([]int64{3, 2}); got != 0.5 {
		t.Errorf("weigh with both words held = %v, want 0.5", got)
	}
	if got := rw.Weigh([]int64{3, 0}); got != 1 {
		t.Errorf("weigh with a word no record holds = %v, want 1", got)
	}
}
