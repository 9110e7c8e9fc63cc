package fts

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hearth-memory/hearth/storage/fulltext"
)

// readLexemes reads a tsquery of quoted lexemes ORed, each in
// parentheses, as orQuery writes it: ('a') | ('b'). Inside quotes a
// backslash takes the next character as it is and two quotes in a row
// are one, as PostgreSQL's tsquery input reads them. ok is false for
// anything else.
func readLexemes(q string) (lex []string, ok bool) {
	for i := 0; i < len(q); {
		if i > 0 {
			if !strings.HasPrefix(q[i:], " | ") {
				return nil, false
			}
			i += 3
		}
		if !strings.HasPrefix(q[i:], "('") {
			return nil, false
		}
		i += 2
		var b strings.Builder
		for {
			if i >= len(q) {
				return nil, false
			}
			c := q[i]
			switch {
			case c == '\\' && i+1 < len(q):
				b.WriteByte(q[i+1])
				i += 2
				continue
			case c == '\\':
				return nil, false
			case c == '\'' && i+1 < len(q) && q[i+1] == '\'':
				b.WriteByte('\'')
				i += 2
				continue
			case c == '\'':
				i++
			default:
				b.WriteByte(c)
				i++
				continue
			}
			break
		}
		if !strings.HasPrefix(q[i:], ")") || b.Len() == 0 {
			return nil, false
		}
		i++
		lex = append(lex, b.String())
	}
	return lex, true
}

// The CJK search of any text is a well-formed tsquery: the quoted
// bigrams of fulltext.CJKTerms and nothing else, each a lexeme taken as
// it is, so that no text reaches PostgreSQL as tsquery syntax.
func FuzzPGCJKQuery(f *testing.F) {
	for _, s := range pgQuerySeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		want := fulltext.CJKTerms(text)
		q := orQuery(cjkTerms(text))
		if len(want) == 0 {
			if q != "" {
				t.Fatalf("%q: no CJK term, yet the query %q", text, q)
			}
			return
		}
		got, ok := readLexemes(q)
		if !ok {
			t.Fatalf("%q: the query %q is not ORed quoted lexemes", text, q)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%q: the query %q reads as %q, want %q", text, q, got, want)
		}
		for _, l := range got {
			if n := utf8.RuneCountInString(l); n < 1 || n > 2 {
				t.Fatalf("%q: lexeme %q is not one or two characters", text, l)
			}
		}
	})
}

// Lexeme quotes any text, quotes and backslashes among it, as one lexeme.
func FuzzPGLexeme(f *testing.F) {
	for _, s := range pgLexemeSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if s == "" {
			return
		}
		q := "(" + Lexeme(s) + ")"
		got, ok := readLexemes(q)
		if !ok || len(got) != 1 || got[0] != s {
			t.Fatalf("Lexeme(%q) = %q reads as %q (%v)", s, Lexeme(s), got, ok)
		}
	})
}

// pgQuerySeeds and pgLexemeSeeds seed the fuzz tests; the committed
// corpora (testdata/fuzz) add what fuzzing found worth keeping.
var (
	pgQuerySeeds = []string{"東京", "数据库迁移怎么做", "迁", "デプロイ手順 and docker", "캐시는 쓰기",
		"a東b京c", "'東' | '京'", `東\京`, "東京東京", "ﾃﾞﾌﾟﾛｲ", "", "plain words only"}
	pgLexemeSeeds = []string{"東京", "it's", `back\slash`, `'`, `\`, `''`, "a b", "x:*", "!(a & b)", "<->", "a|b"}
)

// PostgreSQL reads every seed query, and every query of the committed
// corpora, as the lexemes the fuzz tests read: what they check in Go is
// what the server parses.
func TestPGQueries_ServerReadsThem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := pgStore(t)
	texts := append(slices.Clone(pgQuerySeeds), pgLexemeSeeds...)
	for _, dir := range []string{"testdata/fuzz/FuzzPGCJKQuery", "testdata/fuzz/FuzzPGLexeme"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*"))
		for _, f := range files {
			buf, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range regexp.MustCompile(`(?m)^string\((".*")\)$`).FindAllStringSubmatch(string(buf), -1) {
				if s, err := strconv.Unquote(m[1]); err == nil {
					texts = append(texts, s)
				}
			}
		}
	}
	check := func(tsq string, want []string) {
		t.Helper()
		for _, l := range want {
			var holds bool
			// PostgreSQL's text holds valid UTF-8 without NUL only.
			if !utf8.ValidString(l) || strings.ContainsRune(l, 0) {
				return
			}
			if err := pgRow(ctx, q, `SELECT array_to_tsvector(ARRAY[?1::text]) @@ ?2::tsquery`, l, tsq).Scan(&holds); err != nil {
				t.Fatalf("%q: %v", tsq, err)
			}
			if !holds {
				t.Errorf("the tsquery %q does not match the lexeme %q", tsq, l)
			}
		}
		var n int
		if err := pgRow(ctx, q, `SELECT numnode(?1::tsquery)`, tsq).Scan(&n); err != nil {
			t.Fatalf("%q: %v", tsq, err)
		}
		// n lexemes ORed are 2n-1 nodes: no other operator came in.
		if n != 2*len(want)-1 {
			t.Errorf("the tsquery %q has %d nodes, want %d", tsq, n, 2*len(want)-1)
		}
	}
	for _, s := range texts {
		if tsq := orQuery(cjkTerms(s)); tsq != "" {
			check(tsq, fulltext.CJKTerms(s))
		}
		if s != "" && utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
			check("("+Lexeme(s)+")", []string{s})
		}
	}
}
