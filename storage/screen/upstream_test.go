package screen

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestUpstream_Table(t *testing.T) {
	prepare() // the table is built on first use
	ids := map[string]bool{}
	for _, r := range upstreamRules {
		ids[r.id] = true
	}
	t.Run("ExcludedExist", func(t *testing.T) {
		for id := range upstreamExcluded {
			if !ids[id] {
				t.Errorf("excluded rule %s: got no such upstream rule, want one (renamed upstream?)", id)
			}
		}
	})
	t.Run("NamesArePatterns", func(t *testing.T) {
		names := Patterns()
		for _, r := range upstream.rules {
			if !slices.Contains(names, r.name) {
				t.Errorf("rule %s: got name %q, want one of Patterns()", r.id, r.name)
			}
		}
	})
	t.Run("Run", func(t *testing.T) {
		// Every upstream rule with a regex and no path runs unless excluded.
		want := 0
		for _, r := range upstreamRules {
			if _, skip := upstreamExcluded[r.id]; !skip && r.path == "" && r.regex != "" {
				want++
			}
		}
		if len(upstream.rules) != want || want < 180 {
			t.Errorf("got %d rules running, want %d (and at least 180)", len(upstream.rules), want)
		}
	})
	t.Run("Compile", func(t *testing.T) {
		for _, r := range upstream.rules {
			r.compile()
			// A stripped core changes the match span, which only an
			// allowlist on the match or line would see.
			if r.planned && r.plan.core != r.regex {
				for _, a := range r.allowlists {
					if a.target != "" {
						t.Errorf("rule %s: got a %s allowlist on a stripped core, want none", r.id, a.target)
					}
				}
			}
		}
	})
	t.Run("Planned", func(t *testing.T) {
		// Most rules run anchored; the rest scan the whole value when one
		// of their keywords occurs. Pin the count so a new upstream version
		// that loses anchors is noticed.
		n := 0
		for _, r := range upstream.rules {
			r.compile()
			if r.planned {
				n++
			}
		}
		if n < len(upstream.rules)-10 {
			t.Errorf("got %d of %d rules anchored, want all but at most 10", n, len(upstream.rules))
		}
	})
}

func TestUpstreamName(t *testing.T) {
	tests := map[string]string{
		"github-pat":                         patGitHub,
		"github-fine-grained-pat":            patGitHub,
		"gitlab-runner-authentication-token": patGitLab,
		"slack-webhook-url":                  patSlackHook,
		"slack-bot-token":                    patSlack,
		"anthropic-admin-api-key":            patAnthropic,
		"openai-api-key":                     patOpenAI,
		"aws-access-token":                   patAWSAccess,
		"gcp-api-key":                        patGoogle,
		"npm-access-token":                   patNPM,
		"stripe-access-token":                patStripe,
		"private-key":                        patPrivateKey,
		"jwt-base64":                         patJWT,
		"huggingface-access-token":           patProvider,
		"vault-service-token":                patProvider,
	}
	for id, want := range tests {
		if got := upstreamName(id); got != want {
			t.Errorf("upstreamName(%q): got %s, want %s", id, got, want)
		}
	}
}

// TestUpstream_AnchoredFindsWhatWholeFinds checks, on both corpora, that a
// rule run on its anchors finds a secret whenever the same rule run on the
// whole value (as gitleaks runs it) does.
func TestUpstream_AnchoredFindsWhatWholeFinds(t *testing.T) {
	var texts []string
	for _, e := range readCorpus(t, "secrets.txt", true) {
		texts = append(texts, e.text)
	}
	for _, e := range readCorpus(t, "benign.txt", false) {
		texts = append(texts, e.text)
	}
	whole, anchored := 0, 0
	for _, s := range texts {
		for _, r := range firedRules(newText(s)) {
			w, a := r.find(s, false), r.find(s, true)
			if w.start >= 0 {
				whole++
			}
			if a.start >= 0 {
				anchored++
			}
			if w.start >= 0 && a.start < 0 {
				t.Errorf("rule %s on %q: got no hit anchored, want the whole-value hit", r.id, s)
			}
		}
	}
	if whole == 0 {
		t.Fatal("got no upstream hit in the corpora, want some")
	}
	t.Logf("upstream hits: %d on the whole value, %d anchored", whole, anchored)
}

// firedRules returns the upstream rules whose keywords occur in t.
func firedRules(t *text) []*liveRule {
	prepare()
	var out []*liveRule
	for i, r := range upstream.rules {
		if t.fired[i/64]&(1<<(i%64)) != 0 {
			out = append(out, r)
		}
	}
	return out
}

func TestUpstream_Judge(t *testing.T) {
	tests := []struct {
		name, text, rule string // rule "" means no upstream hit
	}{
		{"OK", "SENTRY_AUTH_TOKEN=sntryu_" + strings.Repeat("0a1b2c3d4e5f6789", 4), "sentry-user-token"},
		{"LowEntropy", "SENTRY_AUTH_TOKEN=sntryu_" + strings.Repeat("ab", 32), ""},
		{"RuleAllowlist", "vault login s.abcdefghijklmnopqrstuvwx", ""},                                // s\.[A-Za-z]{24}
		{"GlobalStopword", "CLOJARS_abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwx", ""}, // abcdefghijklmnopqrstuvwxyz
		{"Placeholder", "TWILIO_API_KEY=SKxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", ""},
		{"NoKeyword", "the value SK0a1b2c3d4e5f67890a1b2c3d4e5f6789 alone", "twilio-api-key"}, // keyword sk matches SK
		{"WordBoundary", "xhvs." + strings.Repeat("aB3", 32), ""},
		{"KelvinSign", "vault login s.\u212Aq8vN2xLm4pR7tZ9wB3yC6dQ", "vault-service-token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := findUpstream(newText(tt.text))
			if m.rule != tt.rule {
				t.Fatalf("got rule %q, want %q", m.rule, tt.rule)
			}
		})
	}
}

func TestKeywordSet_Scan(t *testing.T) {
	prepare() // hints.words is built on first use
	naive := func(s string, kws []string) map[[2]int]bool {
		got := map[[2]int]bool{}
		low := strings.ToLower(s)
		for id, k := range kws {
			for i := 0; i+len(k) <= len(low); i++ {
				if k != "" && low[i:i+len(k)] == k {
					got[[2]int{i + len(k), id}] = true
				}
			}
		}
		return got
	}
	sets := [][]string{
		{"he", "she", "his", "hers"},
		{"a", "ab", "abc", "bc", "c", ""},
		{"sk", "sk_live", "k_l", "live_"},
		hints.words,
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := "abcehiklrsvSHEKL_ -."
	for n, kws := range sets {
		k := newKeywordSet(kws)
		for range 300 {
			b := make([]byte, rng.IntN(60))
			for i := range b {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			}
			s := string(b)
			got := map[[2]int]bool{}
			ascii := k.scan(s, func(end, id int) { got[[2]int{end, id}] = true })
			want := naive(s, kws)
			if !ascii || len(got) != len(want) {
				t.Fatalf("set %d, %q: got %d hits (ascii %v), want %d", n, s, len(got), ascii, len(want))
			}
			for h := range want {
				if !got[h] {
					t.Fatalf("set %d, %q: got no hit %v, want it", n, s, h)
				}
			}
		}
	}
	if newKeywordSet([]string{"a"}).scan("é", func(int, int) {}) {
		t.Error("scan(\"é\"): got ascii, want not")
	}
}

func TestPlanRule(t *testing.T) {
	tests := []struct {
		name, expr string
		ok         bool
		lits       []string
		minOff     int
		maxOff     int
		wordStart  bool
		stripped   bool
	}{
		{"Prefix", `ghp_[0-9a-zA-Z]{36}`, true, []string{"ghp_"}, 0, 0, false, false},
		{"WordStart", `\b(dapi[a-f0-9]{32})(?:[\x60'"\s;]|$)`, true, []string{"dapi"}, 0, 0, true, false},
		{"Fold", `(?i)\b(glsa_[A-Za-z0-9]{32})`, true, []string{"glsa_"}, 0, 0, true, false},
		{"Keyword", `(?i)[\w.-]{0,50}?(?:adafruit)(?:[ \t\w.-]{0,20})[\s'"]{0,3}(?:=|:)([a-z0-9]{32})`, true, []string{"adafruit"}, 0, 0, false, true},
		{"Alternate", `\b((?:hvs\.[\w-]{90,120}|s\.[a-z0-9]{24}))`, true, []string{"hvs.", "s."}, 0, 0, true, false},
		{"Factored", `\b((?:sk|rk)_(?:test|live)_[a-zA-Z0-9]{10,99})`, true, []string{"sk_test_", "sk_live_", "rk_test_", "rk_live_"}, 0, 0, true, false},
		{"Offset", `\b[A-Z]{3}[0-9]Q~[a-z]{31,34}`, true, []string{"Q~"}, 4, 4, true, false},
		{"OneByte", `\b(\d{15,16}(\||%)[0-9a-z\-_]{27,40})`, true, []string{"%", "|"}, 15, 16, true, false},
		{"Branches", `(?i)[\w.-]{0,50}?(?:jira)[ \t]{0,3}=([a-z0-9]{24})|\b(ATATT3[A-Za-z0-9]{186})`, true, []string{"jira", "atatt3"}, 0, 0, false, true},
		{"Unbounded", `[a-z]+@corp\.lan`, false, nil, 0, 0, false, false},
		{"TooWide", `\b[a-z]{0,20}token`, false, nil, 0, 0, false, false},
		{"NoLiteral", `\b[a-fA-F0-9]{40}\b`, false, nil, 0, 0, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ok := planRule(tt.expr)
			if ok != tt.ok {
				t.Fatalf("got ok %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			var lits []string
			for _, l := range p.anc.lits {
				lits = append(lits, l.s)
			}
			if !slices.Equal(lits, tt.lits) || p.anc.minOff != tt.minOff || p.anc.maxOff != tt.maxOff || p.wordStart != tt.wordStart || (p.core != tt.expr) != tt.stripped {
				t.Fatalf("got %q %d..%d wordStart %v core %q, want %q %d..%d wordStart %v stripped %v",
					lits, p.anc.minOff, p.anc.maxOff, p.wordStart, p.core, tt.lits, tt.minOff, tt.maxOff, tt.wordStart, tt.stripped)
			}
			// The core, anchored, compiles.
			regexp.MustCompile(`\A(?s:.)(?:` + p.core + `)`)
		})
	}
}

func TestPlanRule_Follow(t *testing.T) {
	p, ok := planRule(`\b((?:hvs\.[\w-]{90,120}|s\.(?i:[a-z0-9]{24})))`)
	if !ok {
		t.Fatal("got no plan, want one")
	}
	for _, l := range p.anc.lits {
		if l.run != maxRun {
			t.Errorf("%s: got run %d, want %d", l.s, l.run, maxRun)
		}
		if !l.fits("s.aB3dE5fG7hJ9kL1mN3pQ5rS", 2) || l.fits("s.Now()", 2) {
			t.Errorf("%s: fits wrong on s.aB3… or s.Now()", l.s)
		}
		for _, c := range []byte("aZ9") {
			if !l.follow.has(c) {
				t.Errorf("%s: follow lacks %q, want it", l.s, c)
			}
		}
		for _, c := range []byte(" .(\n") {
			if l.follow.has(c) {
				t.Errorf("%s: follow has %q, want not", l.s, c)
			}
		}
	}
}

func TestShannon(t *testing.T) {
	for s, want := range map[string]float64{"": 0, "aaaa": 0, "ab": 1, "abcd": 2} {
		if got := shannon(s); got != want {
			t.Errorf("shannon(%q): got %v, want %v", s, got, want)
		}
	}
}

func TestIndexFold(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	naive := func(s, sub string) int { return strings.Index(strings.ToLower(s), sub) }
	for range 2000 {
		b := make([]byte, rng.IntN(30))
		for i := range b {
			b[i] = "aAbB-_"[rng.IntN(6)]
		}
		sub := []string{"ab", "a", "b-", "-a", "_", "aab", ""}[rng.IntN(7)]
		if got, want := indexFold(string(b), sub), naive(string(b), sub); got != want {
			t.Fatalf("indexFold(%q, %q): got %d, want %d", b, sub, got, want)
		}
	}
}

// TestScanHints_Lower checks that rules fire as on a Unicode lower-cased
// value, which is how gitleaks looks for keywords.
func TestScanHints_Lower(t *testing.T) {
	for _, s := range []string{
		"the \u212aucoin key", // Kelvin sign: kucoin
		"\u0130ntercom token", // İ: i̇ntercom has no ASCII intercom
		"ADAFRUIT, Ölçek, 秘密", // plain upper case and other scripts
	} {
		got := newText(s).fired
		var want [4]uint64
		hints.keys.scan(strings.ToLower(s), func(_, id int) {
			for _, r := range hints.rules[id] {
				want[r/64] |= 1 << (r % 64)
			}
		})
		if got != want {
			t.Errorf("%q: got fired %x, want %x", s, got, want)
		}
	}
}

// TestLazy_Expressions compiles every expression the screen compiles on
// first use, so a broken one fails here rather than on the first value
// that calls for it, and holds literalPrefix to what regexp finds: newText
// looks for those literals before any expression is compiled.
func TestLazy_Expressions(t *testing.T) {
	t.Parallel()
	if len(lazyExprs) < len(literalExprs)+8 {
		t.Fatalf("got %d lazy expressions, want the %d of reFind and the value rules'", len(lazyExprs), len(literalExprs))
	}
	for _, e := range lazyExprs {
		if _, err := regexp.Compile(e); err != nil {
			t.Errorf("%s: %v", e, err)
		}
	}
	for i, e := range literalExprs {
		want, _ := regexp.MustCompile(e).LiteralPrefix()
		if got := literals[i]; got != want {
			t.Errorf("%s: got literal prefix %q, want %q", e, got, want)
		}
	}
	for _, tc := range []struct{ expr, want string }{
		{`https://hooks\.slack\.com/(?:a|b)`, "https://hooks.slack.com/"},
		{`ab?c`, "a"},
		{`ab*`, "a"},
		{`ab{2}`, "a"},
		{`sk\bx`, "sk"},
		{`abc`, "abc"},
		{`a\`, "a"},
		{`[a]bc`, ""},
	} {
		if got := literalPrefix(tc.expr); got != tc.want {
			t.Errorf("literalPrefix(%q): got %q, want %q", tc.expr, got, tc.want)
		}
	}
}
