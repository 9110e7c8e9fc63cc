package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server"
	"github.com/hearth-memory/hearth/storage"
)

// dialGRPCFrom opens a gRPC connection to addr from local address ip.
func dialGRPCFrom(t *testing.T, addr string, ip netip.Addr) *grpc.ClientConn {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: ip.AsSlice()}}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) { return d.DialContext(ctx, "tcp", a) }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

var countRow = regexp.MustCompile(`^(\d+) more refusals from `)

// TestRefusals_Coalesced holds the bound on what calls without a valid
// token write: 10,000 of them, from 24 source addresses, with three
// reasons, over gRPC, REST and MCP, across two minutes of the store's
// clock, add at most server.MaxRefusalRowsPerMinute audit rows per minute,
// the rows still account for every refusal, and a client storing records
// meanwhile is served.
func TestRefusals_Coalesced(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 1, 10, 0, 5, 0, time.UTC)
	var clock atomic.Int64
	clock.Store(start.UnixMilli())
	dir := t.TempDir()
	td := openDaemon(t, &Daemon{Config: Config{DataDir: dir, Options: testOptions()},
		Now: func() time.Time { return time.UnixMilli(clock.Load()).UTC() }}, false)
	tok := td.tokens["claude-code"]

	var conns []*grpc.ClientConn
	for i := 1; i <= 24; i++ {
		conns = append(conns, dialGRPCFrom(t, td.Addr(), netip.AddrFrom4([4]byte{127, 0, 0, byte(i)})))
	}
	auths := []string{"", "Bearer hearth_not-a-token", "Basic dXNlcjpwYXNz"}
	const total = 10000
	var (
		next    atomic.Int64
		refused atomic.Int64
		wg      sync.WaitGroup
		bad     = make(chan string, 16)
	)
	call := func(i int) {
		auth := auths[i%len(auths)]
		switch i % 50 {
		case 0: // REST
			if code := postRaw(t, td.url+"/api/memory_search", auth, `{"query":"x"}`); code != http.StatusUnauthorized {
				bad <- fmt.Sprintf("REST: HTTP %d", code)
				return
			}
		case 1: // MCP
			if code := postRaw(t, td.url+"/mcp", auth, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); code != http.StatusUnauthorized {
				bad <- fmt.Sprintf("MCP: HTTP %d", code)
				return
			}
		default: // gRPC from one of 24 addresses
			ctx := context.Background()
			if auth != "" {
				ctx = metadata.AppendToOutgoingContext(ctx, "authorization", auth)
			}
			err := conns[i%len(conns)].Invoke(ctx, hearthv1.AdminService_Status_FullMethodName, &hearthv1.StatusRequest{}, &hearthv1.StatusResponse{})
			if status.Code(err) != codes.Unauthenticated {
				bad <- fmt.Sprint("gRPC: ", err)
				return
			}
		}
		refused.Add(1)
	}
	stored := make(chan error, 1)
	go func() { // a client with a valid token keeps writing
		for i := range 30 {
			if r := (grpcTransport{td: td}).call(t, tok, "memory_store", storeArgs("github/acme/busy", fmt.Sprintf("Write %d", i), "During a flood.")); !r.ok {
				stored <- fmt.Errorf("store %d: %v", i, r)
				return
			}
		}
		stored <- nil
	}()
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= total {
					return
				}
				if i == total/2 {
					clock.Store(start.Add(time.Minute).UnixMilli()) // the second minute
				}
				call(i)
			}
		}()
	}
	wg.Wait()
	if err := <-stored; err != nil {
		t.Errorf("the writer during the flood: %v", err)
	}
	close(bad)
	for b := range bad {
		t.Fatalf("a call was not refused as UNAUTHENTICATED: %s", b)
	}
	entries := auditAfterClose(t, td, dir)
	var rows, counted int
	minutes := map[string]int{}
	for _, e := range entries {
		if e.Action != storage.ActionRefuseAuth {
			continue
		}
		rows++
		minutes[e.At.Truncate(time.Minute).Format("15:04")]++
		d := e.Detail.String()
		if m := countRow.FindStringSubmatch(d); m != nil {
			n, _ := strconv.Atoi(m[1])
			counted += n
		} else if strings.HasPrefix(d, "from ") {
			counted++
		} else {
			t.Errorf("refusal row %q is neither a first row nor a count", d)
		}
	}
	t.Logf("%d refusals -> %d audit rows %v", refused.Load(), rows, minutes)
	if rows > 2*server.MaxRefusalRowsPerMinute {
		t.Errorf("%d refusals over two minutes wrote %d audit rows, want at most %d", total, rows, 2*server.MaxRefusalRowsPerMinute)
	}
	if int64(counted) != refused.Load() || refused.Load() != total {
		t.Errorf("the rows account for %d refusals, %d happened (of %d calls)", counted, refused.Load(), total)
	}
}

// postRaw posts a JSON body with the Authorization header auth (none when
// "") and returns the HTTP status.
func postRaw(t *testing.T, url, auth, body string) int {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

var scopeCountRow = regexp.MustCompile(`^(\d+) more refusals of (\S+) in the minute from `)

// TestRefusals_ScopeCoalesced holds the bound on what calls out of a
// client's scope write (issue #41): 1,000 stores from the token-less
// address client lan-reader, which holds read at most, over gRPC and REST,
// are each refused with PERMISSION_DENIED and add two audit rows, the first
// refusal and the count of the rest; another client's refusals of another
// method in the same minute are kept apart.
func TestRefusals_ScopeCoalesced(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 1, 10, 0, 5, 0, time.UTC)
	dir := t.TempDir()
	td := openDaemon(t, &Daemon{Config: Config{DataDir: dir, Options: testOptions()},
		Now: func() time.Time { return start }}, false)
	conn := dialGRPCFrom(t, td.Addr(), readerIP)
	rest := dialFrom(readerIP)
	const total = 1000
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		bad  = make(chan string, 16)
	)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= total {
					return
				}
				if i%10 == 0 {
					resp, err := rest.Post(td.url+"/api/memory_store", "application/json", strings.NewReader(`{"namespace":"global","type":"note","title":"x","content":"y"}`))
					if err != nil {
						bad <- err.Error()
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusForbidden {
						bad <- fmt.Sprintf("REST: HTTP %d", resp.StatusCode)
					}
					continue
				}
				err := conn.Invoke(context.Background(), hearthv1.MemoryService_Store_FullMethodName,
					&hearthv1.StoreRequest{Namespace: "global", Type: "note", Title: "x", Content: "y"}, &hearthv1.Record{})
				if status.Code(err) != codes.PermissionDenied {
					bad <- fmt.Sprint("gRPC: ", err)
				}
			}
		}()
	}
	// A token client that may read but not administer, refused twice.
	for range 2 {
		if r := (grpcTransport{td: td}).call(t, td.tokens["codex"], "memory_audit", map[string]any{}); r.ok || r.code != "PERMISSION_DENIED" {
			t.Errorf("codex's memory_audit: %v, want PERMISSION_DENIED", r)
		}
	}
	wg.Wait()
	close(bad)
	for b := range bad {
		t.Fatalf("a store was not refused as out of scope: %s", b)
	}
	entries := auditAfterClose(t, td, dir)
	rows := map[string]int{}    // by client
	counted := map[string]int{} // refusals the rows account for, by client and method
	for _, e := range entries {
		if e.Action != storage.ActionRefuseAuth {
			continue
		}
		rows[e.Client]++
		d := e.Detail.String()
		if m := scopeCountRow.FindStringSubmatch(d); m != nil {
			n, _ := strconv.Atoi(m[1])
			counted[e.Client+" "+m[2]] += n
		} else if method, _, ok := strings.Cut(d, ": "); ok && strings.Contains(d, "lacks scope") {
			counted[e.Client+" "+method]++
		} else {
			t.Errorf("refusal row %q of %s is neither a first row nor a count", d, e.Client)
		}
	}
	t.Logf("%d refused stores -> %v audit rows", total, rows)
	if rows["lan-reader"] != 2 || rows["codex"] != 2 || len(rows) != 2 {
		t.Errorf("audit rows by client %v, want 2 for lan-reader (a first row and a count) and 2 for codex", rows)
	}
	want := map[string]int{
		"lan-reader " + hearthv1.MemoryService_Store_FullMethodName: total,
		"codex " + hearthv1.AdminService_Audit_FullMethodName:       2,
	}
	if fmt.Sprint(counted) != fmt.Sprint(want) {
		t.Errorf("the rows account for %v, want %v", counted, want)
	}
}

// auditAfterClose stops the daemon td, whose data is in dir (its close
// writes the refusal counts still held), and reads every audit row.
func auditAfterClose(t *testing.T, td *testDaemon, dir string) []storage.AuditEntry {
	t.Helper()
	closeDaemon(t, td)
	db, err := storage.Open(context.Background(), filepath.Join(dir, "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	entries, err := db.AuditLog(context.Background(), 100000)
	if err != nil {
		t.Fatal(err)
	}
	return entries
}
