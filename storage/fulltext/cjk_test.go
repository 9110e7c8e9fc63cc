package fulltext

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ncruces/go-sqlite3/ext/fts5"
)

// FuzzCJK: the tokenizer never panics, emits only CJK tokens of one or two
// characters that are the text at their offsets, a colocated token only
// after another, and some token exactly when HasCJK says so (the records
// the CJK index holds); the query builder yields only quoted CJK terms.
func FuzzCJK(f *testing.F) {
	for _, s := range []string{"", "数据库迁移", "デプロイ手順 and docker", "캐시는 쓰기", "a\"b", "迁", "日本\x00語", "\xff数据", "naïve — café → 🚀", "\xe2\xba", "𠀀"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		prev, tokens := -1, 0
		err := CJKTokenizer{}.Tokenize(fts5.TOKENIZE_DOCUMENT, text, "", func(flags fts5.TokenFlag, token string, start, end int) error {
			if start < 0 || end > len(text) || start >= end || text[start:end] != token {
				t.Fatalf("token %q at %d:%d is not the text there", token, start, end)
			}
			if n := utf8.RuneCountInString(token); n < 1 || n > 2 {
				t.Fatalf("token %q has %d characters", token, n)
			}
			for _, r := range token {
				if !IsCJK(r) {
					t.Fatalf("token %q holds %q", token, r)
				}
			}
			if flags&fts5.TOKEN_COLOCATED != 0 && prev < 0 {
				t.Fatalf("colocated token %q first", token)
			}
			prev = start
			tokens++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if (tokens > 0) != HasCJK(text) {
			t.Fatalf("%d tokens for text with CJK %v", tokens, HasCJK(text))
		}
		q := CJKQuery(text)
		for _, term := range strings.Split(q, " OR ") {
			if q == "" {
				break
			}
			if len(term) < 2 || term[0] != '"' || term[len(term)-1] != '"' || strings.Contains(term[1:len(term)-1], `"`) {
				t.Fatalf("query term %q is not a quoted string", term)
			}
		}
		if (q != "") != HasCJK(text) {
			t.Fatalf("query %q for text with CJK %v", q, HasCJK(text))
		}
	})
}
