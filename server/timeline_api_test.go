package server_test

import (
	"slices"
	"testing"

	"github.com/hearth-memory/hearth/server/servertest"
)

func titles(body map[string]any) []string {
	var out []string
	for _, r := range list(body, "records") {
		out = append(out, str(r, "title"))
	}
	return out
}

// TestMemory_TimelineFilters holds memory_timeline's filters over every
// transport: types, statuses (deleted only when asked), within (the chain,
// one namespace, all) and paging by after_id; and memory_search's within.
func TestMemory_TimelineFilters(t *testing.T) {
	t.Parallel()
	td := servertest.Start(t, testOptions())
	tok := td.Tokens["claude-code"]
	rest := td.REST
	store := func(ns, typ, title string) string {
		args := storeArgs(ns, title, "Content of "+title+".")
		args["type"] = typ
		r := rest.Call(t, tok, "memory_store", args)
		if !r.OK {
			t.Fatalf("store: %v", r)
		}
		return str(r.Body, "record", "id")
	}
	repo := "github/acme/filters"
	store("global", "preference", "g-pref")
	store(repo, "decision", "r-dec")
	cand := store(repo, "note", "r-cand")
	if r := rest.Call(t, tok, "memory_update", map[string]any{"id": cand, "revision": 1, "changes": map[string]any{"status": "candidate"}}); !r.OK {
		t.Fatalf("to candidate: %v", r)
	}
	gone := store(repo, "note", "r-gone")
	if r := rest.Call(t, tok, "memory_forget", map[string]any{"id": gone}); !r.OK {
		t.Fatalf("forget: %v", r)
	}
	store("topics/go", "procedure", "t-proc")

	for _, tr := range td.Transports() {
		t.Run(tr.Name(), func(t *testing.T) {
			for _, tc := range []struct {
				name string
				args map[string]any
				want []string
			}{
				{"Chain", map[string]any{"namespace": repo}, []string{"r-cand", "r-dec", "g-pref"}},
				{"Namespace", map[string]any{"namespace": repo, "within": "namespace"}, []string{"r-cand", "r-dec"}},
				{"All", map[string]any{"within": "all"}, []string{"t-proc", "r-cand", "r-dec", "g-pref"}},
				{"Types", map[string]any{"within": "all", "types": []string{"note", "procedure"}}, []string{"t-proc", "r-cand"}},
				{"Statuses", map[string]any{"within": "all", "statuses": []string{"candidate", "deleted"}}, []string{"r-gone", "r-cand"}},
				{"Combined", map[string]any{"namespace": repo, "within": "namespace", "types": []string{"note"}, "statuses": []string{"deleted"}}, []string{"r-gone"}},
			} {
				r := tr.Call(t, tok, "memory_timeline", tc.args)
				if !r.OK {
					t.Fatalf("%s: %v", tc.name, r)
				}
				if got := titles(r.Body); !slices.Equal(got, tc.want) {
					t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
				}
			}
			for _, tc := range []struct {
				name string
				args map[string]any
				want []string
			}{
				{"SearchChain", map[string]any{"query": "content", "namespace": repo}, []string{"g-pref", "r-cand", "r-dec"}},
				{"SearchNamespace", map[string]any{"query": "content", "namespace": repo, "within": "namespace"}, []string{"r-cand", "r-dec"}},
				{"SearchAll", map[string]any{"query": "content", "within": "all"}, []string{"g-pref", "r-cand", "r-dec", "t-proc"}},
			} {
				r := tr.Call(t, tok, "memory_search", tc.args)
				if !r.OK {
					t.Fatalf("%s: %v", tc.name, r)
				}
				var got []string
				for _, h := range list(r.Body, "hits") {
					got = append(got, str(h, "title"))
				}
				slices.Sort(got)
				if !slices.Equal(got, tc.want) {
					t.Errorf("%s: got %v, want %v (deleted records are never found)", tc.name, got, tc.want)
				}
			}
			// Paging: two at a time through every namespace.
			var got []string
			after := ""
			for range 5 {
				args := map[string]any{"within": "all", "limit": 2}
				if after != "" {
					args["after_id"] = after
				}
				r := tr.Call(t, tok, "memory_timeline", args)
				recs := list(r.Body, "records")
				if !r.OK || len(recs) == 0 {
					break
				}
				got = append(got, titles(r.Body)...)
				after = str(recs[len(recs)-1], "id")
			}
			if want := []string{"t-proc", "r-cand", "r-dec", "g-pref"}; !slices.Equal(got, want) {
				t.Errorf("paged: got %v, want %v", got, want)
			}
			r := tr.Call(t, tok, "memory_timeline", map[string]any{"within": "all", "after_id": "01JD3M5ZK9Q8W7E6R5T4Y3X2V1"})
			if r.OK || r.Code != "NOT_FOUND" || str(r.Body, "error", "field") != "after_id" {
				t.Errorf("unknown after_id: %v, want NOT_FOUND naming after_id", r)
			}
			r = tr.Call(t, tok, "memory_timeline", map[string]any{"within": "all", "namespace": repo})
			if r.OK || r.Code != "INVALID_ARGUMENT" || str(r.Body, "error", "field") != "namespace" {
				t.Errorf("all with a namespace: %v, want INVALID_ARGUMENT naming namespace", r)
			}
		})
	}
}
