package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/faultvfs"
	"github.com/hearth-memory/hearth/storage/storagetest"
	"github.com/hearth-memory/hearth/storage/testwait"
)

// Issue #21: a full disk, a damaged file and a shutdown, through the whole
// daemon and every transport.

var faultSeq atomic.Int64

// startFaultDaemon runs a daemon over dir with the page on, its store
// opened through vfs ("" for the OS's).
func startFaultDaemon(tb testing.TB, dir, vfs string) *testDaemon {
	tb.Helper()
	return openDaemon(tb, &Daemon{
		Config:         Config{DataDir: dir, IngressListen: "127.0.0.1:0", Options: pageOptions()},
		StoreVFS:       vfs,
		PageShowTokens: func(netip.Addr) bool { return true },
	}, true)
}

// healthOf reads GET /health.
func healthOf(tb testing.TB, td *testDaemon) map[string]any {
	tb.Helper()
	resp, err := http.Get(td.url + "/health")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var h map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil || resp.StatusCode != http.StatusOK {
		tb.Fatalf("GET /health: %d, %v", resp.StatusCode, err)
	}
	return h
}

// pageOf reads the page through the ingress listener.
func pageOf(tb testing.TB, td *testDaemon) string {
	tb.Helper()
	code, html := getPage(tb, http.DefaultClient, "http://"+td.IngressAddr()+"/", nil)
	if code != http.StatusOK {
		tb.Fatalf("page: %d", code)
	}
	return html
}

// auditOf returns the audit rows of action, read by the admin client.
func auditOf(tb testing.TB, td *testDaemon, action string) []any {
	tb.Helper()
	r := restTransport{td}.call(tb, adminToken, "memory_audit", map[string]any{"limit": 500})
	if !r.ok {
		tb.Fatalf("memory_audit: %v", r)
	}
	var out []any
	for _, e := range list(r.body, "entries") {
		if str(e, "action") == action {
			out = append(out, e)
		}
	}
	return out
}

// checkRefusedFull holds the answer to a write on a full disk: every
// transport says RESOURCE_EXHAUSTED with HTTP 507 and the reason, and the
// message says what happened and that writes resume.
func checkRefusedFull(t *testing.T, tr transport, r result) {
	t.Helper()
	if r.ok || r.code != "RESOURCE_EXHAUSTED" || r.http != http.StatusInsufficientStorage || str(r.body, "error", "reason") != "disk_full" {
		t.Fatalf("%s: store on a full disk: %v, want RESOURCE_EXHAUSTED 507 disk_full", tr.name(), r)
	}
	msg := str(r.body, "error", "message")
	for _, want := range []string{"is full", "nothing was written", "reads still work", "writes resume once space is freed"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%s: message %q lacks %q", tr.name(), msg, want)
		}
	}
}

func TestDaemon_DiskFull(t *testing.T) {
	t.Parallel()
	v := faultvfs.Register(fmt.Sprintf("daemon-full-%d", faultSeq.Add(1)))
	td := startFaultDaemon(t, t.TempDir(), v.Name())
	t.Cleanup(func() { v.SetFull(false) })
	tok := td.tokens["claude-code"]
	rest := restTransport{td}
	kept := rest.call(t, tok, "memory_store", storeArgs("global", "Kept before the disk filled", "Readable while the disk is full."))
	if !kept.ok {
		t.Fatalf("store: %v", kept)
	}
	id := str(kept.body, "record", "id")

	v.SetFull(true)
	for _, tr := range transports(td) {
		r := tr.call(t, tok, "memory_store", storeArgs("global", "Refused over "+tr.name(), "The disk is full."))
		checkRefusedFull(t, tr, r)
		// Reads keep working.
		if r := tr.call(t, tok, "memory_get", map[string]any{"ids": []string{id}}); !r.ok || str(r.body, "records", 0, "id") != id {
			t.Errorf("%s: get during a full disk: %v", tr.name(), r)
		}
		if r := tr.call(t, tok, "memory_search", map[string]any{"query": "readable disk", "namespace": "global"}); !r.ok || str(r.body, "hits", 0, "id") != id {
			t.Errorf("%s: search during a full disk: %v", tr.name(), r)
		}
	}
	if v.Refused() == 0 {
		t.Fatal("no write reached the fault VFS")
	}

	// memory_status, /health and the page say so.
	st := rest.call(t, tok, "memory_status", map[string]any{})
	if !st.ok || str(st.body, "store", "state") != storage.StateDiskFull || num(st.body, "store", "writes_refused") < 3 ||
		len(list(st.body, "store", "problems")) != 1 || get(st.body, "store", "free_mib") == nil || str(st.body, "store", "disk_full_since") == "" {
		t.Errorf("memory_status during a full disk: %s", st.raw)
	}
	h := healthOf(t, td)
	if h["status"] != "ok" || h["version"] == "" || h["store"] != storage.StateDiskFull || h["degraded"] != true ||
		get(h, "disk", "full") != true || get(h, "disk", "free_bytes") == nil || len(list(h, "problems")) != 1 {
		t.Errorf("/health during a full disk: %v", h)
	}
	html := pageOf(t, td)
	for _, want := range []string{`data-state="disk_full"`, "disk full: writes refused", "writes refused since", "is full"} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %q", want)
		}
	}

	// Space back: writes resume, and one audit row counts the refusals.
	v.SetFull(false)
	if r := rest.call(t, tok, "memory_store", storeArgs("global", "After the disk emptied", "Writes resume.")); !r.ok {
		t.Fatalf("store after space came back: %v", r)
	}
	// The episode ends once its audit row is written: the row is visible
	// from its commit on, the store's state a moment later.
	testwait.WaitFor(t, "the disk-full audit row and the end of the episode", func() bool {
		_, full := td.db.DiskFull()
		return len(auditOf(t, td, "refuse.disk-full")) > 0 && !full
	})
	rows := auditOf(t, td, "refuse.disk-full")
	// The usage flusher's own writes may have been refused too.
	var refused int
	if len(rows) == 1 {
		fmt.Sscanf(str(rows[0], "detail"), "%d writes refused for a full disk from ", &refused)
	}
	if len(rows) != 1 || refused < 3 || !strings.Contains(str(rows[0], "detail"), "store 3") || str(rows[0], "client") != storage.SystemClient {
		t.Errorf("disk-full audit rows = %v, want one counting 3 stores", rows)
	}
	if h := healthOf(t, td); h["store"] != storage.StateOK || h["degraded"] != false || get(h, "disk", "full") != false || h["backend"] != storage.BackendSQLite {
		t.Errorf("/health after recovery: %v", h)
	}
	if st := rest.call(t, tok, "memory_status", map[string]any{}); str(st.body, "store", "state") != storage.StateOK {
		t.Errorf("memory_status after recovery: %s", st.raw)
	}
}

// TestDaemon_DiskFull_Tmpfs fills a real file system under the daemon: a
// tmpfs mounted as the data directory, with a ballast file deleted to free
// space.
func TestDaemon_DiskFull_Tmpfs(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("fills a file system")
	}
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root; TestDaemon_DiskFull covers the path through the fault VFS")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	ballast := filepath.Join(dir, "ballast")
	if err := os.WriteFile(ballast, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	td := startFaultDaemon(t, dir, "")
	tok := td.tokens["claude-code"]
	rest := restTransport{td}
	body := strings.Repeat("Words that fill the disk of a small home server, one store at a time. ", 30)
	var first string
	stored := 0
	for i := 0; ; i++ {
		if i > 5000 {
			t.Fatal("the disk never filled")
		}
		r := rest.call(t, tok, "memory_store", storeArgs("global", fmt.Sprintf("Filler %d", i), body))
		if r.ok {
			stored++
			if first == "" {
				first = str(r.body, "record", "id")
			}
			continue
		}
		checkRefusedFull(t, rest, r)
		break
	}
	for _, tr := range transports(td) {
		// A refused write is rolled back, and a checkpoint may since have
		// let the WAL start over: a few more records can fit before the
		// disk refuses again. Each that is taken is stored whole.
		for i := 0; ; i++ {
			r := tr.call(t, tok, "memory_store", storeArgs("global", fmt.Sprintf("More %d", i), body))
			if !r.ok {
				checkRefusedFull(t, tr, r)
				break
			}
			if i == 50 {
				t.Fatalf("%s: 50 more stores on a full disk all succeeded", tr.name())
			}
		}
		if r := tr.call(t, tok, "memory_get", map[string]any{"ids": []string{first}}); !r.ok {
			t.Errorf("%s: get on a full disk: %v", tr.name(), r)
		}
	}
	if h := healthOf(t, td); h["store"] != storage.StateDiskFull || get(h, "disk", "full") != true {
		t.Errorf("/health on a full tmpfs: %v", h)
	}

	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	if r := rest.call(t, tok, "memory_store", storeArgs("global", "After", "Space is back.")); !r.ok {
		t.Fatalf("store after freeing space: %v", r)
	}
	// One audit row per full-disk episode (a store that fits in between
	// ends one): together they count the 4 refused stores.
	storeCount := regexp.MustCompile(`store (\d+)`)
	counted := func() (n int) {
		for _, row := range auditOf(t, td, "refuse.disk-full") {
			if m := storeCount.FindStringSubmatch(str(row, "detail")); m != nil {
				k, _ := strconv.Atoi(m[1])
				n += k
			}
		}
		return n
	}
	testwait.WaitFor(t, "the disk-full audit rows", func() bool { return counted() >= 4 })
	if n := counted(); n != 4 {
		t.Errorf("disk-full audit rows count %d refused stores, want 4: %v", n, auditOf(t, td, "refuse.disk-full"))
	}
	if r := rest.call(t, tok, "memory_search", map[string]any{"query": "filler", "namespace": "global", "limit": 50}); !r.ok || len(list(r.body, "hits")) == 0 {
		t.Errorf("search after a full disk: %v (%d stored)", r, stored)
	}
}

// damagedDataDir makes a data directory whose store a daemon has opened
// (tokens made, usage counting started) with n records, then closed; it
// returns the directory, the database file and the first record's id.
func damagedDataDir(t *testing.T, n int) (dir, path, first string) {
	t.Helper()
	dir = t.TempDir()
	td := openDaemon(t, &Daemon{Config: Config{DataDir: dir, Options: pageOptions()}}, false)
	body := "The service retries with backoff and keeps a warm cache; lorem ipsum dolor sit amet, consectetur."
	for i := range n {
		nr := storage.NewRecord{Namespace: "global", Type: storage.TypeDecision,
			Title:   storagetest.Text(t, fmt.Sprintf("Decision %d about caching", i)),
			Content: storagetest.Text(t, fmt.Sprintf("%s (%d)", body, i)), Confidence: 0.8,
			Writer: "claude-code", Source: storage.SourceStore, Status: storage.StatusActive}
		r, err := td.db.Store(context.Background(), nr)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = r.ID
		}
	}
	closeDaemon(t, td)
	return dir, filepath.Join(dir, "hearth.db"), first
}

// readOnlyServed holds td, whose store at path found its damage, to serve
// reads and refuse writes over every transport, and to say so in
// memory_status, /health and the page.
func readOnlyServed(t *testing.T, td *testDaemon, path, first string) {
	t.Helper()
	tok := td.tokens["claude-code"]
	for _, tr := range transports(td) {
		r := tr.call(t, tok, "memory_store", storeArgs("global", "Refused over "+tr.name(), "The file is damaged."))
		if r.ok || r.code != "FAILED_PRECONDITION" || r.http != http.StatusServiceUnavailable || str(r.body, "error", "reason") != "read_only" {
			t.Fatalf("%s: store on a damaged file: %v, want FAILED_PRECONDITION 503 read_only", tr.name(), r)
		}
		msg := str(r.body, "error", "message")
		for _, want := range []string{path, "damaged", "read-only", "reads still work", "hearth restore", "hearth backup"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: message %q lacks %q", tr.name(), msg, want)
			}
		}
		if r := tr.call(t, tok, "memory_get", map[string]any{"ids": []string{first}}); !r.ok || str(r.body, "records", 0, "id") != first {
			t.Errorf("%s: read an intact record: %v", tr.name(), r)
		}
	}
	st := restTransport{td}.call(t, tok, "memory_status", map[string]any{})
	if !st.ok || str(st.body, "store", "state") != storage.StateReadOnly ||
		!strings.Contains(fmt.Sprint(list(st.body, "store", "damaged_tables")), "records") ||
		len(list(st.body, "store", "damage")) == 0 || !strings.Contains(str(st.body, "store", "problems", 0), "hearth restore") {
		t.Errorf("memory_status on a damaged file: %s", st.raw)
	}
	h := healthOf(t, td)
	if h["status"] != "ok" || h["store"] != storage.StateReadOnly || h["degraded"] != true ||
		!strings.Contains(str(h, "problems", 0), "hearth restore") {
		t.Errorf("/health on a damaged file: %v", h)
	}
	html := pageOf(t, td)
	for _, want := range []string{`data-state="read_only"`, "damaged: read-only", "hearth restore --data DIR FILE", `id="store-damage"`} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func TestDaemon_Damaged(t *testing.T) {
	t.Parallel()
	t.Run("ReadOnly", func(t *testing.T) {
		// The daemon serves before it reads the file whole (the start
		// reads no damaged page here); the check after the start finds
		// the damage and makes the store read-only.
		dir, path, first := damagedDataDir(t, 600)
		ps, _, records := storagetest.Pages(t, path, "records")
		_, _, fts := storagetest.Pages(t, path, "records_fts_data")
		storagetest.Overwrite(t, path, ps, records[len(records)/2], records[len(records)-1], fts[len(fts)/2])

		var logs syncBuffer
		hold := make(chan struct{})
		td := openDaemon(t, &Daemon{
			Config:         Config{DataDir: dir, IngressListen: "127.0.0.1:0", Options: pageOptions()},
			PageShowTokens: func(netip.Addr) bool { return true },
			Log:            newTextLog(&logs), CheckHold: hold,
		}, true)
		if h := healthOf(t, td); h["store"] != storage.StateOK {
			t.Fatalf("/health before the check after the start: %v; the start read the file whole", h)
		}
		close(hold)
		<-td.checked
		if !strings.Contains(logs.String(), "database damaged: serving read-only") {
			t.Errorf("no log line of the damage:\n%s", logs.String())
		}
		readOnlyServed(t, td, path, first)
	})

	t.Run("IndexHealed", func(t *testing.T) {
		dir, path, _ := damagedDataDir(t, 600)
		ps, interior, fts := storagetest.Pages(t, path, "records_fts_data")
		_, _, idx := storagetest.Pages(t, path, "records_fts_idx")
		pages := []int{fts[0], fts[len(fts)/3], fts[len(fts)-1], idx[len(idx)-1]}
		if len(interior) > 0 {
			pages = append(pages, interior[0])
		}
		storagetest.Overwrite(t, path, ps, pages...)

		var logs syncBuffer
		td := openDaemon(t, &Daemon{Config: Config{DataDir: dir, Options: pageOptions()},
			Log: newTextLog(&logs)}, true)
		<-td.checked // the whole-file check after the start (checkStore)
		tok := td.tokens["claude-code"]
		if h := healthOf(t, td); h["store"] != storage.StateOK || h["degraded"] != false {
			t.Errorf("/health after the index was healed: %v", h)
		}
		rows := auditOf(t, td, "repair")
		if len(rows) != 1 || !strings.Contains(str(rows[0], "detail"), "the full-text index was damaged") {
			t.Errorf("repair audit rows = %v", rows)
		}
		if !strings.Contains(logs.String(), "database repaired at start") {
			t.Errorf("no log line of the repair:\n%s", logs.String())
		}
		for _, tr := range transports(td) {
			r := tr.call(t, tok, "memory_search", map[string]any{"query": "decision 512 caching", "namespace": "global", "limit": 1})
			if !r.ok || str(r.body, "hits", 0, "title") != "Decision 512 about caching" {
				t.Errorf("%s: search after the repair: %v", tr.name(), r)
			}
			if r := tr.call(t, tok, "memory_store", storeArgs("global", "Written over "+tr.name(), "Writable again.")); !r.ok {
				t.Errorf("%s: store after the repair: %v", tr.name(), r)
			}
		}
		st := restTransport{td}.call(t, tok, "memory_status", map[string]any{})
		if !strings.Contains(str(st.body, "store", "check"), "sound after repair") {
			t.Errorf("memory_status check after the repair: %s", st.raw)
		}
	})

	t.Run("ErrCannotOpen", func(t *testing.T) {
		dir, path, _ := damagedDataDir(t, 5)
		storagetest.OverwriteAt(t, path, 0, 4096)
		d := &Daemon{Config: Config{DataDir: dir, Listen: "127.0.0.1:0", Options: pageOptions()}, Log: discardLog()}
		err := d.Open(context.Background())
		if err == nil {
			d.Close(context.Background())
			t.Fatal("the daemon started on a file whose header is gone")
		}
		for _, want := range []string{path, "damaged beyond use", "hearth restore --data DIR FILE", "move the file aside"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("start error %q lacks %q", err, want)
			}
		}
	})
}

// TestDaemon_Drain: once the daemon drains, a new call over any transport
// is refused UNAVAILABLE (503 over HTTP) without running.
func TestDaemon_Drain(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, testOptions())
	tok := td.tokens["claude-code"]
	if err := td.srv.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, tr := range []transport{restTransport{td}, grpcTransport{td: td}} {
		r := tr.call(t, tok, "memory_store", storeArgs("global", "After the drain "+tr.name(), "Never stored."))
		if r.ok || r.code != "UNAVAILABLE" || r.http != http.StatusServiceUnavailable || !strings.Contains(str(r.body, "error", "message"), "shutting down") {
			t.Errorf("%s: call while draining: %v, want UNAVAILABLE 503", tr.name(), r)
		}
	}
	// MCP asks who the caller is before any tool runs: that call is
	// refused too, and the bridge answers with its code.
	code, raw := mcpTransport{td: td}.rpc(t, tok, "tools/call", map[string]any{"name": "memory_store",
		"arguments": storeArgs("global", "After the drain mcp", "Never stored.")})
	if code != http.StatusServiceUnavailable || !strings.Contains(string(raw), `"UNAVAILABLE"`) {
		t.Errorf("mcp while draining: %d %s, want 503 UNAVAILABLE", code, raw)
	}
	st, err := td.db.Status(context.Background())
	if err != nil || len(st.Counts) != 0 {
		t.Errorf("records after refused calls: %+v, %v; want none", st, err)
	}
}

// newTextLog logs to w as the daemon logs to stderr.
func newTextLog(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }
