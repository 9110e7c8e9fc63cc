package workers

import (
	"slices"
	"strings"
	"testing"
)

func TestFacts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		text    string
		phrases []string
		tokens  []string
	}{
		{"Plain", "Use the cache for every read.", nil, nil},
		{"Numbers", "Listen on port 8765, retry 3 times.", nil, []string{"8765", "3"}},
		{"Versions", "Pin Go v1.26.8 (not 1.25).", nil, []string{"v1.26.8", "1.25"}},
		{"Paths", "Edit src/x.go, ./run.sh and /etc/hosts; see ~/.ssh or .env.", nil, []string{"src/x.go", "./run.sh", "/etc/hosts", "~/.ssh", ".env"}},
		{"Identifiers", "Set ollama_timeout_s and maxTokens; SQLite in WAL; use --listen and llama-swap.", nil,
			[]string{"ollama_timeout_s", "maxTokens", "SQLite", "WAL", "--listen", "llama-swap"}},
		{"Quoted", "It says \"database is locked\" or “busy  now” or `make test`; 'single quoted' but don't split it's.",
			[]string{"database is locked", "busy now", "make test", "single quoted"}, nil},
		{"Repeats", "8765 and 8765 and \"x\" and \"x\"", []string{"x"}, []string{"8765"}},
		{"Sentence capitals", "The API is fine. Then it is not.", nil, []string{"API"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			phrases, tokens := facts(tc.text)
			if !slices.Equal(phrases, tc.phrases) || !slices.Equal(tokens, tc.tokens) {
				t.Errorf("facts(%q):\ngot  %q %q\nwant %q %q", tc.text, phrases, tokens, tc.phrases, tc.tokens)
			}
		})
	}
}

func TestMissing(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, cand, named string
		want              []string
	}{
		{"OKNoFacts", "Run the readers freely.", "anything at all", nil},
		{"OKAllHeld", "Port 8765 in src/x.go uses WAL and \"fast path\".", "WAL: the fast path at (src/x.go), port 8765.", nil},
		{"ErrNumber", "Port 8765.", "Port 876.", []string{"8765"}},
		{"ErrNumberInsideOther", "Version 1.2 only.", "Version 1.25 only.", []string{"1.2"}},
		{"ErrVersion", "Go v1.26.8.", "Go 1.26.8.", []string{"v1.26.8"}},
		{"ErrPath", "See /data/options.json.", "See options.json.", []string{"/data/options.json"}},
		{"ErrIdentifier", "Set ollama_timeout_s.", "Set the timeout.", []string{"ollama_timeout_s"}},
		{"ErrCase", "Use SQLite.", "Use sqlite.", []string{"SQLite"}},
		{"ErrQuoted", `It says "database is locked".`, "It says database is busy.", []string{`"database is locked"`}},
		{"ErrQuotedInsideWord", `Say "lock".`, "Say unlocked.", []string{`"lock"`}},
		{"OKQuotedAcrossLines", `Say "database is locked".`, "say\ndatabase   is locked now", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := missing(tc.cand, tc.named); !slices.Equal(got, tc.want) {
				t.Errorf("missing(%q, %q): got %q, want %q", tc.cand, tc.named, got, tc.want)
			}
		})
	}
}

// FuzzMissing holds the guard's properties on any text: facts never
// panics, a text holds all its own facts, and a text that lost one of its
// fact tokens is refused.
func FuzzMissing(f *testing.F) {
	for _, s := range []string{
		"Port 8765 in src/x.go uses WAL and \"fast path\".",
		"'quoted' and it's and don't 'a' 'b'",
		"“curly” `tick` \"dq\" ＜＜＜END DATA＞＞＞",
		"--flag -v ~/.ssh .env #14 $HOME @user a=b 50%",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		phrases, tokens := facts(s)
		if m := missing(s, s); len(m) != 0 {
			t.Fatalf("missing(s, s) = %q for %q", m, s)
		}
		for _, p := range phrases {
			if p == "" || strings.ContainsAny(p, "\n\t") {
				t.Fatalf("phrase %q of %q", p, s)
			}
		}
		for _, tok := range tokens {
			other := strings.ReplaceAll(s, tok, "")
			if strings.Contains(other, tok) {
				continue
			}
			if m := missing(s, other); len(m) == 0 {
				t.Fatalf("missing(%q, %q) is empty, but %q is gone", s, other, tok)
			}
		}
	})
}
