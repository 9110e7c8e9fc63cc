package server_test

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/server/servertest"
	"github.com/hearth-memory/hearth/storage"
)

// witnessOptions are the test options with two more writing agents, so
// three clients besides the writer can give evidence.
func witnessOptions() options.Options {
	o := testOptions()
	rw := []options.Scope{options.ScopeRead, options.ScopeWrite}
	o.Clients = append(o.Clients,
		options.Client{Name: "gemini", Scopes: rw},
		options.Client{Name: "aider", Scopes: rw},
	)
	return o
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

// TestDaemon_Evidence holds R-E1 and R-E2 through every transport: the
// example sequence 0.6 → 0.7333 → 0.8222 → 0.4111, each call advancing the
// revision and answering why.
func TestDaemon_Evidence(t *testing.T) {
	t.Parallel()
	td := servertest.Start(t, witnessOptions())
	for _, tr := range td.Transports() {
		t.Run(tr.Name(), func(t *testing.T) {
			args := storeArgs("github/acme/"+tr.Name(), "Billing uses PostgreSQL", "The billing service stores invoices in PostgreSQL 16.")
			args["confidence"] = 0.6
			st := tr.Call(t, td.Tokens["claude-code"], "memory_store", args)
			if !st.OK {
				t.Fatalf("store: %v", st)
			}
			id := str(st.Body, "record", "id")
			steps := []struct {
				client, stance, note string
				effective            float64
				proofs, refutations  float64
				why                  string
			}{
				{"codex", "corroborates", "checked db/schema.sql", 0.7333, 1, 0, "1 for/0 against"},
				{"gemini", "corroborates", "", 0.8222, 2, 0, "2 for/0 against"},
				{"aider", "contradicts", "invoices moved to MySQL", 0.4111, 2, 1, "2 for/1 against"},
			}
			for i, s := range steps {
				args := map[string]any{"id": id, "stance": s.stance}
				if s.note != "" {
					args["note"] = s.note
				}
				r := tr.Call(t, td.Tokens[s.client], "memory_evidence", args)
				if !r.OK {
					t.Fatalf("step %d (%s %s): %v", i+1, s.client, s.stance, r)
				}
				if got := round4(num(r.Body, "record", "effective_confidence")); got != s.effective {
					t.Errorf("step %d: effective_confidence = %.4f, want %.4f", i+1, got, s.effective)
				}
				if p, c := num(r.Body, "record", "proof_count"), num(r.Body, "record", "refutation_count"); p != s.proofs || c != s.refutations {
					t.Errorf("step %d: proof_count, refutation_count = %v, %v, want %v, %v", i+1, p, c, s.proofs, s.refutations)
				}
				if got := num(r.Body, "record", "revision"); got != float64(i+2) {
					t.Errorf("step %d: revision = %v, want %d", i+1, got, i+2)
				}
				if got := num(r.Body, "record", "confidence"); got != 0.6 {
					t.Errorf("step %d: confidence = %v, want 0.6 (asserted, unchanged)", i+1, got)
				}
				if got := str(r.Body, "why"); got != s.why {
					t.Errorf("step %d: why = %q, want %q", i+1, got, s.why)
				}
			}
			// memory_get reads the same derived values back.
			g := tr.Call(t, td.Tokens["codex"], "memory_get", map[string]any{"ids": []string{id}})
			if got := round4(num(g.Body, "records", 0, "effective_confidence")); got != 0.4111 {
				t.Errorf("get: effective_confidence = %.4f, want 0.4111", got)
			}
		})
	}

	// Every stance is audited with the client that gave it.
	log, err := td.DB.AuditLog(context.Background(), 500)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]int{}
	for _, e := range log {
		if e.Action == storage.ActionEvidence {
			by[e.Client]++
		}
	}
	if by["codex"] != 3 || by["gemini"] != 3 || by["aider"] != 3 {
		t.Errorf("evidence audit rows by client: got %v, want 3 each for codex, gemini, aider", by)
	}
}

// TestDaemon_EvidenceSelfInflation holds the one-stance rule: a client
// cannot raise a record by repeating itself, and the writer's own
// corroboration does not count while its contradiction does.
func TestDaemon_EvidenceSelfInflation(t *testing.T) {
	t.Parallel()
	td := servertest.Start(t, witnessOptions())
	rest := td.REST
	writer, other := td.Tokens["claude-code"], td.Tokens["codex"]
	st := rest.Call(t, writer, "memory_store", storeArgs("github/acme/self", "Deploys on Fridays", "Deploys are allowed on Fridays before noon."))
	if !st.OK {
		t.Fatalf("store: %v", st)
	}
	id := str(st.Body, "record", "id")
	ev := func(token, stance string) servertest.Result {
		t.Helper()
		r := rest.Call(t, token, "memory_evidence", map[string]any{"id": id, "stance": stance})
		if !r.OK {
			t.Fatalf("evidence %s: %v", stance, r)
		}
		return r
	}
	check := func(r servertest.Result, effective, proofs, refutations, revision float64, why string) {
		t.Helper()
		if got := round4(num(r.Body, "record", "effective_confidence")); got != effective ||
			num(r.Body, "record", "proof_count") != proofs || num(r.Body, "record", "refutation_count") != refutations ||
			num(r.Body, "record", "revision") != revision || str(r.Body, "why") != why {
			t.Errorf("got effective %.4f, %v for/%v against, revision %v, why %q; want %.4f, %v/%v, %v, %q",
				got, num(r.Body, "record", "proof_count"), num(r.Body, "record", "refutation_count"),
				num(r.Body, "record", "revision"), str(r.Body, "why"), effective, proofs, refutations, revision, why)
		}
	}

	// The writer corroborating its own record: recorded, not counted.
	check(ev(writer, "corroborates"), 0.8, 0, 0, 2, "asserted, unwitnessed")
	// Another client, five times: counted once; repeats change nothing.
	check(ev(other, "corroborates"), 0.8667, 1, 0, 3, "1 for/0 against")
	for range 4 {
		check(ev(other, "corroborates"), 0.8667, 1, 0, 3, "1 for/0 against")
	}
	// The writer retracting counts.
	check(ev(writer, "contradicts"), 0.4333, 1, 1, 4, "1 for/1 against")
	// A client changing its mind replaces its stance, at the end of the order:
	// 0.8 halved by the writer, then halved by codex.
	check(ev(other, "contradicts"), 0.2, 0, 2, 5, "0 for/2 against")
}

// TestDaemon_EvidenceErrors: every refusal names its field, and a screened
// note is refused and audited without echoing it.
func TestDaemon_EvidenceErrors(t *testing.T) {
	t.Parallel()
	td := servertest.Start(t, witnessOptions())
	tok := td.Tokens["codex"]
	st := td.REST.Call(t, td.Tokens["claude-code"], "memory_store", storeArgs("github/acme/err", "T", "C"))
	id := str(st.Body, "record", "id")
	secret := "password=" + "hunter2hunter2X9"
	for _, tr := range td.Transports() {
		t.Run(tr.Name(), func(t *testing.T) {
			for _, tt := range []struct {
				name  string
				args  map[string]any
				code  string
				field string
			}{
				{"NoID", map[string]any{"stance": "corroborates"}, "INVALID_ARGUMENT", "id"},
				{"Stance", map[string]any{"id": id, "stance": "agrees"}, "INVALID_ARGUMENT", "stance"},
				{"LongNote", map[string]any{"id": id, "stance": "contradicts", "note": strings.Repeat("n", 501)}, "INVALID_ARGUMENT", "note"},
				{"SecretNote", map[string]any{"id": id, "stance": "contradicts", "note": "use " + secret}, "INVALID_ARGUMENT", "note"},
				{"Unknown", map[string]any{"id": "01ARZ3NDEKTSV4RRFFQ69G5FAV", "stance": "contradicts"}, "NOT_FOUND", "id"},
			} {
				t.Run(tt.name, func(t *testing.T) {
					r := tr.Call(t, tok, "memory_evidence", tt.args)
					if r.OK || r.Code != tt.code || str(r.Body, "error", "field") != tt.field {
						t.Errorf("got %v, want %s naming %s", r, tt.code, tt.field)
					}
					if strings.Contains(string(r.Raw), "hunter2") {
						t.Errorf("the error echoes the secret: %s", r.Raw)
					}
				})
			}
		})
	}
	// A read-only caller cannot give evidence.
	r := servertest.MCP{URL: td.URL, Client: dialFrom(readerIP)}.Call(t, "", "memory_evidence", map[string]any{"id": id, "stance": "corroborates"})
	if r.OK || r.Code != "PERMISSION_DENIED" {
		t.Errorf("address client: got %v, want PERMISSION_DENIED", r)
	}
	// Nothing was recorded, and the screen refusals were audited.
	g := td.REST.Call(t, tok, "memory_get", map[string]any{"ids": []string{id}})
	if got := num(g.Body, "records", 0, "revision"); got != 1 {
		t.Errorf("revision = %v, want 1 (every call was refused)", got)
	}
	log, err := td.DB.AuditLog(context.Background(), 500)
	if err != nil {
		t.Fatal(err)
	}
	screened := 0
	for _, e := range log {
		if strings.Contains(e.Detail.String(), "hunter2") {
			t.Errorf("audit row carries the secret: %+v", e)
		}
		if e.Action == "refuse.screen" && e.RecordID == id {
			screened++
		}
	}
	if screened != 3 {
		t.Errorf("refuse.screen rows for the record: got %d, want 3 (one per transport)", screened)
	}
}

// TestDaemon_EvidenceRanking holds R-K3 and R-E3 through the API: on hits
// otherwise equal, evidence reorders them and why names the factor.
func TestDaemon_EvidenceRanking(t *testing.T) {
	t.Parallel()
	td := servertest.Start(t, witnessOptions())
	tok := td.Tokens["claude-code"]
	for _, tr := range td.Transports() {
		t.Run(tr.Name(), func(t *testing.T) {
			pair := func(ns string) (first, second string) {
				t.Helper()
				var ids []string
				for range 2 {
					r := tr.Call(t, tok, "memory_store", storeArgs(ns, "Queue retries", "Failed queue jobs retry with exponential backoff."))
					if !r.OK {
						t.Fatalf("store: %v", r)
					}
					ids = append(ids, str(r.Body, "record", "id"))
				}
				// Same text, same namespace: full text ties, the lower id first.
				se := tr.Call(t, tok, "memory_search", map[string]any{"namespace": ns, "query": "queue retries"})
				if got := []string{str(se.Body, "hits", 0, "id"), str(se.Body, "hits", 1, "id")}; got[0] != ids[0] || got[1] != ids[1] {
					t.Fatalf("before evidence: got %v, want %v", got, ids)
				}
				if w := str(se.Body, "hits", 0, "why"); w != "fts #1, covers 1.00" {
					t.Errorf("before evidence: why = %q, want %q", w, "fts #1, covers 1.00")
				}
				return ids[0], ids[1]
			}
			search := func(ns string) servertest.Result {
				t.Helper()
				se := tr.Call(t, tok, "memory_search", map[string]any{"namespace": ns, "query": "queue retries"})
				if !se.OK || len(list(se.Body, "hits")) != 2 {
					t.Fatalf("search: %v", se)
				}
				return se
			}

			t.Run("Contradicted", func(t *testing.T) {
				ns := "github/acme/down-" + tr.Name()
				a, b := pair(ns)
				if r := tr.Call(t, td.Tokens["codex"], "memory_evidence", map[string]any{"id": a, "stance": "contradicts"}); !r.OK {
					t.Fatalf("evidence: %v", r)
				}
				se := search(ns)
				if str(se.Body, "hits", 0, "id") != b || str(se.Body, "hits", 1, "id") != a {
					t.Errorf("order: got %s, %s, want the contradicted record last", str(se.Body, "hits", 0, "id"), str(se.Body, "hits", 1, "id"))
				}
				if w := str(se.Body, "hits", 1, "why"); w != "fts #1, evidence x0.50, covers 1.00" {
					t.Errorf("why = %q, want %q", w, "fts #1, evidence x0.50, covers 1.00")
				}
				if w := str(se.Body, "hits", 0, "why"); strings.Contains(w, "evidence") {
					t.Errorf("unwitnessed hit: why = %q, want no evidence factor", w)
				}
				if s0, s1 := num(se.Body, "hits", 0, "score"), num(se.Body, "hits", 1, "score"); s0 <= s1 {
					t.Errorf("scores %v, %v: want descending", s0, s1)
				}
			})

			t.Run("Corroborated", func(t *testing.T) {
				ns := "github/acme/up-" + tr.Name()
				a, b := pair(ns)
				if r := tr.Call(t, td.Tokens["codex"], "memory_evidence", map[string]any{"id": b, "stance": "corroborates"}); !r.OK {
					t.Fatalf("evidence: %v", r)
				}
				se := search(ns)
				if str(se.Body, "hits", 0, "id") != b || str(se.Body, "hits", 1, "id") != a {
					t.Errorf("order: got %s, %s, want the corroborated record first", str(se.Body, "hits", 0, "id"), str(se.Body, "hits", 1, "id"))
				}
				// 0.8 → 0.8667: factor 1.0833.
				if w := str(se.Body, "hits", 0, "why"); w != "fts #2, evidence x1.08, covers 1.00" {
					t.Errorf("why = %q, want %q", w, "fts #2, evidence x1.08, covers 1.00")
				}
			})
		})
	}
}

// TestDaemon_UsageCounters holds R-K5: search hits and context packets
// count as returned, memory_get results as fetched, and timeline and
// bootstrap (like evidence) count nothing.
func TestDaemon_UsageCounters(t *testing.T) {
	t.Parallel()
	clock := newTestClock(time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC))
	td := servertest.StartAt(t, witnessOptions(), clock.Now)
	tok := td.Tokens["claude-code"]
	ns := "github/acme/usage"
	var ids []string
	for _, title := range []string{"Cache keys", "Cache expiry"} {
		r := td.REST.Call(t, tok, "memory_store", storeArgs(ns, title, "Cache entries are keyed by tenant and expire after an hour."))
		if !r.OK {
			t.Fatalf("store: %v", r)
		}
		ids = append(ids, str(r.Body, "record", "id"))
	}
	// want holds the expected counters of ids[0] and ids[1].
	want := [2]storage.Usage{}
	check := func(step string) {
		t.Helper()
		for k, id := range ids {
			u, err := td.DB.Usage(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if u != want[k] {
				t.Errorf("%s: record %d got %+v, want %+v", step, k, u, want[k])
			}
		}
	}
	for _, tr := range td.Transports() {
		clock.Add(time.Minute)
		at := clock.Now().Truncate(time.Millisecond)

		// Timeline returns both and counts nothing.
		tl := tr.Call(t, tok, "memory_timeline", map[string]any{"namespace": ns})
		if !tl.OK || len(list(tl.Body, "records")) != 2 {
			t.Fatalf("%s timeline: %v", tr.Name(), tl)
		}
		check(tr.Name() + " timeline")

		// Bootstrap lists both (durable decisions) and counts nothing.
		if b := tr.Call(t, tok, "memory_bootstrap", map[string]any{"namespace": ns}); !b.OK || len(list(b.Body, "items")) != 2 {
			t.Fatalf("%s bootstrap: %v", tr.Name(), b)
		}
		check(tr.Name() + " bootstrap")

		// Search with limit 1 returns (and counts) the first hit only.
		se := tr.Call(t, tok, "memory_search", map[string]any{"namespace": ns, "query": "cache keys tenant", "limit": 1})
		if !se.OK || len(list(se.Body, "hits")) != 1 || str(se.Body, "hits", 0, "id") != ids[0] {
			t.Fatalf("%s search: %v", tr.Name(), se)
		}
		want[0].Returned++
		want[0].LastReturnedAt = at
		check(tr.Name() + " search")

		// Get fetches both.
		if g := tr.Call(t, tok, "memory_get", map[string]any{"ids": ids}); !g.OK || len(list(g.Body, "records")) != 2 {
			t.Fatalf("%s get: %v", tr.Name(), g)
		}
		for k := range want {
			want[k].Fetched++
			want[k].LastFetchedAt = at
		}
		check(tr.Name() + " get")

		// A context packet returns both.
		clock.Add(time.Second)
		at = clock.Now().Truncate(time.Millisecond)
		if c := tr.Call(t, tok, "memory_context", map[string]any{"namespace": ns, "task": "change the cache keys"}); !c.OK || len(list(c.Body, "records")) != 2 {
			t.Fatalf("%s context: %v", tr.Name(), c)
		}
		for k := range want {
			want[k].Returned++
			want[k].LastReturnedAt = at
		}
		check(tr.Name() + " context")

		// Giving evidence is not a use.
		if r := tr.Call(t, td.Tokens["codex"], "memory_evidence", map[string]any{"id": ids[1], "stance": "contradicts", "note": tr.Name()}); !r.OK {
			t.Fatalf("%s evidence: %v", tr.Name(), r)
		}
		check(tr.Name() + " evidence")
	}
}

// TestDaemon_Unused holds R-K6 with the store's clock moved: nothing is
// listed until counting has run 30 days, then active records nothing used in
// 30 days, oldest first.
func TestDaemon_Unused(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC)
	clock := newTestClock(t0)
	td := servertest.StartAt(t, witnessOptions(), clock.Now)
	tok := td.Tokens["claude-code"]
	rest := td.REST
	ns := "github/acme/unused"
	store := func(ns, title string) string {
		t.Helper()
		r := rest.Call(t, tok, "memory_store", storeArgs(ns, title, "Content about "+title+"."))
		if !r.OK {
			t.Fatalf("store: %v", r)
		}
		return str(r.Body, "record", "id")
	}
	idle := store(ns, "idle")
	clock.Add(time.Hour)
	searched := store(ns, "searched")
	clock.Add(time.Hour)
	fetched := store(ns, "fetched")
	clock.Add(time.Hour)
	elsewhere := store("github/acme/other", "elsewhere")
	clock.Add(time.Hour)
	forgotten := store(ns, "forgotten")
	if r := rest.Call(t, tok, "memory_forget", map[string]any{"id": forgotten}); !r.OK {
		t.Fatalf("forget: %v", r)
	}

	clock.Set(t0.Add(10 * 24 * time.Hour))
	if r := rest.Call(t, tok, "memory_search", map[string]any{"namespace": ns, "query": "searched"}); len(list(r.Body, "hits")) != 1 {
		t.Fatalf("search: %v", r)
	}
	clock.Set(t0.Add(12 * 24 * time.Hour))
	if r := rest.Call(t, tok, "memory_get", map[string]any{"ids": []string{fetched}}); !r.OK {
		t.Fatalf("get: %v", r)
	}
	// Bootstrap-like reads do not count: timeline returns everything.
	if r := rest.Call(t, tok, "memory_timeline", map[string]any{"namespace": ns}); !r.OK {
		t.Fatalf("timeline: %v", r)
	}

	ids := func(r servertest.Result) []string {
		var out []string
		for _, rec := range list(r.Body, "records") {
			out = append(out, str(rec, "id"))
		}
		return out
	}
	for _, tr := range td.Transports() {
		t.Run(tr.Name(), func(t *testing.T) {
			unused := func(args map[string]any) servertest.Result {
				t.Helper()
				r := tr.Call(t, tok, "memory_unused", args)
				if !r.OK {
					t.Fatalf("unused: %v", r)
				}
				if got := str(r.Body, "counting_since"); got != "2026-01-05T08:00:00Z" {
					t.Errorf("counting_since = %q, want 2026-01-05T08:00:00Z", got)
				}
				return r
			}

			// 29 days: counting has not run long enough.
			clock.Set(t0.Add(29 * 24 * time.Hour))
			r := unused(map[string]any{})
			if get(r.Body, "ready") != false || len(list(r.Body, "records")) != 0 {
				t.Errorf("day 29: got %s, want not ready, no records", r.Raw)
			}

			// 31 days: searched (21 days ago) was used; fetched was only
			// fetched by id (19 days ago), which is not use (R-K6);
			// forgotten is deleted.
			clock.Set(t0.Add(31 * 24 * time.Hour))
			r = unused(map[string]any{})
			if got, want := ids(r), []string{idle, fetched, elsewhere}; get(r.Body, "ready") != true || !slices.Equal(got, want) {
				t.Errorf("day 31: got %v (%s), want %v", got, r.Raw, want)
			}
			if got := str(r.Body, "records", 1, "last_fetched_at"); got != "2026-01-17T08:00:00Z" {
				t.Errorf("day 31: fetched: last_fetched_at = %q, want 2026-01-17T08:00:00Z", got)
			}
			if _, has := get(r.Body, "records", 0).(map[string]any)["last_returned_at"]; has {
				t.Errorf("a record never returned carries last_returned_at: %s", r.Raw)
			}
			if got := str(r.Body, "records", 0, "created_at"); got != "2026-01-05T08:00:00Z" {
				t.Errorf("created_at = %q", got)
			}
			if num(r.Body, "estimated_tokens") == 0 || get(r.Body, "truncated") != false || num(r.Body, "left_out") != 0 {
				t.Errorf("budget fields: %s", r.Raw)
			}

			// 43 days: the last uses are 30 days old too.
			clock.Set(t0.Add(43 * 24 * time.Hour))
			r = unused(map[string]any{"namespace": ns})
			if got, want := ids(r), []string{idle, searched, fetched}; !slices.Equal(got, want) {
				t.Errorf("day 43 in %s: got %v, want %v", ns, got, want)
			}
			if got := str(r.Body, "records", 1, "last_returned_at"); got != "2026-01-15T08:00:00Z" {
				t.Errorf("searched: last_returned_at = %q, want 2026-01-15T08:00:00Z", got)
			}
			if got := str(r.Body, "records", 2, "last_fetched_at"); got != "2026-01-17T08:00:00Z" {
				t.Errorf("fetched: last_fetched_at = %q, want 2026-01-17T08:00:00Z", got)
			}
			r = unused(map[string]any{"limit": 2})
			if got, want := ids(r), []string{idle, searched}; !slices.Equal(got, want) {
				t.Errorf("limit 2: got %v, want %v", got, want)
			}

			// Listing is not a use: a second look gives the same answer.
			if again := unused(map[string]any{"limit": 2}); !slices.Equal(ids(again), ids(r)) {
				t.Errorf("second look: got %v, want %v", ids(again), ids(r))
			}

			for _, bad := range []struct {
				args  map[string]any
				field string
			}{
				{map[string]any{"limit": 101}, "limit"},
				{map[string]any{"namespace": "Not A Namespace"}, "namespace"},
			} {
				r := tr.Call(t, tok, "memory_unused", bad.args)
				if r.OK || r.Code != "INVALID_ARGUMENT" || str(r.Body, "error", "field") != bad.field {
					t.Errorf("%v: got %v, want INVALID_ARGUMENT naming %s", bad.args, r, bad.field)
				}
			}
		})
	}

}
