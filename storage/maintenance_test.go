package storage_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

const days = 24 * time.Hour

func TestDB_Maintain(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	clk := newClock(db, t0)
	m := storage.Maintenance{CandidateExpiry: 14 * days, Retention: 30 * days}

	// At t0: an old candidate, a record forgotten with its anchor, usage and
	// full text, a session receipt, a finished job and a failed one.
	oldCand := storagetest.Store(t, db, storage.NewRecord{Status: storage.StatusCandidate, Title: text(t, "old candidate")})
	gone := storagetest.Store(t, db, storage.NewRecord{
		Title: text(t, "zebrafish"), Content: text(t, "quagga"), Anchors: storagetest.Texts(t, "path:a.go"),
	})
	if err := db.CountReturned(ctx, []string{gone.ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Forget(ctx, gone.ID, 0, text(t, "obsolete"), "test"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.CloseSession(ctx, sessionClose(t, "op-00001", "Did X.", "")); err != nil {
		t.Fatal(err)
	}
	enqueue(t, db, storage.NewJob{})
	if err := db.CompleteJob(ctx, lease(t, db, "w"), nil); err != nil {
		t.Fatal(err)
	}
	failed := enqueue(t, db, storage.NewJob{MaxAttempts: 1})
	if err := db.FailJob(ctx, lease(t, db, "w"), text(t, "broken"), 0); err != nil {
		t.Fatal(err)
	}
	// Ten days later: a young candidate and a live record.
	clk.Add(10 * days)
	youngCand := storagetest.Store(t, db, storage.NewRecord{Status: storage.StatusCandidate, Title: text(t, "young candidate")})
	live := storagetest.Store(t, db, storage.NewRecord{Title: text(t, "live")})

	// Day 20: nothing is old enough but the first candidate.
	clk.Add(10 * days)
	rep, err := db.Maintain(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if want := (storage.MaintenanceReport{CandidatesExpired: 1}); *rep != want {
		t.Errorf("day 20: %+v, want %+v", *rep, want)
	}
	if r := get(t, db, oldCand.ID); r.Status != storage.StatusDeleted || r.Revision != 2 {
		t.Errorf("old candidate = %s rev %d, want deleted rev 2", r.Status, r.Revision)
	}
	if r := get(t, db, youngCand.ID); r.Status != storage.StatusCandidate {
		t.Errorf("young candidate = %s", r.Status)
	}
	log, _ := db.AuditLog(ctx, 2)
	if len(log) != 2 || log[0].Action != storage.ActionMaintenance || log[0].Client != storage.SystemClient ||
		log[0].Detail.String() != "candidates expired 1, records purged 0, receipts tombstoned 0, jobs purged 0" ||
		log[1].Action != storage.ActionForget || log[1].RecordID != oldCand.ID || log[1].Client != storage.SystemClient {
		t.Errorf("audit = %+v", log)
	}

	// Day 30: retention has passed for everything of t0.
	clk.Add(10 * days)
	rep, err = db.Maintain(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if want := (storage.MaintenanceReport{CandidatesExpired: 1, RecordsPurged: 1, ReceiptsTombstoned: 1, JobsPurged: 1}); *rep != want {
		t.Errorf("day 30: %+v, want %+v", *rep, want)
	}
	if recs, _ := db.Get(ctx, []string{gone.ID}); len(recs) != 0 {
		t.Errorf("forgotten record not purged")
	}
	for what, q := range map[string]string{
		"anchors":   fmt.Sprintf(`SELECT COUNT(*) FROM anchors WHERE record_id = '%s'`, gone.ID),
		"usage":     fmt.Sprintf(`SELECT COUNT(*) FROM usage WHERE record_id = '%s'`, gone.ID),
		"full text": `SELECT COUNT(*) FROM records_fts WHERE records_fts MATCH 'zebrafish OR quagga'`,
	} {
		if what == "full text" && storagetest.Postgres() {
			// PostgreSQL's index is the records' own column: the words
			// go with the row (docs/postgres.md, The schema).
			q = `SELECT COUNT(*) FROM records WHERE fts @@ to_tsquery('hearth', 'zebrafish | quagga')`
		}
		if n := countRows(t, db, q); n != 0 {
			t.Errorf("%s of the purged record: %d rows left", what, n)
		}
	}
	// The candidate forgotten on day 20 waits for its own retention.
	if r := get(t, db, oldCand.ID); r.Status != storage.StatusDeleted {
		t.Errorf("old candidate = %s", r.Status)
	}
	if r, _ := db.Receipt(ctx, "op-00001"); r == nil || !r.Tombstone {
		t.Errorf("receipt = %+v, want a tombstone", r)
	}
	if j := job(t, db, failed.ID); j.State != storage.JobFailed {
		t.Errorf("failed job = %+v, want kept", j)
	}
	if r := get(t, db, live.ID); r.Status != storage.StatusActive {
		t.Errorf("live record = %s", r.Status)
	}

	// Day 50: the candidate forgotten on day 20 is purged; the receipt's
	// tombstone stays.
	clk.Add(20 * days)
	rep, err = db.Maintain(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if want := (storage.MaintenanceReport{RecordsPurged: 1}); *rep != want {
		t.Errorf("day 50: %+v, want %+v", *rep, want)
	}
	if n := countRows(t, db, `SELECT COUNT(*) FROM receipts`); n != 1 {
		t.Errorf("%d receipts, want the tombstone", n)
	}
}

func TestDB_Maintain_ExpiryOff(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	clk := newClock(db, t0)
	c := storagetest.Store(t, db, storage.NewRecord{Status: storage.StatusCandidate})
	clk.Add(365 * days)
	rep, err := db.Maintain(ctx, storage.Maintenance{Retention: 30 * days})
	if err != nil {
		t.Fatal(err)
	}
	if rep.CandidatesExpired != 0 || get(t, db, c.ID).Status != storage.StatusCandidate {
		t.Errorf("candidate_expiry_days 0 expired a candidate: %+v", rep)
	}
}

func TestDB_Maintain_ErrInvalid(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	_, err := db.Maintain(ctx, storage.Maintenance{})
	wantErr(t, err, storage.Invalid, "retention")
	_, err = db.Maintain(ctx, storage.Maintenance{Retention: days, CandidateExpiry: -1})
	wantErr(t, err, storage.Invalid, "candidate_expiry")
}

// TestDB_MaintainPrunesAudit holds audit_retention_days: a run deletes the
// audit rows past the retention but those of records still held, the
// usage-start row and the newest backup row; it writes one audit.prune row
// saying how many went and up to when; a row inside the retention still
// cannot be deleted; and a retention of 0 keeps everything.
func TestDB_MaintainPrunesAudit(t *testing.T) {
	t.Parallel()
	path := storagetest.Place(t)
	db := storagetest.OpenPath(t, path)
	clk := newClock(db, t0)
	for i := range 20 {
		if err := db.Refuse(ctx, storage.RefusalEntry{Client: "lan-reader", Action: storage.ActionRefuseAuth, Detail: fmt.Sprintf("refusal %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range []storage.Action{storage.ActionBackup, storage.ActionBackup, storage.ActionUsageStart} {
		if err := db.Audit(ctx, storage.AuditEntry{Client: storage.SystemClient, Action: a}); err != nil {
			t.Fatal(err)
		}
	}
	live := storagetest.Store(t, db, storage.NewRecord{Title: text(t, "kept with its history")})
	gone := storagetest.Store(t, db, storage.NewRecord{Title: text(t, "forgotten and purged")})
	if _, err := db.Forget(ctx, gone.ID, 0, text(t, "obsolete"), "test"); err != nil {
		t.Fatal(err)
	}
	clk.Add(400 * days)
	if err := db.Refuse(ctx, storage.RefusalEntry{Client: "lan-reader", Action: storage.ActionRefuseAuth, Detail: "young"}); err != nil {
		t.Fatal(err)
	}
	before := auditCount(t, db)

	if rep, err := db.Maintain(ctx, storage.Maintenance{Retention: 30 * days}); err != nil || rep.AuditPruned != 0 {
		t.Fatalf("without an audit retention: %+v %v, want nothing pruned", rep, err)
	}
	rep, err := db.Maintain(ctx, storage.Maintenance{Retention: 30 * days, AuditRetention: 365 * days})
	if err != nil {
		t.Fatal(err)
	}
	// Gone: 20 refusals, the older backup row, and the purged record's
	// store and forget rows.
	if rep.AuditPruned != 23 {
		t.Errorf("AuditPruned = %d, want 23", rep.AuditPruned)
	}
	prunes := auditRows(t, db, storage.ActionAuditPrune)
	want := fmt.Sprintf("pruned 23 audit rows up to %s UTC (audit_retention_days 365)", t0.Add(35*days).Format("2006-01-02 15:04:05"))
	if len(prunes) != 1 || prunes[0].Detail.String() != want || prunes[0].Client != storage.SystemClient {
		t.Errorf("audit.prune rows %+v, want one saying %q", prunes, want)
	}
	// Two maintenance rows and the prune row were added.
	if got, want := auditCount(t, db), before-23+3; got != want {
		t.Errorf("%d audit rows after the prune, want %d", got, want)
	}
	left := map[storage.Action]int{}
	for _, e := range auditAll(t, db) {
		left[e.Action]++
	}
	if left[storage.ActionBackup] != 1 || left[storage.ActionUsageStart] != 1 || left[storage.ActionRefuseAuth] != 1 {
		t.Errorf("left %v: want the newest backup row, the usage-start row and the young refusal", left)
	}
	if h, err := db.History(ctx, live.ID, 10); err != nil || h.Total != 1 {
		t.Errorf("history of the live record after the prune: %+v %v, want its store row", h, err)
	}
	if rep, _ := db.Maintain(ctx, storage.Maintenance{Retention: 30 * days, AuditRetention: 365 * days}); rep.AuditPruned != 0 || len(auditRows(t, db, storage.ActionAuditPrune)) != 1 {
		t.Errorf("a second run pruned %d rows, or wrote a prune row for none", rep.AuditPruned)
	}

	// The audit stays append-only inside the retention, for any client
	// of the database: the schema's triggers refuse.
	raw := storagetest.OpenRaw(t, path)
	if _, err := raw.Exec(`DELETE FROM audit WHERE detail = 'young'`); err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Errorf("deleting a row inside the retention: %v, want refused as append-only", err)
	}
	if _, err := raw.Exec(`UPDATE audit SET detail = 'x'`); err == nil {
		t.Error("updating an audit row succeeded")
	}
}

func auditAll(t *testing.T, db *storage.DB) []storage.AuditEntry {
	t.Helper()
	all, err := db.AuditLog(ctx, 100000)
	if err != nil {
		t.Fatal(err)
	}
	return all
}
