package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/testwait"
)

// TestShutdown_SIGTERMMidBurst holds issue #21's shutdown: SIGTERM while 8
// clients store as fast as they can. The calls in flight finish, calls
// that come while they do are refused UNAVAILABLE (503), the process exits
// 0 within the shutdown deadline, and after a restart every store a client
// was told succeeded is there.
func TestShutdown_SIGTERMMidBurst(t *testing.T) {
	t.Parallel()
	p, dir, b := burstingDaemon(t)
	// SIGTERM once the burst is well under way.
	b.until(t, 200)
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("hearth did not exit cleanly: %v", err)
		}
	case <-time.After(shutdownDeadline + 20*time.Second):
		t.Fatalf("hearth still runs %v after SIGTERM", time.Since(start))
	}
	took := time.Since(start)
	all := b.wait()
	p.waitLine(t, regexp.MustCompile(`msg=stopped `))
	p.mu.Lock()
	for _, l := range p.lines {
		if strings.Contains(l, "level=ERROR") {
			t.Errorf("error logged: %s", l)
		}
	}
	p.mu.Unlock()
	if len(all.other) > 0 {
		t.Errorf("%d answers neither a success nor UNAVAILABLE, e.g. %s", len(all.other), all.other[0])
	}
	t.Logf("SIGTERM after %d acknowledged stores: exited in %v; %d refused UNAVAILABLE while draining, %d connection errors after",
		len(all.acked), took.Round(time.Millisecond), all.unavailable, all.connErrs)

	// Every acknowledged store survived.
	checkAcked(t, dir, all.acked)
}

// burst is 8 REST clients storing as fast as they can into a daemon until
// it stops answering, and what they were told.
type burst struct {
	mu  sync.Mutex
	out burstOutcome
	// signaled closes when the test is about to stop the daemon: a
	// connection error before it is a failure.
	signaled chan struct{}
	wg       sync.WaitGroup
}

type burstOutcome struct {
	acked       map[string]string // id → title
	unavailable int
	connErrs    int
	other       []string
}

// burstingDaemon builds hearth, runs it on a new data directory and
// starts a burst of stores into it as claude-code. Tests that use it are
// skipped under -short.
func burstingDaemon(t *testing.T) (p *proc, dir string, b *burst) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the hearth binary")
	}
	bin := buildHearth(t)
	dir = t.TempDir()
	p = startHearth(t, bin, dir)
	tok, err := os.ReadFile(filepath.Join(dir, "tokens", "claude-code"))
	if err != nil {
		t.Fatal(err)
	}
	return p, dir, startBurst(t, p.addr, strings.TrimSpace(string(tok)))
}

// startBurst starts the 8 clients against the daemon at addr.
func startBurst(t *testing.T, addr, token string) *burst {
	b := &burst{out: burstOutcome{acked: map[string]string{}}, signaled: make(chan struct{})}
	url := "http://" + addr + "/api/memory_store"
	client := &http.Client{Timeout: 30 * time.Second}
	for w := range 8 {
		b.wg.Go(func() {
			for i := 0; ; i++ {
				title := fmt.Sprintf("Burst %d-%d", w, i)
				body, _ := json.Marshal(storeArgs("global", title, "Stored during a burst that a signal interrupts."))
				req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+token)
				resp, err := client.Do(req)
				if err != nil {
					b.mu.Lock()
					b.out.connErrs++
					b.mu.Unlock()
					select {
					case <-b.signaled:
						return // the server stopped listening
					default:
						t.Errorf("writer %d before the signal: %v", w, err)
						return
					}
				}
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var reply map[string]any
				_ = json.Unmarshal(raw, &reply)
				b.mu.Lock()
				switch {
				case resp.StatusCode == http.StatusOK:
					b.out.acked[str(reply, "record", "id")] = title
				case resp.StatusCode == http.StatusServiceUnavailable && str(reply, "error", "code") == "UNAVAILABLE":
					b.out.unavailable++
				default:
					b.out.other = append(b.out.other, fmt.Sprintf("%d %s", resp.StatusCode, raw))
				}
				b.mu.Unlock()
			}
		})
	}
	return b
}

// until waits for n acknowledged stores, then marks the signal as coming.
// signaled closes before the signal goes: the server can close its
// connections before the test's goroutine runs again, and a writer that
// meets the closed connection first must know why.
func (b *burst) until(t *testing.T, n int) {
	t.Helper()
	testwait.WaitFor(t, fmt.Sprintf("%d acknowledged stores", n), func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.out.acked) >= n
	})
	close(b.signaled)
}

// wait waits for the clients to stop and returns what they were told.
func (b *burst) wait() burstOutcome {
	b.wg.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.out
}

// checkAcked opens the store in dir, as a restart does, and holds the
// file to be sound without repair and every acknowledged store (id →
// title) to be in it.
func checkAcked(t *testing.T, dir string, acked map[string]string) {
	t.Helper()
	db, err := storage.Open(context.Background(), filepath.Join(dir, "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if c, ok := db.LastIntegrityCheck(); !ok || c.Damage != nil || c.Repaired != "" {
		t.Errorf("the check at open (run: %v) found %s; want the file sound without repair", ok, &c)
	}
	ids := make([]string, 0, len(acked))
	for id := range acked {
		ids = append(ids, id)
	}
	recs, err := db.Get(context.Background(), ids)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]string{}
	for _, r := range recs {
		found[r.ID] = r.Title
	}
	for id, title := range acked {
		if found[id] != title {
			t.Errorf("acknowledged store %s (%q) is missing after the restart", id, title)
		}
	}
}
