package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/server/servertest"
	"github.com/hearth-memory/hearth/storage"
)

// withoutReplayed returns a close servertest.Result's JSON without its replayed flag.
func withoutReplayed(tb testing.TB, r servertest.Result) string {
	tb.Helper()
	body := map[string]any{}
	if err := json.Unmarshal(r.Raw, &body); err != nil {
		tb.Fatal(err)
	}
	delete(body, "replayed")
	b, _ := json.Marshal(body)
	return string(b)
}

// wantCloseRefused fails the test unless r failed with code, HTTP status and field.
func wantCloseRefused(tb testing.TB, r servertest.Result, code string, http int, field string) {
	tb.Helper()
	if r.OK || r.Code != code || r.HTTP != http || str(r.Body, "error", "field") != field {
		tb.Errorf("got %v, want %s / %d naming %s", r, code, http, field)
	}
}

// TestSession_Close holds R-Z1 and R-Z2 through REST, MCP and gRPC: a
// close keeps a receipt; the same client replaying the same inputs gets it
// back with replayed true; other inputs or another client are refused (409,
// ALREADY_EXISTS) and change nothing.
func TestSession_Close(t *testing.T) {
	t.Parallel()
	td := servertest.Start(t, testOptions())
	tok, other := td.Tokens["claude-code"], td.Tokens["codex"]
	for _, tr := range td.Transports() {
		t.Run(tr.Name(), func(t *testing.T) {
			op := "close-" + tr.Name() + "-0001"
			first := tr.Call(t, tok, "memory_session_close", closeArgs(op, "Moved the queue to SQLite.", "Leases survive restarts."))
			if !first.OK || get(first.Body, "replayed") != false {
				t.Fatalf("close: %v", first)
			}
			rc := get(first.Body, "receipt")
			if str(rc, "op_id") != op || str(rc, "session_id") != "sess-1" || str(rc, "namespace") != "github/acme/api" ||
				get(rc, "summary_kept") != true || get(rc, "notes_refused") != false || str(rc, "summary_id") != "" ||
				str(rc, "job_id") == "" || str(rc, "closed_at") == "" {
				t.Errorf("receipt = %s", first.Raw)
			}
			// The summary and notes wait for extraction in a screened job.
			job, err := td.DB.Job(context.Background(), str(rc, "job_id"))
			if err != nil {
				t.Fatal(err)
			}
			if job.Kind != storage.KindExtraction || job.State != storage.JobQueued ||
				!strings.Contains(job.Payload, "Moved the queue to SQLite.") || !strings.Contains(job.Payload, "Leases survive restarts.") {
				t.Errorf("job = %+v", job)
			}

			t.Run("Replay", func(t *testing.T) {
				again := tr.Call(t, tok, "memory_session_close", closeArgs(op, "Moved the queue to SQLite.", "Leases survive restarts."))
				if !again.OK || get(again.Body, "replayed") != true {
					t.Fatalf("replay: %v", again)
				}
				if a, b := withoutReplayed(t, first), withoutReplayed(t, again); a != b {
					t.Errorf("replayed receipt differs:\nfirst  %s\nreplay %s", a, b)
				}
			})
			t.Run("ErrOtherInputs", func(t *testing.T) {
				r := tr.Call(t, tok, "memory_session_close", closeArgs(op, "Moved the queue to Postgres.", "Leases survive restarts."))
				wantCloseRefused(t, r, "ALREADY_EXISTS", 409, "op_id")
			})
			t.Run("ErrOtherClient", func(t *testing.T) {
				r := tr.Call(t, other, "memory_session_close", closeArgs(op, "Moved the queue to SQLite.", "Leases survive restarts."))
				wantCloseRefused(t, r, "ALREADY_EXISTS", 409, "op_id")
			})
			t.Run("ErrBadOpID", func(t *testing.T) {
				r := tr.Call(t, tok, "memory_session_close", closeArgs("short", "x", ""))
				wantCloseRefused(t, r, "INVALID_ARGUMENT", 400, "op_id")
			})
			t.Run("ErrNoSessionID", func(t *testing.T) {
				args := closeArgs("close-"+tr.Name()+"-0002", "x", "")
				delete(args, "session_id")
				wantCloseRefused(t, tr.Call(t, tok, "memory_session_close", args), "INVALID_ARGUMENT", 400, "session_id")
			})
			t.Run("ErrNoToken", func(t *testing.T) {
				r := tr.Call(t, "", "memory_session_close", closeArgs("close-"+tr.Name()+"-0003", "x", ""))
				if r.OK || r.HTTP != 401 {
					t.Errorf("no token: %v", r)
				}
			})
		})
	}
	// The refusals were audited, and each close wrote one row.
	log, err := td.DB.AuditLog(context.Background(), 200)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[storage.Action]int{}
	for _, e := range log {
		counts[e.Action]++
	}
	if counts[storage.ActionSessionClose] != 3 || counts["refuse.conflict"] != 6 {
		t.Errorf("audit actions = %v, want 3 session-close and 6 refuse.conflict", counts)
	}
}

// TestSession_DoNotStore holds R-S4 and R-Z3: notes carrying do-not-store
// are refused and the summary still stored, as a candidate with
// summary_candidates on; a summary that screens as a secret refuses the call.
func TestSession_DoNotStore(t *testing.T) {
	t.Parallel()
	for _, candidates := range []bool{false, true} {
		name := map[bool]string{false: "ForExtraction", true: "SummaryCandidates"}[candidates]
		t.Run(name, func(t *testing.T) {
			o := testOptions()
			o.SummaryCandidates = candidates
			td := servertest.Start(t, o)
			tok := td.Tokens["claude-code"]
			for _, tr := range td.Transports() {
				t.Run(tr.Name(), func(t *testing.T) {
					notes := "Temporary staging creds, DO-NOT-STORE: the staging box is flaky."
					r := tr.Call(t, tok, "memory_session_close", closeArgs("dns-"+tr.Name()+"-0001", "Fixed the flaky deploy.", notes))
					if !r.OK {
						t.Fatalf("close: %v", r)
					}
					rc := get(r.Body, "receipt")
					if get(rc, "notes_refused") != true || str(rc, "notes_refused_pattern") != "no-store-marker" || get(rc, "summary_kept") != true {
						t.Errorf("receipt = %s", r.Raw)
					}
					if bytes.Contains(r.Raw, []byte("staging")) {
						t.Errorf("the refused notes came back: %s", r.Raw)
					}
					if candidates {
						if str(rc, "summary_id") == "" || str(rc, "job_id") != "" {
							t.Fatalf("receipt = %s, want a summary candidate and no job", r.Raw)
						}
						got := tr.Call(t, tok, "memory_get", map[string]any{"ids": []string{str(rc, "summary_id")}})
						rec := get(got.Body, "records", 0)
						if str(rec, "type") != "summary" || str(rec, "status") != "candidate" || str(rec, "source") != "session" ||
							str(rec, "content") != "Fixed the flaky deploy." || str(rec, "namespace") != "github/acme/api" || str(rec, "writer") != "claude-code" {
							t.Errorf("summary record = %v", got)
						}
						return
					}
					if str(rc, "summary_id") != "" || str(rc, "job_id") == "" {
						t.Fatalf("receipt = %s, want the summary in a job", r.Raw)
					}
					job, err := td.DB.Job(context.Background(), str(rc, "job_id"))
					if err != nil {
						t.Fatal(err)
					}
					if !strings.Contains(job.Payload, "Fixed the flaky deploy.") || strings.Contains(job.Payload, "staging") {
						t.Errorf("job payload = %s, want the summary without the notes", job.Payload)
					}
				})
			}
			t.Run("ErrSecretSummary", func(t *testing.T) {
				for _, tr := range td.Transports() {
					r := tr.Call(t, tok, "memory_session_close",
						closeArgs("secret-"+tr.Name()+"-01", "Set password=Xk9mP2vQ7rT4 on the staging box.", "Fine notes."))
					wantCloseRefused(t, r, "INVALID_ARGUMENT", 400, "summary")
					if p := str(r.Body, "error", "pattern"); p == "" || bytes.Contains(r.Raw, []byte("Xk9mP2vQ7rT4")) {
						t.Errorf("%s: refusal %s", tr.Name(), r.Raw)
					}
					if _, err := td.DB.Receipt(context.Background(), "secret-"+tr.Name()+"-01"); storage.ErrorCode(err) != storage.NotFound {
						t.Errorf("%s: a refused close kept a receipt: %v", tr.Name(), err)
					}
				}
			})
		})
	}
}

// TestSession_Expired holds R-Z2 and R-J4 with a moved clock: past
// retention_deleted_days a replay is refused as expired, 410 over REST and
// in the MCP error body, FAILED_PRECONDITION over gRPC; the daemon's
// maintenance, run at review_at by its workers, then turns the receipts into
// tombstones and writes its audit row.
func TestSession_Expired(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := newTestClock(time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC))
	o := testOptions()
	o.RetentionDeletedDays = 7
	td := servertest.StartAt(t, o, clock.Now)
	tok := td.Tokens["claude-code"]
	trs := td.Transports()
	replay := func(tr servertest.Transport) servertest.Result {
		return tr.Call(t, tok, "memory_session_close", closeArgs("exp-"+tr.Name()+"-0001", "Done.", ""))
	}
	for _, tr := range trs {
		if r := replay(tr); !r.OK || get(r.Body, "replayed") != false {
			t.Fatalf("%s close: %v", tr.Name(), r)
		}
	}
	// maintenanceRuns polls until the workers have run maintenance n times.
	maintenanceRuns := func(n int) []storage.AuditEntry {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			log, err := td.DB.AuditLog(ctx, 100)
			if err != nil {
				t.Fatal(err)
			}
			var runs []storage.AuditEntry
			for _, e := range log {
				if e.Action == storage.ActionMaintenance {
					runs = append(runs, e)
				}
			}
			if len(runs) >= n {
				return runs
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d maintenance runs, want %d", len(runs), n)
			}
			time.Sleep(20 * time.Millisecond) // polling a condition, not waiting for time
		}
	}

	// A second short of retention: replays still work. The first review_at
	// has passed, so maintenance runs, and keeps the receipts.
	clock.Add(7*24*time.Hour - time.Second)
	runs := maintenanceRuns(1)
	for _, tr := range trs {
		if r := replay(tr); !r.OK || get(r.Body, "replayed") != true {
			t.Fatalf("%s replay within retention: %v", tr.Name(), r)
		}
	}
	if !strings.Contains(runs[0].Detail.String(), "receipts tombstoned 0") {
		t.Errorf("first run: %q", runs[0].Detail.String())
	}

	// At retention: expired, before any maintenance.
	clock.Add(time.Second)
	for _, tr := range trs {
		r := replay(tr)
		wantCloseRefused(t, r, "FAILED_PRECONDITION", 410, "op_id")
		if str(r.Body, "error", "reason") != "expired" || num(r.Body, "error", "http_status") != 410 {
			t.Errorf("%s: expired body %s", tr.Name(), r.Raw)
		}
	}

	// Past the next review_at: the receipts become tombstones, and still
	// refuse a replay as expired.
	clock.Add(25 * time.Hour)
	runs = maintenanceRuns(2)
	if len(runs) != 2 || !strings.Contains(runs[0].Detail.String(), "receipts tombstoned 3") {
		t.Errorf("maintenance runs = %+v, want a second one tombstoning 3 receipts", runs)
	}
	for _, tr := range trs {
		rc, err := td.DB.Receipt(ctx, "exp-"+tr.Name()+"-0001")
		if err != nil || !rc.Tombstone {
			t.Errorf("%s receipt = %+v, %v; want a tombstone", tr.Name(), rc, err)
		}
		wantCloseRefused(t, replay(tr), "FAILED_PRECONDITION", 410, "op_id")
	}
}

// TestSession_ReviewAtOff: with review_at off no maintenance is queued.
func TestSession_ReviewAtOff(t *testing.T) {
	t.Parallel()
	o := testOptions()
	o.ReviewAt = options.ReviewAt{Off: true}
	td := servertest.Start(t, o)
	jobs, err := td.DB.Jobs(context.Background(), storage.KindMaintenance, "")
	if err != nil || len(jobs) != 0 {
		t.Errorf("maintenance jobs with review_at off: %+v %v", jobs, err)
	}
}

// TestSession_ReceiptSummary: the receipt says what became of the summary —
// a candidate with its id, kept for extraction with the job (and whether the
// job waits for a model server), or not kept — over every transport.
func TestSession_ReceiptSummary(t *testing.T) {
	t.Parallel()
	candidates := testOptions()
	candidates.SummaryCandidates = true
	withModel := testOptions()
	withModel.OllamaURL = "http://127.0.0.1:9/" // never called by a close
	for _, tt := range []struct {
		name    string
		opts    func() options.Options
		summary string
		want    string
		waiting bool
	}{
		{"Candidate", func() options.Options { return candidates }, "Chose SQLite.", "candidate", true}, // the notes wait
		{"ExtractionWaitsForModel", testOptions, "Chose SQLite.", "extraction", true},
		{"ExtractionWithModel", func() options.Options { return withModel }, "Chose SQLite.", "extraction", false},
		// The notes alone still go to extraction, which waits for a model.
		{"NotKept", testOptions, "", "not_kept", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			td := servertest.Start(t, tt.opts())
			for _, tr := range td.Transports() {
				r := tr.Call(t, td.Tokens["claude-code"], "memory_session_close", closeArgs("receipt-"+tr.Name()+"-01", tt.summary, "Some notes."))
				if !r.OK {
					t.Fatalf("%s: %v", tr.Name(), r)
				}
				rc := get(r.Body, "receipt")
				if str(rc, "summary") != tt.want || get(rc, "extraction_waiting") != tt.waiting {
					t.Errorf("%s: receipt %s, want summary %s, extraction_waiting %v", tr.Name(), r.Raw, tt.want, tt.waiting)
				}
				if (tt.want == "candidate") != (str(rc, "summary_id") != "") {
					t.Errorf("%s: summary_id %q with summary %s", tr.Name(), str(rc, "summary_id"), tt.want)
				}
				if tt.want == "extraction" && str(rc, "job_id") == "" {
					t.Errorf("%s: kept for extraction without a job_id", tr.Name())
				}
			}
		})
	}
}
