package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/server/models/modeltest"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/screen"
	"github.com/hearth-memory/hearth/storage/testwait"
)

// buildHearth returns the hearth binary built with the failpoint tag (which
// makes it read HEARTH_FAILPOINT) and the postgres tag (which links
// PostgreSQL's driver, for --database): the one `make test` builds once for
// every package and names in HEARTH_TEST_BIN, or, when the tests run
// without it, one built once per test binary into hearthBinDir, which
// TestMain removes. Every test that runs the binary shares it, and none
// changes it.
func buildHearth(t *testing.T) string {
	t.Helper()
	bin, err := builtHearth()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// hearthBinDir holds the binary builtHearth made ("" before, and when
// HEARTH_TEST_BIN named one).
var hearthBinDir string

var builtHearth = sync.OnceValues(func() (string, error) {
	if bin := os.Getenv("HEARTH_TEST_BIN"); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			return "", fmt.Errorf("HEARTH_TEST_BIN: %v", err)
		}
		return bin, nil
	}
	dir, err := os.MkdirTemp("", "hearth-bin-")
	if err != nil {
		return "", err
	}
	hearthBinDir = dir
	bin := filepath.Join(dir, "hearth")
	// The flags make test's build uses (Makefile), so the two share the
	// packages' compiled forms in the build cache.
	cmd := exec.Command("go", "build", "-trimpath", "-tags", "failpoint,postgres", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// proc is a running `hearth serve` with its output lines.
type proc struct {
	cmd  *exec.Cmd
	addr string

	mu    sync.Mutex
	lines []string // stdout and stderr, line by line, as they came
}

var listeningLine = regexp.MustCompile(`listening on (\S+)`)

// startHearth runs `hearth serve` on dir with extra environment and waits
// until it listens.
func startHearth(t testing.TB, bin, dir string, env ...string) *proc {
	t.Helper()
	return startServe(t, bin, []string{"--data", dir, "--listen", "127.0.0.1:0"}, env...)
}

// startServe runs `hearth serve` with args and extra environment and waits
// until it listens.
func startServe(t testing.TB, bin string, args []string, env ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	p := capture(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	p.addr = p.waitLine(t, listeningLine)[1]
	return p
}

// capture collects cmd's output, stdout and stderr, line by line into a
// proc. The lines are all in when cmd.Wait returns: Wait waits for the
// copying, where a pipe the test read itself would lose the last lines
// when Wait closed it.
func capture(cmd *exec.Cmd) *proc {
	p := &proc{cmd: cmd}
	cmd.Stdout, cmd.Stderr = &lineWriter{p: p}, &lineWriter{p: p}
	return p
}

// lineWriter appends each whole line written to it to p.lines. exec
// writes each stream from one goroutine.
type lineWriter struct {
	p    *proc
	part []byte
}

func (w *lineWriter) Write(b []byte) (int, error) {
	w.part = append(w.part, b...)
	for {
		i := bytes.IndexByte(w.part, '\n')
		if i < 0 {
			return len(b), nil
		}
		w.p.mu.Lock()
		w.p.lines = append(w.p.lines, string(w.part[:i]))
		w.p.mu.Unlock()
		w.part = w.part[i+1:]
	}
}

// output is what the process printed so far, one line each.
func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// waitLine polls the output, from its start, until a line matches re.
func (p *proc) waitLine(t testing.TB, re *regexp.Regexp) []string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		p.mu.Lock()
		lines := slices.Clone(p.lines)
		p.mu.Unlock()
		for _, l := range lines {
			if m := re.FindStringSubmatch(l); m != nil {
				return m
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no line matching %q; output:\n%s", re, strings.Join(lines, "\n"))
		}
		time.Sleep(10 * time.Millisecond) // polling a condition, not waiting for time
	}
}

// TestKill_StoresMidBurst holds R-R6 for a killed process: SIGKILL while
// 8 clients store as fast as they can. After a restart the file is sound
// without repair, and every store a client was told succeeded is there:
// the commits that answered were whole in the write-ahead log, however the
// log's writes were joined (storage/internal/vfswrap.JoinFrames).
func TestKill_StoresMidBurst(t *testing.T) {
	t.Parallel()
	p, dir, b := burstingDaemon(t)
	b.until(t, 300)
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err == nil {
		t.Fatal("hearth exited cleanly after SIGKILL")
	}
	all := b.wait()
	if len(all.other) > 0 || all.unavailable > 0 {
		t.Errorf("answers not a success: %d UNAVAILABLE, and %q", all.unavailable, all.other)
	}
	t.Logf("SIGKILL after %d acknowledged stores; %d connection errors after", len(all.acked), all.connErrs)
	checkAcked(t, dir, all.acked)
}

// TestKill_JobExactlyOnce holds R-J1 and R-R6 across a crash: the server
// process is killed (SIGKILL) after leasing a maintenance job and before
// completing it; after a restart the job is taken again and completes
// exactly once, its effect (a candidate expired) applied once. The
// HEARTH_FAILPOINT=job-after-lease failpoint holds the job after its lease.
func TestKill_JobExactlyOnce(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the hearth binary")
	}
	ctx := context.Background()
	bin := buildHearth(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "hearth.db")

	// Seed: a candidate twenty days old and a maintenance job due now.
	db, err := storage.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	db.Now = func() time.Time { return now.Add(-20 * 24 * time.Hour) }
	title, _ := screen.Check("title", "An old candidate")
	content, _ := screen.Check("content", "Waiting for review for twenty days.")
	cand, err := db.Store(ctx, storage.NewRecord{
		Namespace: "global", Type: storage.TypeNote, Title: title, Content: content, Confidence: 0.8,
		Writer: "claude-code", Source: storage.SourceExtraction, Status: storage.StatusCandidate,
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Now = time.Now
	job, _, err := db.EnqueueJob(ctx, storage.NewJob{Kind: storage.KindMaintenance, Key: "kill-test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// First run: the worker leases the job and the failpoint holds it; then
	// the process is killed, with no chance to clean up.
	p := startHearth(t, bin, dir, "HEARTH_FAILPOINT=job-after-lease")
	p.waitLine(t, regexp.MustCompile(`failpoint job-after-lease.*job=`+job.ID))
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()

	db, err = storage.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	j, err := db.Job(ctx, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	recs, _ := db.Get(ctx, []string{cand.ID})
	if j.State != storage.JobLeased || j.Attempts != 1 || len(recs) != 1 || recs[0].Status != storage.StatusCandidate {
		t.Fatalf("after the kill: job %+v, candidate %+v; want leased and untouched", j, recs)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// Second run, without the failpoint: the dead lease is released and the
	// job runs. Wait until its effect shows over REST, then stop cleanly.
	p = startHearth(t, bin, dir)
	p.waitLine(t, regexp.MustCompile(`released job leases of an earlier process.*jobs=1`))
	tokBytes, err := os.ReadFile(filepath.Join(dir, "tokens", "claude-code"))
	if err != nil {
		t.Fatal(err)
	}
	rest := restTransport{&testDaemon{url: "http://" + p.addr}}
	testwait.WaitFor(t, "the job's effect shows", func() bool {
		r := rest.call(t, strings.TrimSpace(string(tokBytes)), "memory_get", map[string]any{"ids": []string{cand.ID}})
		if !r.ok {
			t.Fatalf("memory_get: %v", r)
		}
		return str(r.body, "records", 0, "status") == storage.StatusDeleted
	})
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("hearth did not stop cleanly: %v", err)
	}

	// Exactly once: the job is done on its second attempt, one maintenance
	// run is audited, the candidate was forgotten once.
	db, err = storage.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	j, err = db.Job(ctx, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if j.State != storage.JobDone || j.Attempts != 2 || !strings.Contains(j.LastError, "released at start") {
		t.Errorf("job = %+v, want done on attempt 2", j)
	}
	log, err := db.AuditLog(ctx, 500)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[storage.Action]int{}
	for _, e := range log {
		if e.Action == storage.ActionMaintenance || (e.Action == storage.ActionForget && e.RecordID == cand.ID) {
			counts[e.Action]++
		}
	}
	if counts[storage.ActionMaintenance] != 1 || counts[storage.ActionForget] != 1 {
		t.Errorf("audit: %v, want one maintenance run and one forget", counts)
	}
	recs, _ = db.Get(ctx, []string{cand.ID})
	if len(recs) != 1 || recs[0].Status != storage.StatusDeleted || recs[0].Revision != 2 {
		t.Errorf("candidate = %+v, want deleted at revision 2", recs)
	}
	if done, _ := db.Jobs(ctx, storage.KindMaintenance, storage.JobDone); len(done) != 1 {
		t.Errorf("%d maintenance jobs done, want 1", len(done))
	}
}

// TestKill_ExtractionExactlyOnce holds R-Z4 and R-R6 across a crash after
// the model answered: the process is killed (SIGKILL) after the extraction
// job's model call returned and before its completion
// (HEARTH_FAILPOINT=job-before-complete). Nothing of the reply was stored;
// after a restart the job asks the model again and its candidates are
// stored exactly once, with the job's completion.
func TestKill_ExtractionExactlyOnce(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the hearth binary")
	}
	ctx := context.Background()
	bin := buildHearth(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "hearth.db")
	srv := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "m1"})
	srv.Script(modeltest.Rule{Path: "/api/chat", Action: modeltest.Action{Content: memoriesContent("Leases survive restarts", "Jobs retry with backoff")}})
	opts, _ := json.Marshal(map[string]string{"ollama_url": srv.URL, "ollama_model": "m1"})
	if err := os.WriteFile(filepath.Join(dir, "options.json"), opts, 0o600); err != nil {
		t.Fatal(err)
	}

	// First run: a close queues the job; the worker calls the model and the
	// failpoint holds the job before its completion; then the kill.
	p := startHearth(t, bin, dir, "HEARTH_FAILPOINT=job-before-complete")
	tokBytes, err := os.ReadFile(filepath.Join(dir, "tokens", "claude-code"))
	if err != nil {
		t.Fatal(err)
	}
	tok := strings.TrimSpace(string(tokBytes))
	rest := restTransport{&testDaemon{url: "http://" + p.addr}}
	r := rest.call(t, tok, "memory_session_close", closeArgs("kill-extract-1", "", "We made the job queue durable."))
	if !r.ok {
		t.Fatalf("close: %v", r)
	}
	jobID := str(r.body, "receipt", "job_id")
	p.waitLine(t, regexp.MustCompile(`failpoint job-before-complete.*job=`+jobID))
	if n := srv.Count("/api/chat"); n != 1 {
		t.Fatalf("chat requests before the kill: got %d, want 1", n)
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()

	db, err := storage.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	j, err := db.Job(ctx, jobID)
	if err != nil {
		t.Fatal(err)
	}
	cands, _ := db.Candidates(ctx, 0)
	if j.State != storage.JobLeased || j.Attempts != 1 || len(cands) != 0 {
		t.Fatalf("after the kill: job %+v, %d candidates; want leased and nothing stored", j, len(cands))
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// Second run: the dead lease is released, the job runs again and
	// completes; wait for it over REST, then stop cleanly.
	p = startHearth(t, bin, dir)
	p.waitLine(t, regexp.MustCompile(`released job leases of an earlier process.*jobs=1`))
	rest = restTransport{&testDaemon{url: "http://" + p.addr}}
	testwait.WaitFor(t, "the extraction completes", func() bool {
		st := rest.call(t, tok, "memory_status", map[string]any{})
		for _, e := range get(st.body, "jobs").([]any) {
			if str(e, "kind") == storage.KindExtraction && str(e, "state") == storage.JobDone {
				return true
			}
		}
		return false
	})
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("hearth did not stop cleanly: %v", err)
	}

	// Exactly once: the job is done on its second attempt, after a second
	// call; each memory is one candidate; one extraction is audited.
	db, err = storage.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if j, _ = db.Job(ctx, jobID); j.State != storage.JobDone || j.Attempts != 2 {
		t.Errorf("job = %+v, want done on attempt 2", j)
	}
	if n := srv.Count("/api/chat"); n != 2 {
		t.Errorf("chat requests: got %d, want 2", n)
	}
	cands, _ = db.Candidates(ctx, 0)
	var titles []string
	for _, c := range cands {
		titles = append(titles, c.Title)
	}
	if strings.Join(titles, "|") != "Leases survive restarts|Jobs retry with backoff" {
		t.Errorf("candidates: got %q, want each memory once", titles)
	}
	log, err := db.AuditLog(ctx, 500)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[storage.Action]int{}
	for _, e := range log {
		counts[e.Action]++
	}
	if counts[storage.ActionExtract] != 1 || counts[storage.ActionStore] != 2 {
		t.Errorf("audit: %v, want one extract and two stores", counts)
	}
}
