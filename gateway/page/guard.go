package page

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// IngressProxy is the address Home Assistant's Supervisor proxies ingress
// requests from.
var IngressProxy = netip.MustParseAddr("172.30.32.2")

// IngressAllowed is the production rule for who may open the page: the
// Supervisor's ingress proxy and loopback. Loopback is all of 127.0.0.0/8
// and ::1, as the kernel routes them: only processes on this host can
// connect from those addresses.
func IngressAllowed(a netip.Addr) bool {
	a = a.Unmap()
	return a == IngressProxy || a.IsLoopback()
}

// Guard serves h only to requests whose TCP peer address passes allow, and
// answers 403 to every other source. It judges the connection's own peer
// (r.RemoteAddr) only: X-Forwarded-For, X-Ingress-Path and the other headers
// a client can write never grant access.
//
// A loopback peer must also name a loopback host (localhost or a loopback
// address) in Host: a web page whose name was rebound to 127.0.0.1 must not
// read the page's tokens. The ingress proxy's Host is not checked; it
// carries whatever Home Assistant's front end was reached by.
//
// Only GET and HEAD of the page's paths (the root and the record browser)
// are served: the page posts nothing and makes no requests of its own.
func Guard(allow func(netip.Addr) bool, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		peer := peerAddr(r.RemoteAddr)
		if !peer.IsValid() || !allow(peer) {
			refuse(w, http.StatusForbidden, "forbidden: the page is served to Home Assistant's ingress proxy and loopback only")
			return
		}
		if peer.IsLoopback() && !loopbackHost(r.Host) {
			refuse(w, http.StatusForbidden, "forbidden: from loopback, open the page as localhost or a loopback address")
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			refuse(w, http.StatusMethodNotAllowed, "method not allowed: the page is read only")
			return
		}
		if !servedPaths[r.URL.Path] {
			refuse(w, http.StatusNotFound, "not found")
			return
		}
		h.ServeHTTP(w, r)
	})
}

func refuse(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write([]byte(msg + "\n"))
}

// peerAddr parses the host:port net/http gives as RemoteAddr.
func peerAddr(remote string) netip.Addr {
	if ap, err := netip.ParseAddrPort(remote); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}

// loopbackHost reports whether a Host header names this machine by
// loopback: localhost (or a name under .localhost) or a loopback address,
// with any port.
func loopbackHost(host string) bool {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	h = strings.TrimSuffix(strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.Unmap().IsLoopback()
}
