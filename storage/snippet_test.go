package storage

import (
	"strings"
	"testing"
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
			s := newSnippetter(queryWords(tt.query), tt.query)
			if got := s.cut(tt.content); got != tt.want {
				t.Errorf("cut = %q\nwant  %q", got, tt.want)
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
		got := newSnippetter(queryWords(query), query).cut(content)
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
