package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server"
	"github.com/hearth-memory/hearth/storage/testwait"
)

// watchFlood opens n health Watch streams at once on conn and waits until
// each has its first answer or its refusal. The served streams stay open
// until ctx ends. It returns how many were served and how many refused
// with RESOURCE_EXHAUSTED, and the first other error.
func watchFlood(ctx context.Context, conn *grpc.ClientConn, n int) (served, exhausted int, other error) {
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	hc := healthpb.NewHealthClient(conn)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := hc.Watch(ctx, &healthpb.HealthCheckRequest{})
			if err == nil {
				_, err = st.Recv()
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				served++
			case status.Code(err) == codes.ResourceExhausted:
				exhausted++
			case other == nil:
				other = err
			}
		}()
	}
	wg.Wait()
	return served, exhausted, other
}

// TestStreams_WatchBounded holds the bound on open streams (issue #41):
// 1,000 health Watch streams on one connection, as one unauthenticated
// caller opens them, get server.MaxOpenStreamsPerPeer served and the rest
// refused with RESOURCE_EXHAUSTED; callers from other addresses fill the
// process's server.MaxOpenStreams and no more; meanwhile another address
// is still served: its Watch while room is left, and health checks and a
// token client's calls throughout.
func TestStreams_WatchBounded(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, testOptions())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	attacker := dialGRPCFrom(t, td.Addr(), netip.MustParseAddr("127.0.0.1"))
	served, exhausted, err := watchFlood(ctx, attacker, 1000)
	if err != nil {
		t.Fatalf("a Watch failed otherwise than RESOURCE_EXHAUSTED: %v", err)
	}
	if served != server.MaxOpenStreamsPerPeer || exhausted != 1000-served {
		t.Fatalf("1,000 Watch streams from one address: %d served, %d refused; want %d served and the rest refused",
			served, exhausted, server.MaxOpenStreamsPerPeer)
	}

	other := dialGRPCFrom(t, td.Addr(), netip.MustParseAddr("127.0.0.3"))
	if s, _, err := watchFlood(ctx, other, 1); s != 1 {
		t.Fatalf("another address's Watch was not served while the first address held its streams: %v", err)
	}

	// Enough addresses, each asking for twice its share, to pass the
	// process's bound.
	total := server.MaxOpenStreamsPerPeer + 1
	for i := range server.MaxOpenStreams/server.MaxOpenStreamsPerPeer + 1 {
		c := dialGRPCFrom(t, td.Addr(), netip.AddrFrom4([4]byte{127, 0, 1, byte(10 + i)}))
		s, _, err := watchFlood(ctx, c, 2*server.MaxOpenStreamsPerPeer)
		if err != nil {
			t.Fatal(err)
		}
		total += s
	}
	if total != server.MaxOpenStreams {
		t.Errorf("%d Watch streams open at once over many addresses, want at most %d", total, server.MaxOpenStreams)
	}

	// Unary calls are served all along, over the flooded connection too.
	for _, conn := range []*grpc.ClientConn{attacker, other} {
		resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("health Check during the flood: %v %v", resp, err)
		}
	}
	if r := (grpcTransport{td: td}).call(t, td.tokens["claude-code"], "memory_store", storeArgs("github/acme/busy", "During a flood", "Stored while Watch streams were held.")); !r.ok {
		t.Errorf("a store during the flood: %v", r)
	}

	// Streams that end give their room back.
	cancel()
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	testwait.WaitFor(t, "streams that ended give their room back", func() bool {
		s, _, _ := watchFlood(ctx2, dialGRPCFrom(t, td.Addr(), netip.MustParseAddr("127.0.0.1")), 1)
		return s == 1
	})
}

// TestStreams_MaxConcurrentStreams holds the per-connection bound as HTTP/2
// carries it, in plain text (grpc-go's own transport) and over TLS (gRPC
// through net/http's HTTP/2 server): the server announces
// server.MaxConcurrentStreams in its SETTINGS, and a client that opens
// more streams than that on one connection, each waiting for its request,
// has the one past the bound reset.
func TestStreams_MaxConcurrentStreams(t *testing.T) {
	t.Parallel()
	t.Run("Plain", func(t *testing.T) {
		t.Parallel()
		td := startDaemon(t, testOptions())
		c, err := net.Dial("tcp", td.Addr())
		if err != nil {
			t.Fatal(err)
		}
		streamBound(t, c, td.Addr())
	})
	t.Run("TLS", func(t *testing.T) {
		t.Parallel()
		caFile, certFile, keyFile := testCA(t, t.TempDir())
		td := openDaemon(t, &Daemon{Config: Config{DataDir: t.TempDir(), Options: testOptions(), TLSCert: certFile, TLSKey: keyFile}}, true)
		caPEM, _ := os.ReadFile(caFile)
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(caPEM)
		c, err := tls.Dial("tcp", td.Addr(), &tls.Config{RootCAs: pool, NextProtos: []string{"h2"}})
		if err != nil {
			t.Fatal(err)
		}
		streamBound(t, c, td.Addr())
	})
}

// streamBound speaks HTTP/2 on c: it reads the server's stream bound from
// its SETTINGS, opens one stream more than that, and waits for the one
// past the bound to be reset (REFUSED_STREAM, or PROTOCOL_ERROR from a
// server whose SETTINGS the client acknowledged).
func streamBound(t *testing.T, c net.Conn, authority string) {
	t.Helper()
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(c, c)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	var announced uint32
	for got := false; !got; {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		if sf, ok := f.(*http2.SettingsFrame); ok && !sf.IsAck() {
			got = true
			announced, _ = sf.Value(http2.SettingMaxConcurrentStreams)
			if err := fr.WriteSettingsAck(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if announced != server.MaxConcurrentStreams {
		t.Fatalf("SETTINGS_MAX_CONCURRENT_STREAMS = %d, want %d", announced, server.MaxConcurrentStreams)
	}

	// Streams of a unary call whose request never comes stay open.
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, h := range [][2]string{
		{":method", "POST"}, {":scheme", "http"}, {":path", hearthv1.AdminService_Status_FullMethodName},
		{":authority", authority}, {"content-type", "application/grpc"}, {"te", "trailers"},
	} {
		enc.WriteField(hpack.HeaderField{Name: h[0], Value: h[1]})
	}
	const n = server.MaxConcurrentStreams + 1
	for i := range n {
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(2*i + 1), BlockFragment: hb.Bytes(), EndHeaders: true}); err != nil {
			t.Fatal(err)
		}
	}
	last := uint32(2*(n-1) + 1)
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("no reset of stream %d: %v", last, err)
		}
		if rs, ok := f.(*http2.RSTStreamFrame); ok {
			if rs.StreamID != last || (rs.ErrCode != http2.ErrCodeRefusedStream && rs.ErrCode != http2.ErrCodeProtocol) {
				t.Fatalf("stream %d reset with %v; want only stream %d, refused", rs.StreamID, rs.ErrCode, last)
			}
			return
		}
	}
}

// BenchmarkWatchFlood measures what 25,000 health Watch streams opened at
// once on one connection cost the server: a hearth binary serving an empty
// store, its resident set (VmRSS) before and after the flood, and its peak
// (VmHWM) against its size before. rss-growth-MB and peak-growth-MB are
// issue #41's measure (at most 30 MB).
func BenchmarkWatchFlood(b *testing.B) {
	bin, _ := buildBinary(b)
	for range b.N {
		p := startHearth(b, bin, b.TempDir())
		pid := p.cmd.Process.Pid
		rss0, _ := procMem(b, pid)
		conn := dialGRPC(b, p.addr)
		ctx, cancel := context.WithCancel(context.Background())
		served, exhausted, err := watchFlood(ctx, conn, 25000)
		if err != nil {
			b.Fatal(err)
		}
		rss1, hwm := procMem(b, pid)
		cancel()
		conn.Close()
		b.ReportMetric(rss1-rss0, "rss-growth-MB")
		b.ReportMetric(hwm-rss0, "peak-growth-MB")
		b.ReportMetric(float64(served), "served")
		b.ReportMetric(float64(exhausted), "refused")
		p.cmd.Process.Kill()
		p.cmd.Wait()
	}
}

// procMem reads a process's resident set (VmRSS) and its peak (VmHWM),
// in MB.
func procMem(tb testing.TB, pid int) (rss, hwm float64) {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		var (
			key string
			kb  float64
		)
		if n, _ := fmt.Sscanf(line, "%s %f kB", &key, &kb); n == 2 {
			switch key {
			case "VmRSS:":
				rss = kb / 1024
			case "VmHWM:":
				hwm = kb / 1024
			}
		}
	}
	if rss == 0 || hwm == 0 {
		tb.Fatalf("no VmRSS or VmHWM for process %d", pid)
	}
	return rss, hwm
}
