package fulltext

import (
	"iter"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestSnippetter_Cut(t *testing.T) {
	long := strings.Repeat("filler words here and there ", 20)
	for _, tt := range []struct {
		name, query, content, want string
	}{
		{"Short", "retry", "Webhooks retry with backoff.", "Webhooks retry with backoff"},
		{"Stemmed", "retrying deliveries", long + "we retried the delivery twice " + long,
			"…here and there we retried the delivery twice filler words here and there filler words here and there filler words here and there filler…"},
		{"Start", "cache", "Cache invalidation on write. " + long, "Cache invalidation on write. filler words here and there filler words here and there filler words here and there filler words here and there…"},
		{"NoMatch", "zzz", long, strings.TrimSpace(strings.Join(strings.Fields(long)[:24], " ")) + "…"},
		{"CJK", "表结构", "我们使用数据库迁移工具来管理表结构的变更", "我们使用数据库迁移工具来管理表结构的变更"},
		{"Empty", "x", "  — ", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSnippetter(QueryWords(tt.query), tt.query)
			if got := s.Cut(tt.content); got != tt.want {
				t.Errorf("Cut = %q\nwant  %q", got, tt.want)
			}
		})
	}
}

// FuzzSnippet: cutting never panics and gives a part of the content, at
// most snippetWords words, with ellipses only at the ends.
func FuzzSnippet(f *testing.F) {
	f.Add("retry backoff", "Webhooks retry with backoff, eight attempts.")
	f.Add("表结构", "我们使用数据库迁移工具来管理表结构的变更")
	f.Add("a", "\xff\xfe a a a")
	f.Fuzz(func(t *testing.T, query, content string) {
		got := NewSnippetter(QueryWords(query), query).Cut(content)
		inner := strings.TrimSuffix(strings.TrimPrefix(got, "…"), "…")
		if !strings.Contains(content, inner) {
			t.Fatalf("snippet %q is not part of the content", got)
		}
		if utf8.ValidString(content) && !utf8.ValidString(got) {
			t.Fatalf("snippet %q is not valid UTF-8", got)
		}
		if n := len(strings.FieldsFunc(inner, func(r rune) bool { return r == ' ' })); n > snippetWords*4+1 {
			t.Fatalf("snippet of %d fields", n)
		}
	})
}

// TestStem_KeepsTheFirstLetter: the snippetter skips stemming content words
// whose first letter no query stem starts with, which is right only if a
// stem always starts with its word's first letter. Checked over suffix-heavy
// generated words, since Porter's rules rewrite suffixes.
func TestStem_KeepsTheFirstLetter(t *testing.T) {
	for w := range suffixedWords(rand.New(rand.NewPCG(1, 2)), 200_000) {
		if st := Stem(w); st == "" || st[0] != w[0] {
			t.Fatalf("Stem(%q) = %q: first letter changed", w, st)
		}
	}
}

// suffixedWords yields n generated words: a few letters, then up to two of
// the suffixes Porter's rules rewrite.
func suffixedWords(rng *rand.Rand, n int) iter.Seq[string] {
	suffixes := strings.Fields(`s sses ies ss eed ed ing at bl iz y ational tional enci anci
		izer abli alli entli eli ousli ization ation ator alism iveness fulness ousness aliti
		iviti biliti icate ative alize iciti ical ful ness al ance ence er ic able ible ant
		ement ment ent ion ou ism ate iti ous ive ize e l ll`)
	return func(yield func(string) bool) {
		for range n {
			var b strings.Builder
			for n := 1 + rng.IntN(4); n > 0; n-- {
				b.WriteByte(byte('a' + rng.IntN(26)))
			}
			for n := rng.IntN(3); n > 0; n-- {
				b.WriteString(suffixes[rng.IntN(len(suffixes))])
			}
			if !yield(b.String()) {
				return
			}
		}
	}
}

// TestSnippetter_CutMatchesEveryWindow: the sliding window picks the window
// that scoring every window afresh picks.
func TestSnippetter_CutMatchesEveryWindow(t *testing.T) {
	vocab := strings.Fields("Retry retries retried backoff cache Cache caching write 表结构 数据库 v2表结构 zz数据库 the a of zeta eta ünïcode Über x1 42")
	queries := []string{"retry backoff", "cache", "caching writes 表结构", "zeta eta", "über", "42 x1", "nothing"}
	rng := rand.New(rand.NewPCG(3, 4))
	shared := make([]*Snippetter, len(queries))
	for i, q := range queries {
		shared[i] = NewSnippetter(QueryWords(q), q)
	}
	for i := range 3000 {
		n := rng.IntN(80)
		parts := make([]string, n)
		for j := range parts {
			parts[j] = vocab[rng.IntN(len(vocab))]
		}
		content := strings.Join(parts, []string{" ", ", ", " — ", ""}[rng.IntN(4)])
		q := queries[i%len(queries)]
		s := NewSnippetter(QueryWords(q), q)
		if got, want := s.Cut(content), cutByEveryWindow(s, content); got != want {
			t.Fatalf("query %q, content %q:\ncut  %q\nwant %q", q, content, got, want)
		}
		// One snippetter cuts every hit of a search, reusing its scratch:
		// what it cut before changes nothing.
		if got, want := shared[i%len(queries)].Cut(content), s.Cut(content); got != want {
			t.Fatalf("query %q, content %q: a reused snippetter cut %q, a new one %q", q, content, got, want)
		}
		// Released, s serves the next query from the pool: nothing of
		// this one (its stems, CJK terms, judged words) may stay in it.
		s.Release()
	}
}

// cutByEveryWindow is the snippet rule stated plainly: score each window of
// snippetWords words on its own.
func cutByEveryWindow(s *Snippetter, content string) string {
	type span struct {
		start, end int
		match      bool
	}
	var words []span
	for i := 0; i < len(content); {
		r, size := utf8.DecodeRuneInString(content[i:])
		if !unicode.IsLetter(r) && !unicode.IsNumber(r) {
			i += size
			continue
		}
		j := i + size
		for j < len(content) {
			r, size := utf8.DecodeRuneInString(content[j:])
			if !unicode.IsLetter(r) && !unicode.IsNumber(r) {
				break
			}
			j += size
		}
		w := content[i:j]
		match := s.stems[Stem(strings.ToLower(w))]
		for _, t := range s.cjk {
			match = match || strings.Contains(w, t)
		}
		words = append(words, span{i, j, match})
		i = j
	}
	if len(words) == 0 {
		return ""
	}
	n := min(snippetWords, len(words))
	best, bestScore, bestLead := 0, -1, 0
	for from := 0; from+n <= len(words); from++ {
		distinct := map[string]bool{}
		matches, first := 0, -1
		for i, w := range words[from : from+n] {
			if w.match {
				matches++
				distinct[strings.ToLower(content[w.start:w.end])] = true
				if first < 0 {
					first = i
				}
			}
		}
		lead := abs(first - snippetLead)
		if score := len(distinct)*1000 + matches; score > bestScore || (score == bestScore && first >= 0 && lead < bestLead) {
			best, bestScore, bestLead = from, score, lead
		}
	}
	return window(content, words[best].start, words[best+n-1].end, best > 0, best+n < len(words))
}
