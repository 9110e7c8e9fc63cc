package page

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/hearth-memory/hearth/gateway"
	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"google.golang.org/grpc"
)

// tokenRealm is the Basic realm a browser shows when the page asks for a
// token: the password is the token, the user name is not read.
const tokenRealm = `Basic realm="Hearth dashboard: a token with read and admin scopes as the password", charset="UTF-8"`

// RequireToken serves h to Home Assistant's ingress proxy as before, and to
// every other peer (a process on this host, a port mapped into a
// container) only with the token of a client that has read and admin
// scopes — the views the page shows — as `Authorization: Bearer TOKEN`, or
// as the password of HTTP Basic authentication, which a browser asks for.
// The token is checked by the services' own interceptor (memory_whoami
// over conn), so a rotated token works at once and a wrong one is audited
// like any refused call. Anything else is answered 401 with a Basic
// challenge; the token is never echoed or logged. It is the
// page_token_required option (docs/running.md, "The dashboard").
func RequireToken(conn grpc.ClientConnInterface, h http.Handler) http.Handler {
	admin := hearthv1.NewAdminServiceClient(conn)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if peerAddr(r.RemoteAddr) == IngressProxy {
			h.ServeHTTP(w, r)
			return
		}
		token := pageToken(r)
		if token == "" || !adminToken(r.Context(), admin, token) {
			w.Header().Set("WWW-Authenticate", tokenRealm)
			refuse(w, http.StatusUnauthorized, "unauthorized: outside Home Assistant's ingress the page needs the token of a client with read and admin scopes (page_token_required)")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// pageToken is the request's token: a Bearer token, or the password of
// Basic authentication; "" when there is neither.
func pageToken(r *http.Request) string {
	if _, pw, ok := r.BasicAuth(); ok {
		return pw
	}
	if t, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return strings.TrimSpace(t)
	}
	return ""
}

// adminToken reports whether token is a client's with read and admin
// scopes, as the interceptor judges it.
func adminToken(ctx context.Context, admin hearthv1.AdminServiceClient, token string) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ctx = gateway.WithBearer(ctx, token)
	who, err := admin.Whoami(ctx, &hearthv1.WhoamiRequest{})
	return err == nil && who.GetByToken() && slices.Contains(who.GetScopes(), "admin")
}
