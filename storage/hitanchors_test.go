package storage

import (
	"context"
	"testing"
)

// TestSearch_HitAnchors: a hit carries its record's anchors, in order,
// whether the lean ranking read its record or the full query did (a type
// filter), and a record without anchors has none.
func TestSearch_HitAnchors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openTestDB(t)
	store := func(title string, anchors ...string) { storeNote(t, db, "global", title, "about webhooks", anchors...) }
	store("anchored", "path:internal/billing/client.go", "host:billing.internal")
	store("bare")
	for _, q := range []SearchQuery{
		{Text: "webhooks", Namespaces: []string{"global"}, Limit: 10},
		{Text: "webhooks", Namespaces: []string{"global"}, Types: []string{TypeNote}, Limit: 10},
		{Text: "webhooks", Limit: 10},
	} {
		hits, err := db.Search(ctx, q)
		if err != nil || len(hits) != 2 {
			t.Fatalf("%+v: %d hits, %v", q, len(hits), err)
		}
		for _, h := range hits {
			var got []string
			for _, a := range h.Record.Anchors {
				got = append(got, a.Anchor)
			}
			want := map[string][]string{"anchored": {"path:internal/billing/client.go", "host:billing.internal"}, "bare": nil}[h.Record.Title]
			if len(got) != len(want) || len(want) > 0 && (got[0] != want[0] || got[1] != want[1]) {
				t.Errorf("types %v, %s: anchors %v, want %v", q.Types, h.Record.Title, got, want)
			}
		}
	}
}
