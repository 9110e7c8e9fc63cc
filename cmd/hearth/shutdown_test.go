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
)

// TestShutdown_SIGTERMMidBurst holds issue #21's shutdown: SIGTERM while 8
// clients store as fast as they can. The calls in flight finish, calls
// that come while they do are refused UNAVAILABLE (503), the process exits
// 0 within the shutdown deadline, and after a restart every store a client
// was told succeeded is there.
func TestShutdown_SIGTERMMidBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the hearth binary")
	}
	bin := buildHearth(t)
	dir := t.TempDir()
	p := startHearth(t, bin, dir)
	tok, err := os.ReadFile(filepath.Join(dir, "tokens", "claude-code"))
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(tok))
	url := "http://" + p.addr + "/api/memory_store"

	type outcome struct {
		acked       map[string]string // id → title
		unavailable int
		connErrs    int
		other       []string
	}
	var (
		mu       sync.Mutex
		all      = outcome{acked: map[string]string{}}
		signaled = make(chan struct{})
		wg       sync.WaitGroup
	)
	client := &http.Client{Timeout: 30 * time.Second}
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				title := fmt.Sprintf("Burst %d-%d", w, i)
				b, _ := json.Marshal(storeArgs("global", title, "Stored during a burst that SIGTERM interrupts."))
				req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+token)
				resp, err := client.Do(req)
				if err != nil {
					mu.Lock()
					all.connErrs++
					mu.Unlock()
					select {
					case <-signaled:
						return // the server stopped listening
					default:
						t.Errorf("writer %d before SIGTERM: %v", w, err)
						return
					}
				}
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var body map[string]any
				_ = json.Unmarshal(raw, &body)
				mu.Lock()
				switch {
				case resp.StatusCode == http.StatusOK:
					all.acked[str(body, "record", "id")] = title
				case resp.StatusCode == http.StatusServiceUnavailable && str(body, "error", "code") == "UNAVAILABLE":
					all.unavailable++
				default:
					all.other = append(all.other, fmt.Sprintf("%d %s", resp.StatusCode, raw))
				}
				mu.Unlock()
			}
		}()
	}

	// SIGTERM once the burst is well under way.
	pollUntil(t, "200 acknowledged stores", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(all.acked) >= 200
	})
	// signaled closes before the signal goes: the server can drain and
	// close its connections before this goroutine runs again, and a
	// writer that meets the closed connection first must know why.
	close(signaled)
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
	wg.Wait()
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
	db, err := storage.Open(context.Background(), filepath.Join(dir, "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ids := make([]string, 0, len(all.acked))
	for id := range all.acked {
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
	for id, title := range all.acked {
		if found[id] != title {
			t.Errorf("acknowledged store %s (%q) is missing after the restart", id, title)
		}
	}
}
