package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
)

// testCA writes a CA and a server certificate for 127.0.0.1 signed by it
// into dir, all made here with crypto/x509, and returns the CA's PEM
// file, the server's certificate and key files.
func testCA(t *testing.T, dir string) (caFile, certFile, keyFile string) {
	t.Helper()
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	write := func(name, kind string, der []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	now := time.Now()
	caKey := key()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Hearth test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	srvKey := key()
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "hearth"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		t.Fatal(err)
	}
	return write("ca.pem", "CERTIFICATE", caDER), write("cert.pem", "CERTIFICATE", leafDER), write("key.pem", "EC PRIVATE KEY", keyDER)
}

// TestServe_TLS: with --tls-cert and --tls-key, REST (HTTP/1.1 and
// HTTP/2), MCP and gRPC all answer on the one port over TLS, through the
// same interceptor (a call without a token is refused); plain HTTP to it
// fails; the CLI reaches it with --ca-file or HEARTH_CA_FILE and fails
// without (issue 42). Not parallel: it sets HEARTH_CA_FILE.
func TestServe_TLS(t *testing.T) {
	caFile, certFile, keyFile := testCA(t, t.TempDir())
	d := &Daemon{Config: Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Options: testOptions(),
		TLSCert: certFile, TLSKey: keyFile}, Log: discardLog()}
	if err := d.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(context.Background()) })
	raw, err := os.ReadFile(filepath.Join(d.TokensDir(), "claude-code"))
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(raw))
	caPEM, _ := os.ReadFile(caFile)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	base := "https://" + d.Addr()

	post := func(t *testing.T, h2 bool, path, auth, body string) (*http.Response, string) {
		t.Helper()
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: h2}
		if !h2 {
			tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{} // HTTP/1.1 only
		}
		defer tr.CloseIdleConnections()
		req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	store := `{"namespace":"github/acme/tls","type":"decision","title":"Retry policy","content":"Retry idempotent calls three times with exponential backoff."}`
	t.Run("REST", func(t *testing.T) {
		for _, h2 := range []bool{false, true} {
			resp, body := post(t, h2, "/api/memory_store", token, store)
			if resp.StatusCode != 200 || !strings.Contains(body, `"status":"active"`) {
				t.Errorf("store over %s: %d %s", resp.Proto, resp.StatusCode, body)
			}
			if want := map[bool]int{false: 1, true: 2}[h2]; resp.ProtoMajor != want {
				t.Errorf("store over %s, want HTTP/%d", resp.Proto, want)
			}
		}
		if resp, _ := post(t, true, "/api/memory_store", "", store); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("store without a token over TLS: %d, want 401", resp.StatusCode)
		}
	})
	t.Run("MCP", func(t *testing.T) {
		resp, body := post(t, false, "/mcp", token, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"memory_search",`+
			`"arguments":{"namespace":"github/acme/tls","query":"retry policy"}}}`)
		if resp.StatusCode != 200 || !strings.Contains(body, "exponential backoff") {
			t.Errorf("MCP search over TLS: %d %s", resp.StatusCode, body)
		}
	})
	t.Run("GRPC", func(t *testing.T) {
		conn, err := grpc.NewClient(d.Addr(), grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pool})))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		mem := hearthv1.NewMemoryServiceClient(conn)
		ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+token)
		resp, err := mem.Search(ctx, &hearthv1.SearchRequest{Namespace: "github/acme/tls", Query: "retry policy"})
		if err != nil || len(resp.GetHits()) != 2 || resp.GetHits()[0].GetTitle() != "Retry policy" { // stored over HTTP/1.1 and HTTP/2
			t.Errorf("gRPC search over TLS: %v %v", resp, err)
		}
		if _, err := mem.Search(context.Background(), &hearthv1.SearchRequest{Query: "retry"}); err == nil || !strings.Contains(err.Error(), "Unauthenticated") {
			t.Errorf("gRPC search without a token over TLS: %v, want Unauthenticated", err)
		}
	})
	t.Run("ErrPlainHTTP", func(t *testing.T) {
		resp, err := http.Post("http://"+d.Addr()+"/api/memory_status", "application/json", strings.NewReader("{}"))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				t.Error("plain HTTP was served on the TLS port")
			}
		}
	})
	// The hooks reach the server over TLS with --ca-file (what hearth
	// connect --ca-file writes into their commands), and fail without it:
	// a session start then injects nothing.
	t.Run("Hook", func(t *testing.T) {
		if resp, body := post(t, false, "/api/memory_store", token, `{"namespace":"global","type":"preference","title":"Tabs over spaces","content":"Indent with tabs."}`); resp.StatusCode != 200 {
			t.Fatalf("store: %d %s", resp.StatusCode, body)
		}
		t.Setenv("HEARTH_CACHE_DIR", t.TempDir())
		t.Setenv("HEARTH_TOKEN", "")
		t.Setenv("HEARTH_CA_FILE", "")
		tokFile := filepath.Join(d.TokensDir(), "claude-code")
		start := func(extra ...string) string {
			in := `{"session_id":"tls-1","cwd":"` + t.TempDir() + `","hook_event_name":"SessionStart","source":"startup"}`
			var out, errOut strings.Builder
			args := append([]string{"session-start", "--harness", "claude-code", "--url", base, "--token-file", tokFile}, extra...)
			runHook(context.Background(), args, strings.NewReader(in), &out, &errOut, time.Now())
			return out.String()
		}
		if out := start("--ca-file", caFile); !strings.Contains(out, "Tabs over spaces") {
			t.Errorf("session start with --ca-file = %q, want the global record", out)
		}
		if out := start(); out != "" {
			t.Errorf("session start without the CA = %q, want nothing (the certificate is not trusted)", out)
		}
		code, out, errOut := cli(t, "connect", "claude-code", "--url", base, "--token-file", tokFile, "--ca-file", caFile)
		if code != 0 || !strings.Contains(out, "hook session-start --harness claude-code --url "+base+" --token-file "+tokFile+" --ca-file "+caFile) {
			t.Errorf("connect --ca-file: exit %d %s %s, want the hooks given the CA", code, out, errOut)
		}
	})
	t.Run("CLI", func(t *testing.T) {
		if code, _, errOut := cli(t, "healthcheck", "--url", base); code != 1 || !strings.Contains(errOut, "certificate") {
			t.Errorf("healthcheck without the CA: exit %d %s, want 1 naming the certificate", code, errOut)
		}
		if code, _, errOut := cli(t, "healthcheck", "--url", base, "--ca-file", caFile); code != 0 {
			t.Errorf("healthcheck --ca-file: exit %d %s", code, errOut)
		}
		// The add-on image's probe of http://127.0.0.1:8765 with ssl on:
		// plain HTTP is refused with 400, and the loopback probe asks again
		// over TLS.
		if code, _, errOut := cli(t, "healthcheck", "--url", "http://"+d.Addr()); code != 0 {
			t.Errorf("healthcheck of the TLS port at an http URL on loopback: exit %d %s", code, errOut)
		}
		t.Setenv("HEARTH_CA_FILE", caFile)
		if code, _, errOut := cli(t, "export", "--url", base, "--token-file", filepath.Join(d.TokensDir(), "claude-code")); code != 1 || !strings.Contains(errOut, "PERMISSION_DENIED") {
			// claude-code has no export scope: the call reached the server over TLS.
			t.Errorf("export over TLS with HEARTH_CA_FILE: exit %d %s", code, errOut)
		}
	})
}

// TestServe_SSLOption: the add-on's ssl option takes certfile and keyfile
// from Home Assistant's /ssl folder, as Home Assistant add-ons do; the
// flags win over it; without ssl the port stays plain.
func TestServe_SSLOption(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args       []string
		cert, key  string
		parseError string
	}{
		{[]string{"--option", "ssl=true"}, "/ssl/fullchain.pem", "/ssl/privkey.pem", ""},
		{[]string{"--option", "ssl=true", "--option", "certfile=hearth.crt", "--option", "keyfile=hearth.key"}, "/ssl/hearth.crt", "/ssl/hearth.key", ""},
		{[]string{"--option", "ssl=true", "--tls-cert", "/etc/c.pem", "--tls-key", "/etc/k.pem"}, "/etc/c.pem", "/etc/k.pem", ""},
		{[]string{"--option", "certfile=hearth.crt"}, "", "", ""},
		{[]string{"--option", "ssl=true", "--option", "certfile=../c.pem"}, "", "", "certfile"},
		{[]string{"--tls-cert", "/etc/c.pem"}, "", "", "--tls-cert and --tls-key go together"},
	} {
		var stderr strings.Builder
		cfg, err := parseServeFlags(append([]string{"--data", t.TempDir()}, c.args...), &stderr)
		switch {
		case c.parseError != "":
			if err == nil || !strings.Contains(err.Error(), c.parseError) {
				t.Errorf("%v: %v, want an error naming %s", c.args, err, c.parseError)
			}
		case err != nil:
			t.Errorf("%v: %v", c.args, err)
		case cfg.TLSCert != c.cert || cfg.TLSKey != c.key:
			t.Errorf("%v: cert %q key %q, want %q %q", c.args, cfg.TLSCert, cfg.TLSKey, c.cert, c.key)
		}
	}
	// A certificate that is not there stops the start, naming it.
	d := &Daemon{Config: Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Options: testOptions(),
		TLSCert: "/nonexistent/fullchain.pem", TLSKey: "/nonexistent/privkey.pem"}, Log: discardLog()}
	if err := d.Open(context.Background()); err == nil || !strings.Contains(err.Error(), "TLS certificate") {
		d.Close(context.Background())
		t.Errorf("open with a missing certificate: %v, want a TLS certificate error", err)
	}
}
