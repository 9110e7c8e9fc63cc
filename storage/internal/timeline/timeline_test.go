package timeline

import (
	"fmt"
	"strings"
	"testing"
)

// TestSQL_Walks checks how a page's statement is put together: a walk per
// namespace and status, repeats asked for walked once, until MaxWalks,
// past which it walks each status and filters the namespaces; each
// filter's value bound once however many walks use it. What the
// statement returns, and its plan, are tested through storage's DB
// (storage/timeline_test.go), which both engines run.
func TestSQL_Walks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		q         Query
		walks     int
		nsFilter  bool
		wantArgs  int
		wantAfter bool
	}{
		{"statuses", Query{Statuses: []string{"active", "candidate"}, Limit: 5}, 2, false, 3, false},
		{"repeats", Query{Namespaces: []string{"a", "a", "b"}, Statuses: []string{"active", "active"}, Types: []string{"note"}, Limit: 5}, 2, false, 6, false},
		{"at the bound", Query{Namespaces: nsList(MaxWalks / 2), Statuses: []string{"active", "candidate"}, Limit: 5}, MaxWalks, false, 2*MaxWalks + 1, false},
		{"past the bound", Query{Namespaces: nsList(MaxWalks + 1), Statuses: []string{"active"}, After: "x", Limit: 5}, 1, true, 5, true},
	} {
		var after *Cursor
		if tc.q.After != "" {
			after = &Cursor{At: 7, ID: tc.q.After}
		}
		query, args := SQL(tc.q, after)
		if n := strings.Count(query, "UNION ALL") + 1; n != tc.walks {
			t.Errorf("%s: %d walks, want %d: %s", tc.name, n, tc.walks, query)
		}
		if got := strings.Contains(query, "t.namespace || ''"); got != tc.nsFilter {
			t.Errorf("%s: namespace filter %v, want %v", tc.name, got, tc.nsFilter)
		}
		if len(args) != tc.wantArgs {
			t.Errorf("%s: %d arguments %v, want %d", tc.name, len(args), args, tc.wantArgs)
		}
		if got := strings.Contains(query, "(t.created_at, t.id) <"); got != tc.wantAfter {
			t.Errorf("%s: cursor %v, want %v", tc.name, got, tc.wantAfter)
		}
		if args[len(args)-1] != 5 {
			t.Errorf("%s: last argument %v, want the limit 5", tc.name, args[len(args)-1])
		}
	}
}

func nsList(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprint("ns", i)
	}
	return out
}
