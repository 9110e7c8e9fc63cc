package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/server/servertest"
)

// withheldKeys are the record fields a client without read scope must never
// see in a reply: the record's content and everything that describes it.
var withheldKeys = []string{"title", "content", "type", "namespace", "topics", "anchors", "writer", "confidence", "source", "created_at"}

// checkWithheld fails unless rec (a decoded Record) carries its id,
// status and revision and leaves every withheld field empty (the JSON
// shape stays: empty fields are written as their zero value).
func checkWithheld(t *testing.T, what string, rec any) {
	t.Helper()
	m, ok := rec.(map[string]any)
	if !ok {
		t.Fatalf("%s: no record in the reply", what)
	}
	for _, k := range withheldKeys {
		switch v := m[k].(type) {
		case nil:
		case string:
			if v != "" {
				t.Errorf("%s: record carries %s = %q to a client without read scope", what, k, v)
			}
		case float64:
			if v != 0 {
				t.Errorf("%s: record carries %s = %v to a client without read scope", what, k, v)
			}
		case []any:
			if len(v) != 0 {
				t.Errorf("%s: record carries %s = %v to a client without read scope", what, k, v)
			}
		default:
			t.Errorf("%s: record carries %s = %v to a client without read scope", what, k, v)
		}
	}
	if str(m, "id") == "" || num(m, "revision") == 0 || str(m, "status") == "" || str(m, "updated_at") == "" {
		t.Errorf("%s: record %v lacks its id, revision, status or update time", what, m)
	}
}

// TestWithhold_NoReadScope holds issue 41 item 7 on every transport: a
// token client with write but not read scope gets ids, revisions and states
// back from memory_update (its 409 too), memory_evidence and
// memory_anchor_report, never the record's content; a reader's replies are
// whole.
func TestWithhold_NoReadScope(t *testing.T) {
	t.Parallel()
	o := testOptions()
	o.Clients = append(o.Clients, options.Client{Name: "scribe", Scopes: []options.Scope{options.ScopeWrite}})
	td := servertest.Start(t, o)
	owner, scribe := td.Tokens["claude-code"], td.Tokens["scribe"]
	if scribe == "" {
		t.Fatal("no token for scribe")
	}
	const secret = "The vault unseal key share lives in the basement safe."
	rest := td.REST
	for _, tr := range td.Transports() {
		t.Run(tr.Name(), func(t *testing.T) {
			t.Parallel()
			args := anchoredArgs("github/acme/withhold-"+tr.Name(), "Where the unseal share is", secret, "path:ops/unseal.md")
			args["topics"] = []string{"vault"}
			id := str(must(t, "store", rest.Call(t, owner, "memory_store", args)), "record", "id")

			evR := tr.Call(t, scribe, "memory_evidence", map[string]any{"id": id, "stance": "corroborates"})
			ev := must(t, "evidence", evR)
			checkWithheld(t, "evidence", get(ev, "record"))
			if num(ev, "record", "revision") != 2 || num(ev, "record", "proof_count") != 1 || str(ev, "why") != "1 for/0 against" {
				t.Errorf("evidence: %v, want revision 2, one proof and why", ev)
			}

			arR := tr.Call(t, scribe, "memory_anchor_report", map[string]any{"id": id, "anchor": "path:ops/unseal.md", "state": "unavailable"})
			ar := must(t, "anchor report", arR)
			checkWithheld(t, "anchor report", get(ar, "record"))
			if num(ar, "record", "revision") != 3 || str(ar, "results", 0, "state") != "unavailable" || num(ar, "changed") != 1 {
				t.Errorf("anchor report: %v, want revision 3 and the anchor unavailable", ar)
			}

			stale := tr.Call(t, scribe, "memory_update", map[string]any{"id": id, "revision": 1, "changes": map[string]any{"title": "Moved"}})
			if stale.OK || stale.Code != "ABORTED" || stale.HTTP != http.StatusConflict {
				t.Fatalf("stale update: %v, want ABORTED/409", stale)
			}
			if num(stale.Body, "error", "current_revision") != 3 {
				t.Errorf("stale update: %v, want current_revision 3", stale)
			}
			checkWithheld(t, "stale update", get(stale.Body, "error", "record"))

			upR := tr.Call(t, scribe, "memory_update", map[string]any{"id": id, "revision": 3, "changes": map[string]any{"topics": []string{"moved"}}})
			up := must(t, "update", upR)
			checkWithheld(t, "update", get(up, "record"))
			if num(up, "record", "revision") != 4 {
				t.Errorf("update: %v, want revision 4", up)
			}

			// The anchor report's servertest.Result line echoes the anchor the client
			// sent; nothing else of the record's text may appear.
			for name, r := range map[string]servertest.Result{"evidence": evR, "stale update": stale, "update": upR} {
				for _, w := range []string{"basement", "unseal", "vault", "withhold-"} {
					if strings.Contains(string(r.Raw), w) {
						t.Errorf("%s reply carries %q of the record: %s", name, w, r.Raw)
					}
				}
			}
			if strings.Contains(string(arR.Raw), "basement") || strings.Contains(string(arR.Raw), "withhold-") {
				t.Errorf("anchor report reply carries the record's content: %s", arR.Raw)
			}

			// A client with read scope still gets the whole record.
			whole := tr.Call(t, owner, "memory_update", map[string]any{"id": id, "revision": 1, "changes": map[string]any{"title": "x"}})
			if str(whole.Body, "error", "record", "content") != secret {
				t.Errorf("a reader's 409 lost the record: %v", whole)
			}
		})
	}
}
