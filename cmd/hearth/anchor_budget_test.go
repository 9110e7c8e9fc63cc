package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage"
)

// flagsOf returns, for a bootstrap body's items, the flag each carries
// (anchor and count), keyed by id.
func flagsOf(tb testing.TB, text string) map[string]string {
	tb.Helper()
	var b struct {
		Items []struct {
			ID          string `json:"id"`
			Unavailable *struct {
				Anchor string `json:"anchor"`
				Since  string `json:"since"`
				Count  int    `json:"count"`
			} `json:"unavailable"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(text), &b); err != nil {
		tb.Fatal(err)
	}
	out := map[string]string{}
	for _, it := range b.Items {
		if it.Unavailable != nil {
			since := it.Unavailable.Since
			if ts, err := time.Parse(time.RFC3339Nano, since); err == nil {
				since = ts.UTC().Format(time.RFC3339Nano)
			}
			out[it.ID] = fmt.Sprintf("%s x%d since %s", it.Unavailable.Anchor, it.Unavailable.Count, since)
		} else {
			out[it.ID] = ""
		}
	}
	return out
}

// wantFlags is what storage flags for the chain, in the same form.
func wantFlags(tb testing.TB, td *testDaemon, chain []string) map[string]string {
	tb.Helper()
	all, err := td.db.Bootstrap(context.Background(), storage.BootstrapQuery{Namespaces: chain, Limit: 1 << 30})
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]string{}
	for _, it := range all.Items {
		if f := it.Unavailable; f.Count > 0 {
			since := ""
			if !f.Since.IsZero() {
				since = f.Since.UTC().Format(time.RFC3339Nano)
			}
			out[it.ID] = fmt.Sprintf("%s x%d since %s", f.Anchor, f.Count, since)
		} else {
			out[it.ID] = ""
		}
	}
	return out
}

// TestBudget_BootstrapAnchors holds R-B1 and R-B6 with anchors: records
// whose anchors are unavailable (reported through memory_anchor_report,
// with anchors up to 300 characters) are listed in the packet's own
// section, or flagged in place when durable, each saying which anchor and
// since when, and the REST body and the whole MCP reply stay within 2,000
// bytes.
func TestBudget_BootstrapAnchors(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, budgetOptions())
	tok := td.tokens["claude-code"]
	rest := restTransport{td}
	fillBudgetStore(t, td, 1500, 3)
	ns := "github/acme/api"
	long := func(i int) string {
		p := fmt.Sprintf("path:deploy/%02d/", i)
		return p + strings.Repeat("v", 300-len(p)-len(".yaml")) + ".yaml"
	}
	var reports []any
	for i := range 12 {
		typ := []string{"note", "constraint", "summary"}[i%3]
		args := anchoredArgs(ns, fmt.Sprintf("Depends on deploy file %d", i), "Read from the deploy folder.", long(i), "host:build")
		args["type"] = typ
		id := str(must(t, "store", rest.call(t, tok, "memory_store", args)), "record", "id")
		reports = append(reports, map[string]any{"id": id, "anchor": long(i), "state": "unavailable", "detail": "moved"})
	}
	r := must(t, "report", rest.call(t, tok, "memory_anchor_report", map[string]any{"reports": reports}))
	if num(r, "changed") != 12 {
		t.Fatalf("reports: %v", r)
	}

	for _, c := range []struct {
		ns     string
		topics []string
	}{
		{ns, nil},
		{ns, []string{"go", "db"}},
		{"github/acme/web", nil},
	} {
		args := map[string]any{"namespace": c.ns, "topics": c.topics}
		chain := chainOf(t, td, c.ns, c.topics)
		want := wantFlags(t, td, chain)
		name := fmt.Sprintf("%s+%d topics", c.ns, len(c.topics))
		check := func(name, text string) {
			got := checkBootstrapBody(t, td, text, chain, name)
			flags := flagsOf(t, text)
			flagged := 0
			for i, it := range got.Items {
				if flags[it.ID] != want[it.ID] {
					t.Errorf("%s: item %d flag %q, want %q", name, i, flags[it.ID], want[it.ID])
				}
				if flags[it.ID] != "" {
					flagged++
					if it.Reason == storage.ReasonDurable {
						t.Errorf("%s: flagged item %d has reason durable", name, i)
					}
				}
			}
			if c.ns == ns && flagged == 0 {
				t.Errorf("%s: no flagged item in the packet", name)
			}
		}
		code, body := restCall(t, td, tok, "memory_bootstrap", args)
		if code != http.StatusOK || len(body) > bootstrapBytes {
			t.Fatalf("%s REST: HTTP %d, %d bytes", name, code, len(body))
		}
		check(name+" REST", string(body))
		for _, id := range []any{1, strings.Repeat("x", 600)} {
			raw := mcpCall(t, td, tok, id, "memory_bootstrap", args, false)
			text, isErr := replyText(t, raw)
			if isErr || len(raw) > bootstrapBytes {
				t.Fatalf("%s MCP id %.10v: error %v, %d bytes", name, id, isErr, len(raw))
			}
			check(fmt.Sprintf("%s MCP id %.10v", name, id), text)
		}
	}
}

// TestBudget_BootstrapFirstFlagged holds R-B5 for a flagged first item: when
// its flag (a 300-character anchor) leaves no room, the flag gives way and
// the item stays, its reason still anchor-unavailable; the packet is refused
// only when the bare item does not fit either.
func TestBudget_BootstrapFirstFlagged(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, testOptions())
	tok := td.tokens["claude-code"]
	rest := restTransport{td}
	ns := "github/acme/" + strings.Repeat("f", 160-len("github/acme/"))
	anchor := "path:" + strings.Repeat("d", 300-len("path:"))
	args := anchoredArgs(ns, strings.Repeat("Long title ", 18), "c", anchor)
	args["type"] = "constraint"
	id := str(must(t, "store", rest.call(t, tok, "memory_store", args)), "record", "id")
	must(t, "report", rest.call(t, tok, "memory_anchor_report", map[string]any{"id": id, "anchor": anchor, "state": "unavailable"}))
	topics := make([]string, 8)
	for i := range topics {
		topics[i] = fmt.Sprintf("%02d", i) + strings.Repeat("q", 38)
	}
	req := map[string]any{"namespace": ns, "topics": topics}
	var flagged, bare, refused int
	for n := 0; n <= 2000; n += 20 {
		raw := mcpCall(t, td, tok, strings.Repeat("i", n+1), "memory_bootstrap", req, false)
		text, isErr := replyText(t, raw)
		if isErr {
			refused++
			continue
		}
		if len(raw) > bootstrapBytes {
			t.Fatalf("id of %d bytes: reply of %d bytes", n+1, len(raw))
		}
		var b struct {
			Items []struct {
				ID, Reason  string
				Unavailable any
			} `json:"items"`
		}
		if err := json.Unmarshal([]byte(text), &b); err != nil || len(b.Items) != 1 || b.Items[0].ID != id || b.Items[0].Reason != storage.ReasonAnchorUnavailable {
			t.Fatalf("id of %d bytes: %s", n+1, text)
		}
		if b.Items[0].Unavailable != nil {
			flagged++
		} else {
			bare++
		}
	}
	if flagged == 0 || bare == 0 || refused == 0 {
		t.Errorf("replies: %d flagged, %d with the flag given way, %d refused; want each at some request id length", flagged, bare, refused)
	}
}
