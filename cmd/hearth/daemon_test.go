package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/server/version"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
)

// TestDaemon_OnePort: the one port serves gRPC on grpc-go's own transport
// (a connection opening with HTTP/2's preface) and everything else on
// net/http. An HTTP/2 request that is not gRPC is refused by the gRPC
// transport with 415 and says why; HTTP/1.1 gets the routes.
func TestDaemon_OnePort(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, testOptions())
	hc := healthpb.NewHealthClient(td.conn)
	if r, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil || r.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("gRPC health: %v %v", r, err)
	}
	resp, err := http.Get(td.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ProtoMajor != 1 {
		t.Errorf("HTTP/1.1 /healthz: %d %s, want 200 over HTTP/1.1", resp.StatusCode, resp.Proto)
	}
	var h2c http.Protocols
	h2c.SetUnencryptedHTTP2(true)
	c := &http.Client{Transport: &http.Transport{Protocols: &h2c}}
	resp, err = c.Get(td.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType || !strings.Contains(resp.Header.Get("Grpc-Message"), "content-type") {
		t.Errorf("HTTP/2 /healthz without TLS: %d %v, want 415 from the gRPC transport naming the content type", resp.StatusCode, resp.Header)
	}
}

// TestDaemon_SilentConnectionClosed: a connection that sends nothing, or
// stops inside the gRPC preface or inside HTTP/1.1 headers, is closed after
// the header timeout instead of holding a connection and its goroutines.
func TestDaemon_SilentConnectionClosed(t *testing.T) {
	t.Parallel()
	td := openDaemon(t, &Daemon{Config: Config{DataDir: t.TempDir(), Options: testOptions()}, HeaderTimeout: 200 * time.Millisecond}, true)
	for _, tc := range []struct{ name, send string }{
		{"Nothing", ""},
		{"PartPreface", "PRI * HTTP/2"},
		{"PartHeaders", "GET /healthz HTTP/1.1\r\nHost: x\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", td.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := io.WriteString(c, tc.send); err != nil {
				t.Fatal(err)
			}
			// Far past the server's 200 ms: only a server that never
			// closes reaches it.
			c.SetReadDeadline(time.Now().Add(20 * time.Second))
			_, err = io.ReadAll(c)
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("the server kept a silent connection open: %v", err)
			}
		})
	}
}

// TestDaemon_Version holds R-T4, R-T5 and R-T8: one version on /health, the
// Server header and MCP serverInfo; /health and /healthz need no token.
func TestDaemon_Version(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, testOptions())
	resp, err := http.Get(td.url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	var h map[string]string
	json.NewDecoder(resp.Body).Decode(&h)
	resp.Body.Close()
	if h["status"] != "ok" || h["version"] != version.Version {
		t.Errorf("/health = %v, want ok and %s", h, version.Version)
	}
	if got, want := resp.Header.Get("Server"), "hearth/"+version.Version; got != want {
		t.Errorf("Server header = %q, want %q", got, want)
	}
	resp, err = http.Get(td.url + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/healthz: %v %v", resp, err)
	}
	resp.Body.Close()

	code, raw := mcpTransport{td: td}.rpc(t, td.tokens["codex"], "initialize", map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "test", "version": "1"},
	})
	if code != 200 {
		t.Fatalf("initialize: %d %s", code, raw)
	}
	var init struct {
		Result struct {
			ServerInfo   struct{ Name, Version string } `json:"serverInfo"`
			Instructions string                         `json:"instructions"`
		} `json:"result"`
	}
	json.Unmarshal(raw, &init)
	if init.Result.ServerInfo.Version != version.Version {
		t.Errorf("serverInfo.version = %q, want %q", init.Result.ServerInfo.Version, version.Version)
	}
	if n := len(init.Result.Instructions); n == 0 || n > 2048 {
		t.Errorf("instructions are %d characters, want 1..2048", n)
	}
	if r := (restTransport{td}).call(t, td.tokens["codex"], "memory_status", map[string]any{}); str(r.body, "version") != version.Version {
		t.Errorf("memory_status version: %v", r)
	}
}

// TestDaemon_GRPCHealthAndReflection holds R-T3: health and reflection on
// the shared port, without a token.
func TestDaemon_GRPCHealthAndReflection(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, testOptions())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hr, err := healthpb.NewHealthClient(td.conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil || hr.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health: %v %v", hr, err)
	}
	stream, err := reflectionpb.NewServerReflectionClient(td.conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	rr, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range rr.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	for _, want := range []string{"hearth.v1.MemoryService", "hearth.v1.AdminService"} {
		if !strings.Contains(strings.Join(names, ","), want) {
			t.Errorf("reflection lists %v, want %s", names, want)
		}
	}
}

// rawRequest sends bytes over a fresh TCP connection and returns the status.
func rawRequest(t *testing.T, addr, req string) int {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestDaemon_Boundary holds R-Q1 and R-Q2 on the real listener, before
// authentication (no token is sent).
func TestDaemon_Boundary(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, testOptions())
	addr := td.Addr()
	tok := td.tokens["claude-code"]
	body := `{"query":"x"}`
	cases := []struct {
		name string
		req  string
		want int
	}{
		{"Origin", "POST /api/memory_search HTTP/1.1\r\nHost: h\r\nOrigin: http://evil.example\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n" + body, 403},
		{"OriginOnHealth", "GET /health HTTP/1.1\r\nHost: h\r\nOrigin: http://evil.example\r\n\r\n", 403},
		{"TextPlain", "POST /api/memory_search HTTP/1.1\r\nHost: h\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\n" + body, 415},
		{"TextPlainMCP", "POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\n" + body, 415},
		{"NoContentLength", "POST /api/memory_search HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nd\r\n" + body + "\r\n0\r\n\r\n", 400},
		{"NoContentLengthAtAll", "POST /api/memory_search HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n", 400},
		{"MalformedContentLength", "POST /api/memory_search HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: 1x\r\n\r\n" + body, 400},
		{"TooLarge", fmt.Sprintf("POST /api/memory_search HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", 1<<20+1), 413},
		{"OK", "POST /api/memory_search HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nAuthorization: Bearer " + tok + "\r\nContent-Length: 13\r\n\r\n" + body, 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := rawRequest(t, addr, c.req); got != c.want {
				t.Errorf("status = %d, want %d", got, c.want)
			}
		})
	}
	// Exactly 1 MiB is accepted by the boundary (and then judged by the API).
	big := `{"query":"` + strings.Repeat("a", 1<<20-len(`{"query":""}`)) + `"}`
	req, _ := http.NewRequest(http.MethodPost, td.url+"/api/memory_search", bytes.NewReader([]byte(big)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 { // query too long: the API's refusal, not the boundary's
		t.Errorf("1 MiB body: status %d, want 400 from the API", resp.StatusCode)
	}
}

// TestDaemon_TokensWrittenOnce holds R-A3: generated tokens are written to
// DIR/tokens/<client> with mode 0600 once, and survive a restart unchanged.
func TestDaemon_TokensWrittenOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	open := func() *Daemon {
		d := &Daemon{Config: Config{DataDir: dir, Listen: "127.0.0.1:0", Options: testOptions()}, Log: discardLog()}
		if err := d.Open(context.Background()); err != nil {
			t.Fatal(err)
		}
		return d
	}
	d := open()
	path := filepath.Join(dir, "tokens", "claude-code")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", fi.Mode().Perm())
	}
	first, _ := os.ReadFile(path)
	d.Close(context.Background())
	d = open()
	defer d.Close(context.Background())
	second, _ := os.ReadFile(path)
	if !bytes.Equal(first, second) {
		t.Errorf("token changed across restart")
	}
	if _, err := os.Stat(filepath.Join(dir, "tokens", "lan-reader")); !os.IsNotExist(err) {
		t.Errorf("address client got a token file: %v", err)
	}
}
