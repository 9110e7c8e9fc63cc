package workers_test

import (
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/server/models"
	"github.com/hearth-memory/hearth/server/models/modeltest"
	"github.com/hearth-memory/hearth/storage"
)

// TestExtract_Receipts holds issue 39's extraction receipts: a reply read
// leaves what was kept and what was refused and why, with the reply and
// the input screened; a reply that is not JSON leaves an unparsable receipt
// with the reply, and the job's attempt fails (never a silent drop); a
// server that never answers leaves a failed one.
func TestExtract_Receipts(t *testing.T) {
	t.Parallel()
	receipts := func(t *testing.T, db *storage.DB) []*storage.ExtractionReceipt {
		t.Helper()
		rs, err := db.ExtractionReceipts(ctx, "", 50)
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	t.Run("OKKeptAndRefused", func(t *testing.T) {
		t.Parallel()
		srv := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "m1"})
		srv.Script(modeltest.Rule{Path: "/api/chat", Action: modeltest.Action{Content: memoriesReply(
			mem("decision", "Use WAL", "SQLite runs in WAL mode.", 0.9),
			mem("constraint", "CI token", "CI pushes with GITHUB_TOKEN="+fakeGitHubToken+" set.", 0.9),
			mem("gossip", "Not a type", "Dropped by the rules.", 0.5),
		)}})
		s := newModelSetup(t, models.Config{URL: srv.URL})
		j := enqueueExtraction(t, s.db, "", "notes with the decisions")
		if !runOnce(t, s.w) {
			t.Fatal("no job ran")
		}
		rs := receipts(t, s.db)
		if len(rs) != 1 {
			t.Fatalf("receipts: %d, want 1", len(rs))
		}
		r := rs[0]
		cands := candidates(t, s.db)
		if r.Outcome != storage.ReceiptKept || r.JobID != j.ID || r.Server != srv.URL || r.Model != "m1" || r.Namespace != "github/acme/api" ||
			len(r.Kept) != 1 || len(cands) != 1 || r.Kept[0] != cands[0].ID {
			t.Fatalf("receipt: %+v (candidates %d)", r, len(cands))
		}
		if len(r.Refused) != 2 || r.Refused[0].Index != 1 || !strings.Contains(r.Refused[0].Reason, "screen: memories[1].content matches") ||
			r.Refused[1].Index != 2 || !strings.Contains(r.Refused[1].Reason, "is not one of") {
			t.Fatalf("refused: %+v", r.Refused)
		}
		// The reply passed the screen before it was stored: the token is a
		// placeholder.
		if strings.Contains(r.Reply.String(), fakeGitHubToken) || !strings.Contains(r.Reply.String(), `"content":"[screened:github-token]"`) {
			t.Errorf("reply not screened: %s", r.Reply)
		}
		if !strings.Contains(r.Reply.String(), "Use WAL") || !strings.Contains(r.Input.String(), "notes with") {
			t.Errorf("receipt lost the reply or input: %+v", r)
		}
	})
	t.Run("OKUnparsable", func(t *testing.T) {
		t.Parallel()
		srv := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "m1"})
		srv.Script(modeltest.Rule{Path: "/api/chat", Action: modeltest.Action{Content: `Sure! Here are the memories: {"memories": [`}})
		s := newModelSetup(t, models.Config{URL: srv.URL})
		j := enqueueExtraction(t, s.db, "", "notes")
		if !runOnce(t, s.w) {
			t.Fatal("no job ran")
		}
		got, _ := s.db.Job(ctx, j.ID)
		if got.State != storage.JobQueued || got.Attempts != 1 || got.LastError == "" {
			t.Fatalf("job after an unparsable reply: %+v, want its attempt failed", got)
		}
		rs := receipts(t, s.db)
		if len(rs) != 1 || rs[0].Outcome != storage.ReceiptUnparsable || rs[0].Reply.String() != `Sure! Here are the memories: {"memories": [` ||
			rs[0].Model != "m1" || rs[0].Error.String() == "" || len(rs[0].Kept) != 0 {
			t.Fatalf("receipts: %+v", rs)
		}
		counts, err := s.db.ExtractionReceiptCounts(ctx)
		if err != nil || counts[storage.ReceiptUnparsable] != 1 {
			t.Fatalf("counts: %v %v", counts, err)
		}
	})
	t.Run("OKFailed", func(t *testing.T) {
		t.Parallel()
		srv := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "m1"})
		srv.Script(modeltest.Rule{Path: "/api/chat", Action: modeltest.Action{Status: 500}})
		s := newModelSetup(t, models.Config{URL: srv.URL})
		enqueueExtraction(t, s.db, "", "notes")
		if !runOnce(t, s.w) {
			t.Fatal("no job ran")
		}
		rs := receipts(t, s.db)
		if len(rs) != 1 || rs[0].Outcome != storage.ReceiptFailed || rs[0].Reply.String() != "" || !strings.Contains(rs[0].Error.String(), "500") {
			t.Fatalf("receipts: %+v", rs)
		}
	})
}
