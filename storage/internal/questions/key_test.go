package questions_test

import (
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ncruces/go-sqlite3/driver"
	"github.com/ncruces/go-sqlite3/ext/fts5"

	"github.com/hearth-memory/hearth/storage/internal/questions"
)

func TestKey(t *testing.T) {
	t.Parallel()
	t.Run("OKSameQuestionOtherWordsAndOrder", func(t *testing.T) {
		for _, group := range [][]string{
			{"How do we run the migrations?", "running migrations", "Migrations: how to run them", "RUN MIGRATION", "migrations, run"},
			{"Which Python version does CI use?", "what python version is used by CI", "CI: Python version, used?"},
			{"Deploying the API to staging", "how to deploy api on staging?", "staging deploys of the API"},
		} {
			want := questions.Key(group[0])
			if want == "" {
				t.Fatalf("%q: empty key", group[0])
			}
			for _, q := range group[1:] {
				if got := questions.Key(q); got != want {
					t.Errorf("Key(%q) = %q, want %q (as %q)", q, got, want, group[0])
				}
			}
		}
	})

	t.Run("OKDifferentQuestionsApart", func(t *testing.T) {
		qs := []string{
			"How do we run the migrations?",
			"How do we roll back migrations?",
			"Which Python version does CI use?",
			"Which Go version does CI use?",
			"Deploying the API to staging",
			"Deploying the API to production",
			"why is the cache not invalidated",
		}
		seen := map[string]string{}
		for _, q := range qs {
			k := questions.Key(q)
			if other, ok := seen[k]; ok {
				t.Errorf("%q and %q share the key %q", q, other, k)
			}
			seen[k] = q
		}
	})

	t.Run("OKDeterministic", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(1, 2))
		words := strings.Fields("which port does the metrics exporter listen on in staging")
		want := questions.Key(strings.Join(words, " "))
		for range 50 {
			rng.Shuffle(len(words), func(i, j int) { words[i], words[j] = words[j], words[i] })
			if got := questions.Key(strings.Join(words, "  ")); got != want {
				t.Fatalf("shuffled %v: key %q, want %q", words, got, want)
			}
		}
	})

	t.Run("OKStopWordsOnly", func(t *testing.T) {
		for _, q := range []string{"", "   ", "what is the", "?!", "how do we do it"} {
			if got := questions.Key(q); got != "" {
				t.Errorf("Key(%q) = %q, want empty", q, got)
			}
		}
	})
}

// TestKey_AgreesWithFTS5 holds the key's stemming to the porter
// tokenizer full-text search indexes with: every word of a developer
// vocabulary is stemmed by SQLite (read back through fts5vocab) and by
// Key, and the two must agree.
func TestKey_AgreesWithFTS5(t *testing.T) {
	t.Parallel()
	words := strings.Fields(`running runs run ran runner migrations migration migrate migrated migrating
		deploy deploys deployed deploying deployment deployments staging stage stages configuration configure
		configured configs tests testing tested tester building builds built builder caching cached caches
		invalidation invalidate invalidated invalidates versions version versioning releases released releasing
		connection connections connected connecting databases database indexes indexed indexing queries queried
		querying retries retried retrying timeouts handlers handling handled services servicing authentication
		authorization authorized tokens rotation rotating rotated generalization generalize relational conditional
		rational valenci hesitanci digitizer conformabli radicalli differentli vileli analogousli vietnamization
		predication operator feudalism decisiveness hopefulness callousness formaliti sensitiviti sensibiliti
		triplicate formative formalize electriciti electrical hopeful goodness revival allowance inference airliner
		gyroscopic adjustable defensible irritant replacement adjustment dependent adoption homologou communism
		activate angulariti homologous effective bowdlerize probate rate cease controll roll caresses ponies ties
		caress cats feed agreed plastered bled motoring sing conflated troubled sized hopping tanned falling
		hissing fizzed failing filing happy sky use used uses user users python pythons ci api apis go golang
		webhooks webhook backoff policy policies schema schemas lease leases leased worker workers queue queues
		yes no is as us was has his this its`)
	db, err := driver.Open("file:"+filepath.Join(t.TempDir(), "porter.db"), fts5.Register)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE VIRTUAL TABLE f USING fts5 (w, tokenize = 'porter unicode61');
		CREATE VIRTUAL TABLE v USING fts5vocab (f, 'instance');`); err != nil {
		t.Fatal(err)
	}
	for i, w := range words {
		if _, err := db.Exec(`INSERT INTO f (rowid, w) VALUES (?, ?)`, i+1, w); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := db.Query(`SELECT doc, term FROM v`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	sqlite := map[int]string{}
	for rows.Next() {
		var (
			doc  int
			term string
		)
		if err := rows.Scan(&doc, &term); err != nil {
			t.Fatal(err)
		}
		sqlite[doc] = term
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for i, w := range words {
		got := questions.Key(w)
		if got == "" {
			continue // a stop word: never part of a key
		}
		if want := sqlite[i+1]; got != want {
			t.Errorf("%q: key stem %q, FTS5 porter %q", w, got, want)
		}
	}
}
