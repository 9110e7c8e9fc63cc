package storage_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// TestDB_DeferJob holds that a deferred job waits, queued, with its attempt
// given back: a job deferred more times than its attempt limit still runs.
func TestDB_DeferJob(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	clk := newClock(db, t0)
	e := enqueue(t, db, storage.NewJob{MaxAttempts: 1})
	for i := range 3 {
		j := lease(t, db, "w1")
		if j == nil || j.Attempts != 1 {
			t.Fatalf("lease %d: %+v", i, j)
		}
		if err := db.DeferJob(ctx, j, text(t, "the model budget is spent"), clk.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		got := job(t, db, e.ID)
		if got.State != storage.JobQueued || got.Attempts != 0 || got.LastError != "the model budget is spent" || got.LeaseOwner != "" {
			t.Fatalf("deferred %d: %+v", i, got)
		}
		if j := lease(t, db, "w1"); j != nil {
			t.Fatalf("leased before run_after: %+v", j)
		}
		clk.Add(time.Minute)
	}
	j := lease(t, db, "w1")
	if err := db.CompleteJob(ctx, j, nil); err != nil {
		t.Fatal(err)
	}
	// A lost lease is refused.
	enqueue(t, db, storage.NewJob{})
	j = lease(t, db, "w1")
	stale := *j
	stale.Attempts = 7
	if err := db.DeferJob(ctx, &stale, text(t, "x"), clk.Now()); storage.ErrorCode(err) != storage.Conflict {
		t.Fatalf("lost lease: got %v, want Conflict", err)
	}
}

// TestDB_ModelBudget holds the model usage of a day, summed per server, the
// pause, and the resume that forgets the day's usage; both audited.
func TestDB_ModelBudget(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	newClock(db, t0)
	day := t0.Format(time.DateOnly)
	for range 2 {
		if err := db.AddModelUsage(ctx, day, "http://a:11434", storage.ModelUsage{Calls: 1, PromptTokens: 30, CompletionTokens: 10, Estimated: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.AddModelUsage(ctx, "2000-01-01", "http://a:11434", storage.ModelUsage{Calls: 1}); err != nil {
		t.Fatal(err)
	}
	got, paused, err := db.ModelBudget(ctx, day)
	if err != nil || paused || got["http://a:11434"] != (storage.ModelUsage{Calls: 2, PromptTokens: 60, CompletionTokens: 20, Estimated: 2}) || len(got) != 1 {
		t.Fatalf("ModelBudget: %+v %v %v", got, paused, err)
	}
	if old, _, _ := db.ModelBudget(ctx, "2000-01-01"); len(old) != 0 {
		t.Errorf("a day older than a week is kept: %+v", old)
	}
	if err := db.PauseModels(ctx, true, day, "admin", text(t, "paused")); err != nil {
		t.Fatal(err)
	}
	if got, paused, _ = db.ModelBudget(ctx, day); !paused || len(got) != 1 {
		t.Fatalf("paused: %v %+v", paused, got)
	}
	if err := db.PauseModels(ctx, false, day, "admin", text(t, "resumed")); err != nil {
		t.Fatal(err)
	}
	if got, paused, _ = db.ModelBudget(ctx, day); paused || len(got) != 0 {
		t.Fatalf("resumed: %v %+v", paused, got)
	}
	rows, err := db.AuditLog(ctx, 2)
	if err != nil || len(rows) != 2 || rows[0].Action != storage.ActionModelResume || rows[1].Action != storage.ActionModelPause || rows[0].Client != "admin" {
		t.Fatalf("audit: %+v %v", rows, err)
	}
}

// TestDB_ExtractionReceipts holds a receipt as written (its reply cut at
// MaxReceiptReply), read newest first or by id, counted by outcome, and
// purged by maintenance after the retention.
func TestDB_ExtractionReceipts(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	clk := newClock(db, t0)
	long := strings.Repeat("é", storage.MaxReceiptReply) // two bytes each
	a, err := db.StoreExtractionReceipt(ctx, storage.NewExtractionReceipt{JobID: "j1", Namespace: "global", Client: "codex",
		Outcome: storage.ReceiptKept, Input: text(t, `{"notes":"n"}`), Reply: text(t, long), Kept: []string{"r1"},
		Refused: []storage.Refused{{Index: 1, Reason: "repeats memories[0]"}}})
	if err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Second)
	b, err := db.StoreExtractionReceipt(ctx, storage.NewExtractionReceipt{JobID: "j2", Namespace: "global", Client: "codex",
		Outcome: storage.ReceiptUnparsable, Input: text(t, `{}`), Reply: text(t, "not json"), Error: text(t, "bad")})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := db.ExtractionReceipts(ctx, "", 10)
	if err != nil || len(rs) != 2 || rs[0].ID != b || rs[1].ID != a {
		t.Fatalf("newest first: %+v %v", rs, err)
	}
	if r := rs[1]; len(r.Reply.String()) > storage.MaxReceiptReply+10 || !strings.HasSuffix(r.Reply.String(), "…[cut]") ||
		len(r.Kept) != 1 || r.Refused[0].Index != 1 || !utf8.ValidString(r.Reply.String()) {
		t.Fatalf("receipt a: kept %v refused %v reply %d bytes", r.Kept, r.Refused, len(r.Reply.String()))
	}
	if one, err := db.ExtractionReceipts(ctx, b, 1); err != nil || len(one) != 1 || one[0].Outcome != storage.ReceiptUnparsable {
		t.Fatalf("by id: %+v %v", one, err)
	}
	if _, err := db.ExtractionReceipts(ctx, "01JD3M5ZK9Q8W7E6R5T4Y3X2V1", 1); storage.ErrorCode(err) != storage.NotFound {
		t.Fatalf("unknown id: %v", err)
	}
	if n, err := db.ExtractionReceiptCounts(ctx); err != nil || n[storage.ReceiptKept] != 1 || n[storage.ReceiptUnparsable] != 1 {
		t.Fatalf("counts: %v %v", n, err)
	}
	clk.Add(31 * 24 * time.Hour)
	rep, err := db.Maintain(ctx, storage.Maintenance{Retention: 30 * 24 * time.Hour})
	if err != nil || rep.ExtractionReceiptsPurged != 2 {
		t.Fatalf("maintain: %+v %v", rep, err)
	}
	if rs, _ := db.ExtractionReceipts(ctx, "", 10); len(rs) != 0 {
		t.Fatalf("after the retention: %d receipts", len(rs))
	}
}
