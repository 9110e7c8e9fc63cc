package page

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

// TestIngressAllowed pins the production rule: the Supervisor's ingress
// proxy and loopback (all of 127.0.0.0/8 and ::1, IPv4-mapped forms too),
// nothing else.
func TestIngressAllowed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		addr string
		want bool
	}{
		{"172.30.32.2", true},
		{"::ffff:172.30.32.2", true},
		{"127.0.0.1", true},
		{"127.0.0.2", true},
		{"127.255.255.254", true},
		{"::1", true},
		{"::ffff:127.0.0.1", true},
		{"172.30.32.1", false}, // Home Assistant Core, not the proxy
		{"172.30.32.3", false},
		{"172.30.33.2", false},
		{"10.0.0.1", false},
		{"192.168.1.20", false},
		{"0.0.0.0", false},
		{"::", false},
		{"fe80::1", false},
	} {
		if got := IngressAllowed(netip.MustParseAddr(tc.addr)); got != tc.want {
			t.Errorf("IngressAllowed(%s) = %v, want %v", tc.addr, got, tc.want)
		}
	}
	if IngressAllowed(netip.Addr{}) {
		t.Error("IngressAllowed(zero Addr) = true, want false")
	}
}

func okHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "page") })
}

// dialFrom returns an HTTP client whose connections come from local address ip.
func dialFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

// TestGuard_Peer serves the guard on a real TCP listener with the allowed
// set narrowed to 127.0.0.1, so that a second loopback address is a refused
// source: refusal is by TCP peer only, whatever the headers claim.
func TestGuard_Peer(t *testing.T) {
	t.Parallel()
	only := netip.MustParseAddr("127.0.0.1")
	srv := httptest.NewServer(Guard(func(a netip.Addr) bool { return a == only }, okHandler()))
	defer srv.Close()

	get := func(t *testing.T, from string, hdr map[string]string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/", nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := dialFrom(from).Do(req)
		if err != nil {
			t.Fatalf("GET from %s: %v", from, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	t.Run("OK", func(t *testing.T) {
		if code, body := get(t, "127.0.0.1", nil); code != http.StatusOK || body != "page" {
			t.Errorf("from 127.0.0.1: got %d %q, want 200 page", code, body)
		}
	})
	t.Run("ErrRefusedSource", func(t *testing.T) {
		if code, body := get(t, "127.0.0.2", nil); code != http.StatusForbidden || strings.Contains(body, "page\n") {
			t.Errorf("from 127.0.0.2: got %d %q, want 403", code, body)
		}
	})
	t.Run("ErrHeadersGrantNothing", func(t *testing.T) {
		hdr := map[string]string{
			"X-Forwarded-For":    "127.0.0.1",
			"X-Real-IP":          "172.30.32.2",
			"X-Ingress-Path":     "/api/hassio_ingress/abc",
			"X-Remote-User-Name": "admin",
		}
		if code, _ := get(t, "127.0.0.2", hdr); code != http.StatusForbidden {
			t.Errorf("from 127.0.0.2 with forwarding headers: got %d, want 403", code)
		}
	})
}

// TestGuard_Request covers the rules after the peer check: the Host a
// loopback peer names, the method and the path.
func TestGuard_Request(t *testing.T) {
	t.Parallel()
	g := Guard(IngressAllowed, okHandler())
	for _, tc := range []struct {
		name, method, remote, host, path string
		want                             int
	}{
		{"OK", "GET", "127.0.0.1:5000", "127.0.0.1:8099", "/", 200},
		{"OKHead", "HEAD", "127.0.0.1:5000", "localhost:8099", "/", 200},
		{"OKIPv6", "GET", "[::1]:5000", "[::1]:8099", "/", 200},
		{"OKProxyAnyHost", "GET", "172.30.32.2:40000", "homeassistant.local:8123", "/", 200},
		{"OKSubdomainLocalhost", "GET", "127.0.0.1:5000", "hearth.localhost", "/", 200},
		{"ErrRebound", "GET", "127.0.0.1:5000", "evil.example:8099", "/", 403},
		{"ErrReboundIP", "GET", "127.0.0.1:5000", "192.168.1.5:8099", "/", 403},
		{"ErrOtherPeer", "GET", "172.30.32.1:40000", "homeassistant.local", "/", 403},
		{"ErrNoPeer", "GET", "", "127.0.0.1", "/", 403},
		{"ErrPost", "POST", "127.0.0.1:5000", "127.0.0.1", "/", 405},
		{"ErrPath", "GET", "127.0.0.1:5000", "127.0.0.1", "/api/memory_status", 404},
		{"ErrFavicon", "GET", "172.30.32.2:40000", "x", "/favicon.ico", 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, "http://x"+tc.path, nil)
			r.RemoteAddr, r.Host = tc.remote, tc.host
			w := httptest.NewRecorder()
			g.ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Errorf("got %d %q, want %d", w.Code, w.Body, tc.want)
			}
			if tc.want == 405 && w.Header().Get("Allow") != "GET, HEAD" {
				t.Errorf("Allow = %q, want GET, HEAD", w.Header().Get("Allow"))
			}
		})
	}
}

func TestLoopbackHost(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST:80": true, "localhost.": true, "127.0.0.1": true, "127.0.0.9:1": true,
		"[::1]:8099": true, "::1": true, "a.localhost:1": true,
		"": false, "localhost.evil.example": false, "127.0.0.1.nip.io": false, "0.0.0.0": false, "[::]:1": false,
	} {
		if got := loopbackHost(host); got != want {
			t.Errorf("loopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}
