package fts

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hearth-memory/hearth/storage/fulltext"
	"github.com/hearth-memory/hearth/storage/internal/pgdialect"
	"github.com/hearth-memory/hearth/storage/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// rebound runs the record domain's SQL (?NNN placeholders) on a
// PostgreSQL database as the engine's transactions do: rebound first.
type rebound struct{ db *sql.DB }

func (r rebound) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	q, err := pgdialect.Rebind(query)
	if err != nil {
		return nil, err
	}
	return r.db.QueryContext(ctx, q, args...)
}

// pgRow runs a query of one row as rebound does.
func pgRow(ctx context.Context, r rebound, query string, args ...any) *sql.Row {
	q, err := pgdialect.Rebind(query)
	if err != nil {
		panic(err)
	}
	return r.db.QueryRowContext(ctx, q, args...)
}

// pgRecord is a row of records for the tests: id, namespace, type,
// title, content and status.
type pgRecord struct{ id, ns, typ, title, content, status string }

// pgStore opens a migrated PostgreSQL database holding recs.
func pgStore(t testing.TB, recs ...pgRecord) rebound {
	t.Helper()
	db := pgtest.Open(t)
	for _, r := range recs {
		if r.typ == "" {
			r.typ = "note"
		}
		if r.status == "" {
			r.status = "active"
		}
		if _, err := db.Exec(`INSERT INTO records (id, namespace, type, title, content, status, revision, writer,
			confidence, effective_confidence, source, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, 1, 'test', 0.8, 0.8, 'store', 1000, 1000)`,
			r.id, r.ns, r.typ, r.title, r.content, r.status); err != nil {
			t.Fatal(err)
		}
	}
	return rebound{db}
}

// newPG returns a PGIndex whose write generation the test moves.
func newPG() (*PGIndex, *atomic.Uint64) {
	var gen atomic.Uint64
	return NewPG(gen.Load), &gen
}

func ids(rs []Ranked) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

func words(text string, literal bool) fulltext.Expansion {
	if literal {
		return fulltext.Literal(fulltext.QueryWords(text))
	}
	return fulltext.Expand(fulltext.QueryWords(text))
}

// A word search finds a word in another form (the stemmer's), ranks a
// title match above a content match, a record holding the word asked for
// above one holding only its synonym, and keeps to the filter: live
// records, the namespaces named (and with AllRepositories every
// repository's), the types named, ids not excluded, at most limit.
func TestPGWords_MatchAndFilter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := pgStore(t,
		pgRecord{id: "01A", ns: "proj/a", title: "Gateway notes", content: "We deployed the gateway on Tuesday."},
		pgRecord{id: "01B", ns: "proj/a", title: "Deploying", content: "Notes on the gateway."},
		pgRecord{id: "01C", ns: "proj/a", title: "Bills", content: "The bill goes out monthly."},
		pgRecord{id: "01D", ns: "proj/a", title: "Invoices", content: "The invoice goes out monthly."},
		pgRecord{id: "01E", ns: "proj/b", title: "Deploy", content: "deploy deploy", typ: "decision"},
		pgRecord{id: "01F", ns: "proj/a", title: "Deploy", content: "old", status: "superseded"},
		pgRecord{id: "01G", ns: "github/acme/api", title: "Deploy", content: "deploy from CI"},
		pgRecord{id: "01H", ns: "proj/a", title: "Deploy checklist", content: "the deploy checklist", status: "candidate"},
	)
	x, _ := newPG()
	search := func(text string, f Filter, limit int) []string {
		t.Helper()
		rs, err := x.Words(ctx, q, words(text, false), f, limit)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		return ids(rs)
	}
	// "deploys" is "deployed", "deploying" and "deploy" stemmed; the title
	// match 01B ranks above the content match 01A; 01F is superseded.
	if got := search("deploys", Filter{Namespaces: []string{"proj/a"}}, 10); !slices.Equal(got, []string{"01H", "01B", "01A"}) {
		t.Errorf("deploys in proj/a: %v, want 01H 01B 01A", got)
	}
	// The word asked for (invoice) ranks above its synonym (bill).
	if got := search("invoice", Filter{}, 10); !slices.Equal(got, []string{"01D", "01C"}) {
		t.Errorf("invoice: %v, want 01D then its synonym's 01C", got)
	}
	if got := search("invoice", Filter{}, 1); !slices.Equal(got, []string{"01D"}) {
		t.Errorf("invoice, limit 1: %v, want 01D", got)
	}
	if got := search("deploy", Filter{Namespaces: []string{"proj/b"}}, 10); !slices.Equal(got, []string{"01E"}) {
		t.Errorf("deploy in proj/b: %v, want 01E", got)
	}
	if got := search("deploy", Filter{Namespaces: []string{"proj/b"}, AllRepositories: true}, 10); !slices.Equal(got, []string{"01E", "01G"}) {
		t.Errorf("deploy in proj/b and every repository: %v, want 01E 01G", got)
	}
	if got := search("deploy", Filter{Types: []string{"decision"}}, 10); !slices.Equal(got, []string{"01E"}) {
		t.Errorf("deploy, decisions: %v, want 01E", got)
	}
	if got := search("deploy", Filter{Exclude: []string{"01E", "01G"}}, 10); slices.Contains(got, "01E") || slices.Contains(got, "01G") || len(got) != 3 {
		t.Errorf("deploy excluding 01E and 01G: %v", got)
	}
	if got := search("nothing matches this", Filter{}, 10); got != nil {
		t.Errorf("a query of no stored word: %v", got)
	}
}

// The rank is BM25 as hearth_rank computes it: each term's IDF from its
// document frequency among every record (superseded ones too, as FTS5
// counts its rows), its frequency with the title weighing 3 and the
// content 1, the record's length in tokens against the average.
func TestPGWords_RankIsBM25(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	docs := []pgRecord{
		{id: "01A", ns: "n", title: "alpha beta", content: "gamma alpha delta alpha"},
		{id: "01B", ns: "n", title: "gamma", content: "alpha gamma gamma epsilon zeta eta theta"},
		{id: "01C", ns: "n", title: "delta", content: "beta beta"},
		{id: "01D", ns: "n", title: "iota", content: "kappa", status: "superseded"},
	}
	// Records of other words, so that every IDF is above its floor.
	for _, id := range []string{"01E", "01F", "01G", "01H", "01I", "01J"} {
		docs = append(docs, pgRecord{id: id, ns: "n", title: "lambda", content: "mu nu xi omicron"})
	}
	q := pgStore(t, docs...)
	x, _ := newPG()
	query := []string{"alpha", "gamma", "beta"}
	rs, err := x.Words(ctx, q, fulltext.Literal(query), Filter{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	// The reference, counted here from the texts (every word is its own
	// stem).
	n, total := float64(len(docs)), 0.0
	df := map[string]float64{}
	for _, d := range docs {
		all := strings.Fields(d.title + " " + d.content)
		total += float64(len(all))
		for _, w := range query {
			if slices.Contains(all, w) {
				df[w]++
			}
		}
	}
	avgdl := total / n
	want := map[string]float64{}
	for _, d := range docs[:3] {
		dl := float64(len(strings.Fields(d.title + " " + d.content)))
		for _, w := range query {
			f := 3*count(d.title, w) + count(d.content, w)
			if f == 0 {
				continue
			}
			idf := math.Log((n - df[w] + 0.5) / (df[w] + 0.5))
			if idf <= 0 {
				idf = 1e-6
			}
			want[d.id] -= idf * f * (bm25K1 + 1) / (f + bm25K1*(1-bm25B+bm25B*dl/avgdl))
		}
	}
	if len(rs) != len(want) {
		t.Fatalf("ranked %v, want %v", rs, want)
	}
	for i, r := range rs {
		if math.Abs(r.Rank-want[r.ID]) > 1e-9 {
			t.Errorf("%s ranks %v, want %v", r.ID, r.Rank, want[r.ID])
		}
		if i > 0 && rs[i-1].Rank > r.Rank {
			t.Errorf("%s (%v) after %s (%v): not best first", r.ID, r.Rank, rs[i-1].ID, rs[i-1].Rank)
		}
	}
}

// count is how many times text holds the word w.
func count(text, w string) float64 {
	n := 0.0
	for _, f := range strings.Fields(text) {
		if f == w {
			n++
		}
	}
	return n
}

// A synonym of several words is a phrase: a record holding its words
// apart does not match it.
func TestPGWords_PhraseSynonym(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x := fulltext.Expand([]string{"pr"})
	if !slices.Contains(x.Terms(), "pull request") {
		t.Skipf("the thesaurus no longer gives pull request for pr: %v", x.Terms())
	}
	q := pgStore(t,
		pgRecord{id: "01A", ns: "n", title: "Review", content: "Open a pull request for each change."},
		pgRecord{id: "01B", ns: "n", title: "Git", content: "A request to pull the branch."},
	)
	p, _ := newPG()
	rs, err := p.Words(ctx, q, x, Filter{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(rs); !slices.Equal(got, []string{"01A"}) {
		t.Errorf("pr: %v, want 01A (the phrase) alone", got)
	}
}

// A CJK word is found inside a sentence written without spaces, and the
// record sharing more of the question's bigrams ranks first; Latin text
// has no CJK entry.
func TestPGCJK(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := pgStore(t,
		pgRecord{id: "01A", ns: "n", title: "会议记录", content: "我们在東京开会，讨论了数据库迁移。"},
		pgRecord{id: "01B", ns: "n", title: "数据", content: "数据很多"},
		pgRecord{id: "01C", ns: "n", title: "Tokyo", content: "database migration"},
	)
	x, _ := newPG()
	for _, tt := range []struct {
		text string
		want []string
	}{
		{"東京", []string{"01A"}},
		{"数据库迁移怎么做", []string{"01A", "01B"}},
		{"迁", []string{"01A"}},
		{"database", nil},
	} {
		rs, err := x.CJK(ctx, q, tt.text, Filter{}, 10)
		if err != nil {
			t.Fatalf("%s: %v", tt.text, err)
		}
		if got := ids(rs); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.text, got, tt.want)
		}
	}
}

// The statistics and document frequencies are counted again once the
// write generation has moved and pgStatsAge has passed: a word stored
// since is ranked as the store now holds it.
func TestPGIndex_CountsAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := pgStore(t, pgRecord{id: "01A", ns: "n", title: "alpha", content: "beta"})
	x, gen := newPG()
	first, err := x.Words(ctx, q, fulltext.Literal([]string{"alpha"}), Filter{}, 10)
	if err != nil || len(first) != 1 {
		t.Fatalf("first search: %v, %v", first, err)
	}
	for _, id := range []string{"01B", "01C", "01D"} {
		if _, err := q.db.Exec(`INSERT INTO records (id, namespace, type, title, content, status, revision, writer,
			confidence, effective_confidence, source, created_at, updated_at)
			VALUES ($1, 'n', 'note', 'gamma', 'delta', 'active', 1, 'test', 0.8, 0.8, 'store', 1000, 1000)`, id); err != nil {
			t.Fatal(err)
		}
	}
	// The same generation: the counts stand.
	same, err := x.Words(ctx, q, fulltext.Literal([]string{"alpha"}), Filter{}, 10)
	if err != nil || len(same) != 1 || same[0].Rank != first[0].Rank {
		t.Fatalf("same generation: %v, %v; want the rank %v", same, err, first[0].Rank)
	}
	gen.Add(1)
	x.mu.Lock()
	for c, st := range x.stats {
		st.at = st.at.Add(-2 * pgStatsAge)
		x.stats[c] = st
	}
	x.dfAt = x.dfAt.Add(-2 * pgStatsAge)
	x.mu.Unlock()
	after, err := x.Words(ctx, q, fulltext.Literal([]string{"alpha"}), Filter{}, 10)
	if err != nil || len(after) != 1 {
		t.Fatalf("after the writes: %v, %v", after, err)
	}
	// alpha is rarer among four records than among one: it ranks better.
	if !(after[0].Rank < first[0].Rank) {
		t.Errorf("after three more records alpha's record ranks %v, before %v: not counted again", after[0].Rank, first[0].Rank)
	}
}

// A word inside a host name, file path, e-mail address, URL or version is
// found by itself, as FTS5's unicode61 tokenizer splits them on SQLite,
// though PostgreSQL's parser reads each as one token (docs/postgres.md).
func TestPGWords_WordsInsideCompounds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := pgStore(t,
		pgRecord{id: "01A", ns: "n", title: "Endpoints", content: "Call api.stripe.com; the list is in /etc/hosts and config.yaml."},
		pgRecord{id: "01B", ns: "n", title: "Contacts", content: "Mail ops@acme.io or open https://github.com/acme/web, release v1.2.3, snake_case names."},
	)
	x, _ := newPG()
	for _, tt := range []struct{ text, want string }{
		{"stripe", "01A"}, {"hosts", "01A"}, {"yaml", "01A"}, {"config", "01A"},
		{"ops", "01B"}, {"acme", "01B"}, {"web", "01B"}, {"github", "01B"}, {"snake", "01B"},
	} {
		rs, err := x.Words(ctx, q, words(tt.text, true), Filter{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(rs); !slices.Equal(got, []string{tt.want}) {
			t.Errorf("%s: %v, want %s", tt.text, got, tt.want)
		}
	}
}

// The gate (gateOf) changes nothing of what a search returns: over a store
// of skewed words, each query's ranking, gated or not, is the one scoring
// every match gives, record for record and score for score. The fixture's
// one word most records hold and the rare ones make the gate decide alone
// for some of the queries, which the test requires.
func TestPGWords_GateSameAsScoringAll(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	vocab := strings.Fields(`common often usual alpha beta gamma delta epsilon zeta eta theta iota kappa
		lambda mu nu xi omicron pi rho sigma tau upsilon phi chi psi omega`)
	r := rand.New(rand.NewPCG(46, 1))
	draw := func(k int) string {
		w := make([]string, k)
		for i := range w {
			// The first words most often: common is in nearly every record.
			w[i] = vocab[min(int(float64(len(vocab))*math.Pow(r.Float64(), 3)), len(vocab)-1)]
		}
		return strings.Join(w, " ")
	}
	var docs []pgRecord
	for i := range 400 {
		docs = append(docs, pgRecord{id: fmt.Sprintf("%03d", i), ns: []string{"a", "b"}[i%2], title: draw(1 + r.IntN(3)), content: draw(3 + r.IntN(30))})
	}
	q := pgStore(t, docs...)
	x, _ := newPG()
	decided := 0
	for i := range 60 {
		text := draw(1 + r.IntN(4))
		limit := 1 + r.IntN(10)
		f := Filter{}
		if i%3 == 0 {
			f.Namespaces = []string{"a"}
		}
		got, err := x.Words(ctx, q, words(text, true), f, limit)
		if err != nil {
			t.Fatal(err)
		}
		terms, err := x.wordTerms(ctx, q, words(text, true))
		if err != nil {
			t.Fatal(err)
		}
		st, err := x.weigh(ctx, q, pgWords, terms)
		if err != nil {
			t.Fatal(err)
		}
		all, err := x.score(ctx, q, pgWords, orQuery(terms), terms, f, st, limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(all) {
			t.Fatalf("%q, limit %d: %d records, scoring all gives %d", text, limit, len(got), len(all))
		}
		for k := range got {
			if got[k].ID != all[k].ID || got[k].Rank != all[k].Rank {
				t.Errorf("%q, limit %d, #%d: %s %v; scoring all gives %s %v", text, limit, k, got[k].ID, got[k].Rank, all[k].ID, all[k].Rank)
			}
		}
		if gate, rest := gateOf(terms, st.rows); gate != "" {
			top, err := x.score(ctx, q, pgWords, gate, terms, f, st, limit)
			if err != nil {
				t.Fatal(err)
			}
			if len(top) == limit && -top[limit-1].Rank > rest {
				decided++
			}
		}
	}
	if decided < 5 {
		t.Errorf("the gate decided %d of 60 searches alone: the fixture no longer tests it", decided)
	}
}
