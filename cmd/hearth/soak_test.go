package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/screen"
)

// TestSoak is the long-uptime measurement of issue #21, opt in: with
// HEARTH_SOAK set to a duration (make soak: 10m) it runs the hearth binary
// over a store of HEARTH_SOAK_RECORDS records (default 100,000) while 8
// clients store and 8 search over REST without pause, and samples the
// WAL's size, the process's RSS and the machine's load every 10 s. It
// reports start, peak and end, and the checkpoints the WAL policy ran. It
// asserts only that every call succeeded and every acknowledged store is
// there: figures are reported, not asserted.
func TestSoak(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv("HEARTH_SOAK"))
	if err != nil || d <= 0 {
		t.Skip("set HEARTH_SOAK to a duration, e.g. HEARTH_SOAK=10m (make soak)")
	}
	n := 100000
	if s := os.Getenv("HEARTH_SOAK_RECORDS"); s != "" {
		if n, err = strconv.Atoi(s); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(t.TempDir(), "hearth")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "hearth.db")
	start := time.Now()
	soakFill(t, path, n)
	t.Logf("filled %d records in %v", n, time.Since(start).Round(time.Second))

	p := startHearth(t, bin, dir)
	tok, err := os.ReadFile(filepath.Join(dir, "tokens", "claude-code"))
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(tok))
	base := "http://" + p.addr + "/api/"
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	call := func(tool string, args any) (map[string]any, error) {
		b, _ := json.Marshal(args)
		req, _ := http.NewRequest(http.MethodPost, base+tool, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		var body map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			return body, fmt.Errorf("%s: HTTP %d: %v", tool, resp.StatusCode, body)
		}
		return body, nil
	}

	var (
		stores, searches atomic.Int64
		mu               sync.Mutex
		acked            []string
		stop             = make(chan struct{})
		wg               sync.WaitGroup
	)
	for w := range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			c := newCorpus(uint64(1000 + w))
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				body, err := call("memory_store", map[string]any{"namespace": fmt.Sprintf("github/acme/repo%d", i%50),
					"type": "note", "title": c.sentence(6), "content": c.sentence(40 + c.rng.IntN(80))})
				if err != nil {
					t.Errorf("store: %v", err)
					return
				}
				stores.Add(1)
				mu.Lock()
				acked = append(acked, str(body, "record", "id"))
				mu.Unlock()
			}
		}()
		go func() {
			defer wg.Done()
			c := newCorpus(uint64(2000 + w))
			qs := queries(c, 500)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := call("memory_search", map[string]any{"query": qs[i%len(qs)],
					"namespace": fmt.Sprintf("github/acme/repo%d", i%50), "limit": 10}); err != nil {
					t.Errorf("search: %v", err)
					return
				}
				searches.Add(1)
			}
		}()
	}

	type sample struct {
		at              time.Duration
		walMB, rssMB    float64
		load            string
		stores, queries int64
	}
	var samples []sample
	take := func(at time.Duration) sample {
		s := sample{at: at, stores: stores.Load(), queries: searches.Load(), load: loadAvg()}
		if fi, err := os.Stat(path + "-wal"); err == nil {
			s.walMB = float64(fi.Size()) / (1 << 20)
		}
		s.rssMB = rssMB(t, p.cmd.Process.Pid)
		samples = append(samples, s)
		return s
	}
	began := time.Now()
	take(0)
	tick := time.NewTicker(10 * time.Second)
	for time.Since(began) < d {
		<-tick.C
		s := take(time.Since(began).Round(time.Second))
		t.Logf("%6v  wal %6.1f MB  rss %6.1f MB  stores %7d  searches %7d  load %s", s.at, s.walMB, s.rssMB, s.stores, s.queries, s.load)
	}
	tick.Stop()
	close(stop)
	wg.Wait()
	elapsed := time.Since(began)
	end := take(elapsed.Round(time.Second))
	st, err := call("memory_status", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}

	peak := func(f func(sample) float64) float64 {
		m := 0.0
		for _, s := range samples {
			m = max(m, f(s))
		}
		return m
	}
	ckpts := num(st, "store", "checkpoints")
	mean := 0.0
	if ckpts > 0 {
		mean = num(st, "store", "checkpoint_total_ms") / ckpts
	}
	t.Logf("soak %v over %d records: %d stores (%.1f/s), %d searches (%.1f/s)", elapsed.Round(time.Second), n,
		end.stores, float64(end.stores)/elapsed.Seconds(), end.queries, float64(end.queries)/elapsed.Seconds())
	t.Logf("WAL MB: start %.1f, peak %.1f, end %.1f", samples[0].walMB, peak(func(s sample) float64 { return s.walMB }), end.walMB)
	t.Logf("RSS MB: start %.1f, peak %.1f, end %.1f", samples[0].rssMB, peak(func(s sample) float64 { return s.rssMB }), end.rssMB)
	t.Logf("checkpoints: %.0f (%.0f unfinished), mean %.0f ms, longest %.0f ms; load average at start %s, at end %s",
		ckpts, num(st, "store", "checkpoints_unfinished"), mean, num(st, "store", "checkpoint_max_ms"), samples[0].load, end.load)

	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("hearth did not stop cleanly: %v", err)
	}
	db, err := storage.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := 0; i < len(acked); i += 500 {
		ids := acked[i:min(i+500, len(acked))]
		recs, err := db.Get(context.Background(), ids)
		if err != nil || len(recs) != len(ids) {
			t.Fatalf("acknowledged stores %d..%d: %d found, %v", i, i+len(ids), len(recs), err)
		}
	}
}

// soakFill stores n records through storage with 8 writers.
func soakFill(t *testing.T, path string, n int) {
	t.Helper()
	db, err := storage.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := newCorpus(uint64(g + 1))
			for i := g; i < n; i += 8 {
				title, _ := screen.Check("title", c.sentence(4+c.rng.IntN(6)))
				content, _ := screen.Check("content", c.sentence(20+c.rng.IntN(120)))
				if _, err := db.Store(context.Background(), storage.NewRecord{
					Namespace: fmt.Sprintf("github/acme/repo%d", i%50), Type: storage.Types[i%len(storage.Types)],
					Title: title, Content: content, Confidence: 0.8,
					Writer: "bench", Source: storage.SourceImport, Status: storage.StatusActive,
				}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// rssMB reads a process's resident set from /proc.
func rssMB(t *testing.T, pid int) float64 {
	rss, _ := procMem(t, pid)
	return rss
}

// loadAvg is the machine's 1-minute load average.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return "?"
}
