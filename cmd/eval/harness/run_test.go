package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/server/models/modeltest"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

var (
	buildOnce sync.Once
	hearthBin string
	buildErr  error
	buildDir  string
)

// TestMain removes the hearth binaries the daemon tests built, and stops
// the private PostgreSQL the PostgreSQL test started (storagetest.Main).
func TestMain(m *testing.M) {
	code := storagetest.Main(m)
	for _, dir := range []string{buildDir, pgBuildDir} {
		if dir != "" {
			os.RemoveAll(dir)
		}
	}
	os.Exit(code)
}

// hearth builds cmd/hearth once per test run and returns the binary: the
// harness measures the real daemon, started as a process.
func hearth(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "hearth-eval-test-"); buildErr != nil {
			return
		}
		hearthBin = filepath.Join(buildDir, "hearth")
		cmd := exec.Command("go", "build", "-o", hearthBin, "github.com/hearth-memory/hearth/cmd/hearth")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = &buildError{err: err, out: string(out)}
		}
	})
	if buildErr != nil {
		t.Fatalf("build hearth: %v", buildErr)
	}
	return hearthBin
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

func runSet(t *testing.T, cfg Config) *Report {
	t.Helper()
	cfg.Hearth = hearth(t)
	cfg.WorkDir = t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return rep
}

// knownSet is built so that full-text ranking is certain: the title weighs
// three times the content, and every word is in as few records as possible.
//
//	k1 "zebra"          → only z-title (title) and z-body (content): z-title first
//	k2 "zebra"          → answer z-body, second
//	p1 "quokka"         → answer o-none, which shares no word with it: missed
//	m1 "zebra"          → answers z-title and o-none: one of two, at 1
//	m2 "hornbill yak"   → answers h-proj (a linked project) and y-glob (global)
func knownSet() *Set {
	return &Set{
		Options: json.RawMessage(`{"project_links":[{"name":"zoo","namespaces":["github/acme/zoo"]}]}`),
		Records: []Record{
			{Key: "z-title", Namespace: "github/acme/zoo", Type: "note", Title: "zebra", Content: "striped animal"},
			{Key: "z-body", Namespace: "github/acme/zoo", Type: "note", Title: "stripes", Content: "the zebra lives in herds"},
			{Key: "o-none", Namespace: "github/acme/zoo", Type: "note", Title: "marsupial", Content: "small and round"},
			{Key: "h-proj", Namespace: "projects/zoo", Type: "decision", Title: "hornbill aviary", Content: "netting"},
			{Key: "y-glob", Namespace: "global", Type: "preference", Title: "yak", Content: "long hair"},
			// Out of the scope chain of github/acme/zoo: never a hit.
			{Key: "z-other", Namespace: "github/acme/farm", Type: "note", Title: "zebra zebra", Content: "zebra"},
		},
		Queries: []Query{
			{ID: "k1", Namespace: "github/acme/zoo", Kind: KindKeywords, Query: "zebra", Answers: []string{"z-title"}},
			{ID: "k2", Namespace: "github/acme/zoo", Kind: KindKeywords, Query: "zebra", Answers: []string{"z-body"}},
			{ID: "p1", Namespace: "github/acme/zoo", Kind: KindParaphrase, Query: "quokka", Answers: []string{"o-none"}},
			{ID: "m1", Namespace: "github/acme/zoo", Kind: KindMulti, Query: "zebra", Answers: []string{"z-title", "o-none"}},
			{ID: "m2", Namespace: "github/acme/zoo", Kind: KindMulti, Query: "hornbill yak", Answers: []string{"h-proj", "y-glob"}},
		},
	}
}

func TestRun_Known(t *testing.T) {
	t.Parallel()
	rep := runSet(t, Config{Set: knownSet(), Modes: []string{ModeFTS}})
	fts, ok := rep.Mode(ModeFTS)
	if !ok || !fts.Ran {
		t.Fatalf("fts mode = %+v, want it run", fts)
	}
	wantRanks := map[string][]int{"k1": {1}, "k2": {2}, "p1": {0}, "m1": {1, 0}}
	for _, q := range fts.Results {
		if q.Ranking != ModeFTS {
			t.Errorf("query %s ranking = %q, want fts", q.ID, q.Ranking)
		}
		if want, ok := wantRanks[q.ID]; ok && !equalInts(q.Ranks, want) {
			t.Errorf("query %s ranks = %v (top %v), want %v", q.ID, q.Ranks, q.Top, want)
		}
		if q.ID == "k1" && !equalStrings(q.Top, []string{"z-title", "z-body"}) {
			t.Errorf("query k1 top = %v, want [z-title z-body] (z-other is out of scope)", q.Top)
		}
	}
	// m2: both answers come back, one from each scope; their order is bm25's.
	m2 := fts.Results[4]
	if m2.ID != "m2" || m2.RecallAt(10) != 1 || m2.ReciprocalRank() != 1 {
		t.Errorf("m2 = %+v, want both answers at 1 and 2", m2)
	}
	if fts.Fallbacks != 0 || fts.Truncated != 0 {
		t.Errorf("fallbacks %d, truncated %d; want 0 and 0", fts.Fallbacks, fts.Truncated)
	}
	// recall@5 = (1 + 1 + 0 + 0.5 + 1)/5; MRR = (1 + 0.5 + 0 + 1 + 1)/5.
	checkRows(t, fts.Rows, []Row{
		{Kind: AllKinds, Queries: 5, Recall5: 0.7, Recall10: 0.7, MRR: 0.7, Wins: -1, Losses: -1},
		{Kind: KindKeywords, Queries: 2, Recall5: 1, Recall10: 1, MRR: 0.75, Wins: -1, Losses: -1},
		{Kind: KindParaphrase, Queries: 1, Recall5: 0, Recall10: 0, MRR: 0, Wins: -1, Losses: -1},
		{Kind: KindMulti, Queries: 2, Recall5: 0.75, Recall10: 0.75, MRR: 1, Wins: -1, Losses: -1},
	})
	if rep.Set.Records != 6 || rep.Set.Queries != 5 || rep.Limit != DefaultLimit || rep.Hearth == "" {
		t.Errorf("report header = %+v, want 6 records, 5 queries, limit %d and a hearth version", rep, DefaultLimit)
	}
}

// hookSet has two records that answer, enough others for word weights to
// mean something (the relevance bar needs 50, docs/abstention.md), an
// answerable prompt and two that nothing answers:
//
//	a1 "when are the zebras fed hay"     → zebra-food holds all its words
//	n1 "how do we feed the Kafka zebras" → names Kafka, which no record holds
//	n2 "summarize the penguin"           → shares one word with penguin-pool
func hookSet() *Set {
	s := &Set{
		Records: []Record{
			{Key: "zebra-food", Namespace: "global", Type: "procedure", Title: "Zebra feeding schedule", Content: "Zebras are fed hay at 7 and 17 daily."},
			{Key: "penguin-pool", Namespace: "global", Type: "procedure", Title: "Penguin pool cleaning", Content: "The penguin pool is drained and scrubbed on Mondays."},
		},
		Queries: []Query{
			{ID: "a1", Namespace: "global", Kind: KindKeywords, Query: "when are the zebras fed hay", Answers: []string{"zebra-food"}},
			{ID: "n1", Namespace: "global", Kind: KindNone, Query: "how do we feed the Kafka zebras"},
			{ID: "n2", Namespace: "global", Kind: KindNone, Query: "summarize the penguin"},
		},
	}
	for i := range 50 {
		s.Records = append(s.Records, Record{Key: fmt.Sprintf("lunch-%d", i), Namespace: "global", Type: "note",
			Title: fmt.Sprintf("Lunch rota week %d", i), Content: "Order from the usual place."})
	}
	return s
}

// TestRun_Hook checks the prompt hook table exactly: without the bar every
// prompt sharing a word with a record gets it; with the server's bar the
// unanswerable ones get nothing and the answerable one keeps its answer; a
// -bars row is the server's decision at that min_coverage (0 never
// abstains); the rerank mode asks the stand-in rerank server, whose score
// is a document's share of the query's words, and its bar is that score.
func TestRun_Hook(t *testing.T) {
	t.Parallel()
	ms := modeltest.New(t, modeltest.LlamaServer, modeltest.Model{Name: "stand-in"})
	rep := runSet(t, Config{Set: hookSet(), Modes: []string{ModeFTS, ModeRerank}, Bars: []float64{0, 1},
		RerankURL: ms.URL, RerankModel: "stand-in"})
	fts, _ := rep.Mode(ModeFTS)
	rr, _ := rep.Mode(ModeRerank)
	if !fts.Ran || !rr.Ran || len(rr.Results) != 0 || len(rr.Rows) != 0 {
		t.Fatalf("fts ran %v, rerank ran %v with %d results: want both run, rerank in the hook table only", fts.Ran, rr.Ran, len(rr.Results))
	}
	row := func(bar string, ev, ab float64) HookRow {
		return HookRow{Bar: bar, Answerable: 1, Recall3: ev, Evidence: ev, Unanswerable: 2, Abstained: ab}
	}
	check := func(mode string, got []HookRow, want []HookRow) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d hook rows %+v, want %d", mode, len(got), got, len(want))
		}
		for i, w := range want {
			g := got[i]
			g.MedianAnswerable, g.MedianUnanswerable = 0, 0
			if g != w {
				t.Errorf("%s row %d = %+v, want %+v", mode, i, got[i], w)
			}
		}
	}
	// Bar 1: only a hit holding every word of the prompt.
	check(ModeFTS, fts.Hook, []HookRow{row("off", 1, 0), row("server", 1, 1), row("0.00", 1, 0), row("1.00", 1, 1)})
	// The stand-in scores a1's answer 4/6 (when, the: not in it), n1's best
	// 1/7 (zebras), n2's 2/3 (the, penguin): n2 passes its bar.
	check(ModeRerank, rr.Hook, []HookRow{row("off", 1, 0), row("server", 1, 0.5), row("0.00", 1, 0), row("1.00", 0, 1)})
	if rr.HookReranked != 3 {
		t.Errorf("rerank ordered %d searches with the bar, want 3", rr.HookReranked)
	}
	for _, r := range rr.HookServer {
		if r.Ranking != ModeFTS+rerankSuffix {
			t.Errorf("rerank mode, %s: ranking %q, want fts+rerank", r.ID, r.Ranking)
		}
	}
	if n := ms.Count(modeltest.RerankPath); n != 3*3 {
		t.Errorf("the stand-in had %d rerank requests, want 9 (3 prompts: with the server's bar and each of 2 bars)", n)
	}
	for _, r := range fts.HookServer {
		if r.Ranking != ModeFTS {
			t.Errorf("fts mode, %s: ranking %q, want fts", r.ID, r.Ranking)
		}
	}
	var out bytes.Buffer
	if err := rep.Print(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"rerank: in the prompt hook table only", "rerank: the rerank server ordered 3 of 3 searches"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the printed report does not say %q:\n%s", want, out.String())
		}
	}
}

func TestRun_Slice(t *testing.T) {
	t.Parallel()
	full := loadCommitted(t)
	set, err := full.Slice(40, 15)
	if err != nil {
		t.Fatal(err)
	}
	rep := runSet(t, Config{Set: set})
	if rep.Set.Records != 40 || rep.Set.Queries != 15 || rep.Set.Digest != set.Digest() {
		t.Errorf("set info = %+v, want 40 records, 15 queries, digest %s", rep.Set, set.Digest())
	}
	if len(rep.Modes) != len(Modes) {
		t.Fatalf("%d modes reported, want %d", len(rep.Modes), len(Modes))
	}
	for i, m := range rep.Modes {
		if m.Mode != Modes[i].Name {
			t.Errorf("mode %d = %s, want %s (report order)", i, m.Mode, Modes[i].Name)
		}
	}
	fts, _ := rep.Mode(ModeFTS)
	if !fts.Ran || len(fts.Results) != 15 {
		t.Fatalf("fts ran %v with %d results, want 15", fts.Ran, len(fts.Results))
	}
	for i, q := range fts.Results {
		sq := set.Queries[i]
		if q.ID != sq.ID || len(q.Ranks) != len(sq.Answers) || q.Hits > DefaultLimit || len(q.Top) != q.Hits {
			t.Errorf("query %s: ranks %v for answers %v, %d hits, top %v", q.ID, q.Ranks, sq.Answers, q.Hits, q.Top)
			continue
		}
		for j, r := range q.Ranks {
			switch {
			case r < 0 || r > q.Hits:
				t.Errorf("query %s: rank %d outside the %d hits", q.ID, r, q.Hits)
			case r > 0 && q.Top[r-1] != sq.Answers[j]:
				t.Errorf("query %s: answer %s at rank %d, but the hit there is %s", q.ID, sq.Answers[j], r, q.Top[r-1])
			case r == 0 && slices.Contains(q.Top, sq.Answers[j]):
				t.Errorf("query %s: answer %s is among the hits %v but has no rank", q.ID, sq.Answers[j], q.Top)
			}
		}
	}
	all, ok := fts.Row(AllKinds)
	if !ok || all.Queries != 15 {
		t.Errorf("fts all row = %+v, want 15 queries", all)
	}
	sum := 0
	for _, k := range Kinds {
		if r, ok := fts.Row(k); ok {
			sum += r.Queries
			for _, v := range []float64{r.Recall5, r.Recall10, r.MRR} {
				if v < 0 || v > 1 || math.IsNaN(v) {
					t.Errorf("%s row %+v has a figure outside [0, 1]", k, r)
				}
			}
			if r.Recall5 > r.Recall10 {
				t.Errorf("%s row: recall@5 %v above recall@10 %v", k, r.Recall5, r.Recall10)
			}
		}
	}
	if sum != 15 {
		t.Errorf("kind rows add up to %d queries, want 15", sum)
	}
	// Without an encoder, the encoder modes say why they have no figures;
	// without a rerank server, the rerank mode.
	for _, name := range []string{ModeCosine, ModeRRF, ModeRerank} {
		m, _ := rep.Mode(name)
		if m.Ran || m.Reason == "" || len(m.Rows) != 0 {
			t.Errorf("mode %s = %+v, want not run, with a reason", name, m)
		}
	}
	if m, _ := rep.Mode(ModeRRF); !strings.Contains(m.Reason, "no encoder") {
		t.Errorf("rrf reason = %q, want it to say no encoder was given", m.Reason)
	}

	var out bytes.Buffer
	if err := rep.Print(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`40 records, 15 queries \(5 keywords, 5 paraphrase, 5 multi\)`, `(?m)^mode +kind +queries +recall@5 +recall@10 +MRR +wins +losses$`,
		`(?m)^fts +all +15 +[01]\.\d{3} +[01]\.\d{3} +[01]\.\d{3} +- +-$`, `(?m)^ +paraphrase +5 `, `(?m)^rrf +-`, `rrf: not run: no encoder`} {
		if !regexp.MustCompile(want).MatchString(out.String()) {
			t.Errorf("table does not match %q:\n%s", want, out.String())
		}
	}

	path := filepath.Join(t.TempDir(), "results.json")
	if err := rep.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	back, err := ReadReport(path)
	if err != nil {
		t.Fatal(err)
	}
	b1, _ := json.Marshal(rep)
	b2, _ := json.Marshal(back)
	if !bytes.Equal(b1, b2) {
		t.Errorf("results file does not read back the same report:\n%s\n%s", b1, b2)
	}
}

func TestRun_Err(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		change func(*Set)
		want   string
	}{
		{"ErrOutOfScope", func(s *Set) { s.Queries[0].Answers = []string{"z-other"} },
			"query k1: answer z-other is in github/acme/farm, outside the scope chain of github/acme/zoo"},
		{"ErrRefusedRecord", func(s *Set) { s.Records[2].Namespace = "nowhere/x" },
			"record o-none: memory_store: HTTP 400"},
		{"ErrBadOptions", func(s *Set) { s.Options = json.RawMessage(`{"hubs":"x"}`) },
			"hearth exited before listening"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := knownSet()
			tc.change(s)
			_, err := Run(context.Background(), Config{Hearth: hearth(t), Set: s, Modes: []string{ModeFTS}, WorkDir: t.TempDir()})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Run error = %v, want one containing %q", err, tc.want)
			}
		})
	}
	t.Run("ErrMode", func(t *testing.T) {
		_, err := Run(context.Background(), Config{Hearth: "unused", Set: knownSet(), Modes: []string{"bm25"}})
		if err == nil || !strings.Contains(err.Error(), `mode "bm25": want one of fts, cosine, rrf`) {
			t.Errorf("Run error = %v, want an unknown-mode error", err)
		}
	})
}

// TestWaitRanking runs the wait for an encoder ranking against a daemon that
// has no encoder, so it must give up and say why.
func TestWaitRanking(t *testing.T) {
	t.Parallel()
	set := knownSet()
	d, err := startDaemon(context.Background(), hearth(t), t.TempDir(), "wait", set.Options, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.stop)
	if _, err := d.client.load(context.Background(), set.Records); err != nil {
		t.Fatal(err)
	}
	rrf, _ := ModeNamed(ModeRRF)
	t.Run("OKNoEncoderCalls", func(t *testing.T) {
		cfg := Config{Set: set, EmbedURL: "http://127.0.0.1:9/v1", EmbedWait: 300 * time.Millisecond, EncoderRequests: func() int { return 0 }}
		reason, err := waitRanking(context.Background(), cfg, d.client, rrf)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(reason, "made no request to the encoder") {
			t.Errorf("reason = %q, want it to say the encoder was never called", reason)
		}
	})
	t.Run("OKTimeout", func(t *testing.T) {
		cfg := Config{Set: set, EmbedURL: "http://127.0.0.1:9/v1", EmbedWait: 300 * time.Millisecond}
		reason, err := waitRanking(context.Background(), cfg, d.client, rrf)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(reason, `still answered ranking "fts"`) {
			t.Errorf("reason = %q, want it to name the ranking the server kept answering", reason)
		}
	})
	t.Run("OKAlreadyThere", func(t *testing.T) {
		fts, _ := ModeNamed(ModeFTS)
		reason, err := waitRanking(context.Background(), Config{Set: set, EmbedWait: time.Minute}, d.client, fts)
		if err != nil || reason != "" {
			t.Errorf("waitRanking for fts = %q, %v; want no reason and no error", reason, err)
		}
	})
}

func TestReport_PrintCompare(t *testing.T) {
	t.Parallel()
	mk := func(digest string, r10 float64, ranks []int) *Report {
		res := QueryResult{ID: "q1", Kind: KindKeywords, Ranking: ModeFTS, Ranks: ranks}
		return &Report{
			Format: ReportFormat, Hearth: "0.1.0", Limit: 10,
			Set: SetInfo{Records: 1, Queries: 1, Kinds: map[string]int{KindKeywords: 1}, Digest: digest},
			Modes: []ModeReport{{Mode: ModeFTS, Ran: true, Results: []QueryResult{res},
				Rows: []Row{{Kind: AllKinds, Queries: 1, Recall5: r10, Recall10: r10, MRR: res.ReciprocalRank(), Wins: -1, Losses: -1}}}},
		}
	}
	t.Run("OK", func(t *testing.T) {
		var out bytes.Buffer
		if err := mk("d1", 1, []int{1}).PrintCompare(&out, mk("d1", 0, []int{0})); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"+1.000", "fts q1 better: answers at 1, were at -"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("comparison lacks %q:\n%s", want, out.String())
			}
		}
	})
	t.Run("OKOtherSet", func(t *testing.T) {
		var out bytes.Buffer
		if err := mk("d1", 0.5, []int{3}).PrintCompare(&out, mk("d2", 1, []int{1})); err != nil {
			t.Fatal(err)
		}
		if s := out.String(); !strings.Contains(s, "the sets differ") || !strings.Contains(s, "-0.500") || strings.Contains(s, "q1 worse") {
			t.Errorf("comparison across sets = \n%s\nwant row deltas only", s)
		}
	})
	t.Run("ErrFormat", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "old.json")
		os.WriteFile(path, []byte(`{"format":99}`), 0o644)
		if _, err := ReadReport(path); err == nil || !strings.Contains(err.Error(), "format 99") {
			t.Errorf("ReadReport error = %v, want a format error", err)
		}
	})
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
