package main

import (
	"bufio"
	"context"
	"io"
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

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/screen"
)

// buildHearth builds this command into a temp dir and returns the binary.
func buildHearth(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "hearth")
	// The failpoint tag makes the binary read HEARTH_FAILPOINT.
	cmd := exec.Command("go", "build", "-tags", "failpoint", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

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
func startHearth(t *testing.T, bin, dir string, env ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--data", dir, "--listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), env...)
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for _, r := range []io.Reader{stdout, stderr} {
		go func() {
			s := bufio.NewScanner(r)
			for s.Scan() {
				p.mu.Lock()
				p.lines = append(p.lines, s.Text())
				p.mu.Unlock()
			}
		}()
	}
	p.addr = p.waitLine(t, listeningLine)[1]
	return p
}

// waitLine polls the output, from its start, until a line matches re.
func (p *proc) waitLine(t *testing.T, re *regexp.Regexp) []string {
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

// TestKill_JobExactlyOnce holds R-J1 and R-R6 across a crash: the server
// process is killed (SIGKILL) after leasing a maintenance job and before
// completing it; after a restart the job is taken again and completes
// exactly once, its effect (a candidate expired) applied once. The
// HEARTH_FAILPOINT=job-after-lease failpoint holds the job after its lease.
func TestKill_JobExactlyOnce(t *testing.T) {
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
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := rest.call(t, strings.TrimSpace(string(tokBytes)), "memory_get", map[string]any{"ids": []string{cand.ID}})
		if !r.ok {
			t.Fatalf("memory_get: %v", r)
		}
		if str(r.body, "records", 0, "status") == storage.StatusDeleted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job's effect never showed: %v", r)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, not waiting for time
	}
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
