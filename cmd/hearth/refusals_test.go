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
	closeDaemon(t, td) // writes the counts still held

	db, err := storage.Open(context.Background(), filepath.Join(dir, "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	entries, err := db.AuditLog(context.Background(), 100000)
	if err != nil {
		t.Fatal(err)
	}
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
