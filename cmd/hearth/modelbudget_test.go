package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/server/models/modeltest"
	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/testwait"
)

// TestModels_Budget holds issue 39's hard budget end to end: with
// model_daily_calls 1 the second session close's extraction waits, queued,
// and memory_status and /metrics say the budget is spent; memory_model_resume
// (gRPC) lets it run; memory_model_pause (MCP) holds the next one even past
// midnight, and the day rolling over lets a spent server call again. Pause
// and resume are audited with the admin's name.
func TestModels_Budget(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "m1"})
	srv.Script(modeltest.Rule{Path: "/api/chat", Action: modeltest.Action{Reply: func(c modeltest.Chat) string {
		_, rest, _ := strings.Cut(c.Messages[1].Content, "Decision ")
		title, _, _ := strings.Cut(rest, ".")
		return memoriesContent("Budget decision " + title)
	}}})
	opts := modelOptions(srv.URL)
	opts.ModelDailyCalls = 1
	opts.ReviewAt = options.ReviewAt{Off: true} // no nightly review: its calls would share the budget
	grantAdmin(&opts, "claude-code")
	clock := newTestClock(time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC))
	td := startDaemonAt(t, opts, clock)
	tok := td.tokens["claude-code"]
	rest, mcp, grpc := restTransport{td}, mcpTransport{td: td}, grpcTransport{td: td}
	waitProbed(t, td, srv.URL)
	closes := 0
	closeOne := func() {
		t.Helper()
		closes++
		r := rest.call(t, tok, "memory_session_close", closeArgs(fmt.Sprintf("budget-%d", closes), "", fmt.Sprintf("Decision %d. Settled.", closes)))
		if !r.ok {
			t.Fatalf("close %d: %v", closes, r)
		}
	}
	waitsWithStatus := func(what string, paused bool) {
		t.Helper()
		// The job is not leased while the budget holds it: it stays queued
		// with no attempt through many polls of the runner.
		time.Sleep(3 * time.Second)
		queued, err := td.db.Jobs(t.Context(), storage.KindExtraction, storage.JobQueued)
		if err != nil || len(queued) != 1 || queued[0].Attempts != 0 {
			t.Fatalf("%s: queued extractions %+v %v, want one with no attempt", what, queued, err)
		}
		for _, tr := range transports(td) {
			st := tr.call(t, tok, "memory_status", map[string]any{})
			if get(st.body, "model_budget", "waiting") != true || get(st.body, "model_budget", "paused") != paused ||
				str(st.body, "model_budget", "daily_calls") != "1" || num(st.body, "jobs_waiting_for_model") != 1 {
				t.Fatalf("%s over %s: memory_status %s", what, tr.name(), st.raw)
			}
		}
	}

	closeOne()
	testwait.WaitFor(t, "the first extraction", jobsDone(t, td, storage.KindExtraction, 1))
	closeOne()
	waitsWithStatus("spent", false)
	st := rest.call(t, tok, "memory_status", map[string]any{})
	if s := serverEntry(st.body, srv.URL); get(s, "budget_spent") != true || str(s, "calls_today") != "1" ||
		str(s, "prompt_tokens_today") != "34" || str(s, "reply_tokens_today") != "12" {
		t.Fatalf("server after its cap: %v", s)
	}
	code, _, text := scrape(t, td, tok)
	fams := parseMetrics(t, text)
	for name, want := range map[string]float64{"hearth_model_budget_spent": 1, "hearth_model_calls_today": 1, "hearth_model_tokens_today": 46} {
		if v, ok := sample(fams, name, map[string]string{"tier": "primary", "position": "0"}); code != 200 || !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", name, v, ok, want)
		}
	}
	if n := srv.Count("/api/chat"); n != 1 {
		t.Fatalf("chats past the cap: got %d, want 1", n)
	}

	r := grpc.call(t, tok, "memory_model_resume", map[string]any{})
	if !r.ok || get(r.body, "resumed") == true || str(r.body, "spent", 0, "calls") != "1" {
		t.Fatalf("resume: %v", r)
	}
	testwait.WaitFor(t, "the second extraction", jobsDone(t, td, storage.KindExtraction, 2))

	if r := mcp.call(t, tok, "memory_model_pause", map[string]any{}); !r.ok || get(r.body, "paused") != true {
		t.Fatalf("pause: %v", r)
	}
	closeOne()
	clock.Add(24 * time.Hour) // a pause outlasts the day
	waitsWithStatus("paused", true)
	if r := rest.call(t, tok, "memory_model_resume", map[string]any{}); !r.ok || get(r.body, "resumed") != true {
		t.Fatalf("resume: %v", r)
	}
	testwait.WaitFor(t, "the third extraction", jobsDone(t, td, storage.KindExtraction, 3))

	// The third call spent the new day's budget: the fourth waits for the
	// day after.
	closeOne()
	waitsWithStatus("spent again", false)
	clock.Add(24 * time.Hour)
	testwait.WaitFor(t, "the fourth extraction, the next day", jobsDone(t, td, storage.KindExtraction, 4))
	if n := srv.Count("/api/chat"); n != 4 {
		t.Errorf("chats: got %d, want 4", n)
	}

	a := rest.call(t, tok, "memory_audit", map[string]any{"limit": 500})
	var pauses, resumes int
	for _, e := range list(a.body, "entries") {
		switch str(e, "action") {
		case string(storage.ActionModelPause):
			pauses++
		case string(storage.ActionModelResume):
			resumes++
			if str(e, "client") != "claude-code" || !strings.Contains(str(e, "detail"), "starts over") {
				t.Errorf("resume audit: %v", e)
			}
		}
	}
	if pauses != 1 || resumes != 2 {
		t.Errorf("audit: %d pauses, %d resumes; want 1 and 2", pauses, resumes)
	}
}

// TestModels_Receipts holds issue 39's extraction receipts over REST, MCP
// and gRPC: a reply read leaves its kept and refused memories, the secret
// in it screened; a reply that is not JSON leaves an unparsable receipt,
// counted in memory_status and /metrics; memory_extraction_rerun queues
// the input again with another model, whose receipt names the first. Both
// tools need the admin scope.
func TestModels_Receipts(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "m1"}, modeltest.Model{Name: "m2"})
	srv.Script(
		modeltest.Rule{Path: "/api/chat", Model: "m1", Times: 1, Action: modeltest.Action{Content: `{"memories":[` +
			`{"type":"decision","title":"Use WAL","content":"SQLite runs in WAL mode.","confidence":0.9},` +
			`{"type":"constraint","title":"CI token","content":"CI pushes with GITHUB_TOKEN=` + secretGitHub + `.","confidence":0.9}]}`}},
		modeltest.Rule{Path: "/api/chat", Model: "m1", Action: modeltest.Action{Content: `Here you go: {"memories": [`}},
		modeltest.Rule{Path: "/api/chat", Model: "m2", Action: modeltest.Action{Content: memoriesContent("Rerun decision")}},
	)
	opts := modelOptions(srv.URL)
	grantAdmin(&opts, "claude-code")
	td := startDaemon(t, opts)
	tok := td.tokens["claude-code"]
	rest, mcp := restTransport{td}, mcpTransport{td: td}
	waitProbed(t, td, srv.URL)
	for i := range 2 {
		if r := rest.call(t, tok, "memory_session_close", closeArgs(fmt.Sprintf("receipt-%d", i), "", "We chose WAL.")); !r.ok {
			t.Fatalf("close: %v", r)
		}
	}
	receipts := func(tr transport) []any {
		r := tr.call(t, tok, "memory_extraction_receipts", map[string]any{"limit": 50})
		if !r.ok {
			t.Fatalf("%s receipts: %v", tr.name(), r)
		}
		return list(r.body, "receipts")
	}
	testwait.WaitFor(t, "the unparsable receipt", func() bool { return len(receipts(rest)) >= 2 })
	var kept, unparsable map[string]any
	for _, tr := range transports(td) {
		for _, x := range receipts(tr) {
			m, _ := x.(map[string]any)
			switch str(m, "outcome") {
			case storage.ReceiptKept:
				kept = m
			case storage.ReceiptUnparsable:
				unparsable = m
			}
		}
		if kept == nil || unparsable == nil {
			t.Fatalf("%s: kept %v unparsable %v", tr.name(), kept, unparsable)
		}
		if len(list(kept, "kept")) != 1 || num(kept, "refused", 0, "index") != 1 ||
			!strings.Contains(str(kept, "refused", 0, "reason"), "screen:") || str(kept, "model") != "m1" ||
			strings.Contains(str(kept, "reply"), secretGitHub) || !strings.Contains(str(kept, "reply"), "Use WAL") ||
			!strings.Contains(str(kept, "input"), "We chose WAL.") {
			t.Errorf("%s kept receipt: %v", tr.name(), kept)
		}
		if str(unparsable, "reply") != `Here you go: {"memories": [` || str(unparsable, "error") == "" {
			t.Errorf("%s unparsable receipt: %v", tr.name(), unparsable)
		}
		st := tr.call(t, tok, "memory_status", map[string]any{})
		if num(st.body, "extractions", "unparsable") < 1 || num(st.body, "extractions", "kept") != 1 {
			t.Errorf("%s status extractions: %v", tr.name(), get(st.body, "extractions"))
		}
	}
	_, _, text := scrape(t, td, tok)
	if v, ok := sample(parseMetrics(t, text), "hearth_extraction_receipts", map[string]string{"outcome": "unparsable"}); !ok || v < 1 {
		t.Errorf("hearth_extraction_receipts{unparsable} = %v (present %v)", v, ok)
	}
	// A client without the admin scope reads none.
	if r := rest.call(t, td.tokens["codex"], "memory_extraction_receipts", map[string]any{}); r.ok || r.code != "PERMISSION_DENIED" {
		t.Errorf("receipts without admin: %v", r)
	}
	r := mcp.call(t, tok, "memory_extraction_rerun", map[string]any{"receipt_id": str(unparsable, "id"), "model": "m2"})
	if !r.ok || get(r.body, "queued") != true {
		t.Fatalf("rerun: %v", r)
	}
	again := grpcTransport{td: td}.call(t, tok, "memory_extraction_rerun", map[string]any{"receipt_id": str(unparsable, "id"), "model": "m2"})
	if !again.ok || get(again.body, "queued") == true || str(again.body, "job_id") != str(r.body, "job_id") {
		t.Fatalf("the same rerun again: %v (first %v)", again, r)
	}
	var rerun map[string]any
	testwait.WaitFor(t, "the rerun's receipt", func() bool {
		for _, x := range receipts(rest) {
			if m, _ := x.(map[string]any); str(m, "rerun_of") == str(unparsable, "id") {
				rerun = m
				return true
			}
		}
		return false
	})
	if str(rerun, "outcome") != storage.ReceiptKept || str(rerun, "model") != "m2" || len(list(rerun, "kept")) != 1 {
		t.Errorf("rerun receipt: %v", rerun)
	}
	if r := rest.call(t, tok, "memory_extraction_rerun", map[string]any{"receipt_id": "01JD3M5ZK9Q8W7E6R5T4Y3X2V1"}); r.ok || r.code != "NOT_FOUND" || str(r.body, "error", "field") != "receipt_id" {
		t.Errorf("unknown receipt: %v", r)
	}
}
