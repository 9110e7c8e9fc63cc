package rest_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/hearth-memory/hearth/gateway"
	"github.com/hearth-memory/hearth/gateway/gatewaytest"
	"github.com/hearth-memory/hearth/gateway/rest"
	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server/inproc"
	"google.golang.org/protobuf/encoding/protojson"
)

// newGateway returns the REST handler, behind Boundary as the daemon mounts
// it, over a stand-in backend.
func newGateway(t *testing.T, respond gatewaytest.Responder) (http.Handler, *gatewaytest.Backend) {
	t.Helper()
	backend := gatewaytest.New(t, respond)
	h, err := rest.New(backend.Conn)
	if err != nil {
		t.Fatal(err)
	}
	return gateway.Boundary(h), backend
}

// post sends a JSON POST through h.
func post(h http.Handler, path, body string, header http.Header) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Content-Length", strconv.Itoa(len(body))) // as a real client sends it
	for k, v := range header {
		r.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

func TestNew(t *testing.T) {
	t.Parallel()
	routes, err := gateway.Routes()
	if err != nil {
		t.Fatal(err)
	}

	t.Run("EveryRouteReachesItsRPC", func(t *testing.T) {
		h, backend := newGateway(t, nil)
		for _, r := range routes {
			rec := post(h, r.Path(), "{}", nil)
			if rec.Code != http.StatusOK {
				t.Errorf("POST %s = %d %s", r.Path(), rec.Code, rec.Body)
				continue
			}
			calls := backend.Calls()
			if got := calls[len(calls)-1].Method; got != r.FullMethod() {
				t.Errorf("POST %s called %s, want %s", r.Path(), got, r.FullMethod())
			}
		}
	})

	t.Run("BodyIsTheRequest", func(t *testing.T) {
		h, backend := newGateway(t, nil)
		rec := post(h, "/api/memory_search", `{"query":"sqlite wal","limit":3,"topics":["db"]}`, nil)
		if rec.Code != http.StatusOK {
			t.Fatalf("status = %d %s", rec.Code, rec.Body)
		}
		want := &hearthv1.SearchRequest{Query: "sqlite wal", Limit: 3, Topics: []string{"db"}}
		if got := backend.Calls()[0].Request; !proto.Equal(got, want) {
			t.Errorf("request = %v, want %v", got, want)
		}
	})

	t.Run("ResultBytes", func(t *testing.T) {
		resp := &hearthv1.StatusResponse{Version: "1.2.3", Records: 4, Counts: []*hearthv1.TypeStatusCount{{Type: "decision", Status: "active", Count: 4}}}
		h, _ := newGateway(t, func(string, proto.Message) (proto.Message, error) { return resp, nil })
		rec := post(h, "/api/memory_status", "", nil)
		want, err := gateway.MarshalResult(resp)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Code != http.StatusOK || !bytes.Equal(rec.Body.Bytes(), want) {
			t.Errorf("got %d %s, want 200 %s", rec.Code, rec.Body, want)
		}
		if got := rec.Header().Get("Content-Type"); got != "application/json" {
			t.Errorf("Content-Type = %q", got)
		}
		if got := rec.Header().Get("Content-Length"); got != strconv.Itoa(len(want)) {
			t.Errorf("Content-Length = %q, want %d", got, len(want))
		}
	})

	t.Run("Metadata", func(t *testing.T) {
		h, backend := newGateway(t, nil)
		post(h, "/api/memory_status", "{}", http.Header{
			"Authorization":           {"Bearer tok"},
			"X-Forwarded-For":         {"10.9.9.9"},
			"Grpc-Metadata-X-Caller":  {"spoof"},
			"Grpc-Metadata-Authorize": {"spoof"},
		})
		call := backend.Calls()[0]
		if got := call.Metadata.Get("authorization"); len(got) != 1 || got[0] != "Bearer tok" {
			t.Errorf("authorization = %q, want [Bearer tok]", got)
		}
		// grpc-gateway appends the caller's address (httptest: 192.0.2.1)
		// to what the client claimed: only the last entry is the gateway's.
		xff := call.Metadata.Get("x-forwarded-for")
		if len(xff) != 1 || xff[0] != "10.9.9.9, 192.0.2.1" {
			t.Errorf("x-forwarded-for = %q, want [10.9.9.9, 192.0.2.1]", xff)
		}
		entries := strings.Split(xff[0], ",")
		if last := strings.TrimSpace(entries[len(entries)-1]); last != "192.0.2.1" {
			t.Errorf("last x-forwarded-for entry = %q, want the remote address 192.0.2.1", last)
		}
		for _, key := range []string{"x-caller", "authorize"} {
			if got := call.Metadata.Get(key); len(got) != 0 {
				t.Errorf("client header forwarded as metadata %s = %q", key, got)
			}
		}
		if got := call.Peer.Network(); got != inproc.Network {
			t.Errorf("peer network = %q, want %q", got, inproc.Network)
		}
	})

	t.Run("MetadataWithoutClientXFF", func(t *testing.T) {
		h, backend := newGateway(t, nil)
		post(h, "/api/memory_status", "{}", nil)
		call := backend.Calls()[0]
		if xff := call.Metadata.Get("x-forwarded-for"); len(xff) != 1 || xff[0] != "192.0.2.1" {
			t.Errorf("x-forwarded-for = %q, want [192.0.2.1]", xff)
		}
		if got := call.Metadata.Get("authorization"); len(got) != 0 {
			t.Errorf("authorization = %q, want none", got)
		}
	})

	t.Run("MetadataWithoutRemoteAddress", func(t *testing.T) {
		// A remote address grpc-gateway cannot parse (a unix socket's "@")
		// is not appended; the client's claim must not become the last
		// entry then.
		h, backend := newGateway(t, nil)
		r := httptest.NewRequest(http.MethodPost, "/api/memory_status", strings.NewReader("{}"))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("X-Forwarded-For", "10.9.9.9")
		r.RemoteAddr = "@"
		h.ServeHTTP(httptest.NewRecorder(), r)
		if xff := backend.Calls()[0].Metadata.Get("x-forwarded-for"); len(xff) != 0 {
			t.Errorf("x-forwarded-for = %q, want none", xff)
		}
	})

	t.Run("ErrConflict", func(t *testing.T) {
		record := &hearthv1.Record{Id: "r1", Revision: 3, Title: "current"}
		st, err := status.New(codes.Aborted, "revision 2 is not current").WithDetails(&hearthv1.ErrorDetail{CurrentRevision: 3, Record: record})
		if err != nil {
			t.Fatal(err)
		}
		h, _ := newGateway(t, func(string, proto.Message) (proto.Message, error) { return nil, st.Err() })
		rec := post(h, "/api/memory_update", `{"id":"r1","revision":2}`, nil)
		wantStatus, wantBody := gateway.ErrorJSON(st.Err())
		if rec.Code != wantStatus || rec.Code != http.StatusConflict {
			t.Errorf("status = %d, want 409", rec.Code)
		}
		if !bytes.Equal(rec.Body.Bytes(), wantBody) {
			t.Errorf("body = %s, want %s", rec.Body, wantBody)
		}
		e := errorBody(t, rec.Body.Bytes())
		if e.GetCurrentRevision() != 3 || !proto.Equal(e.GetRecord(), record) {
			t.Errorf("error = %v", e)
		}
	})

	t.Run("ErrUnauthenticated", func(t *testing.T) {
		h, _ := newGateway(t, func(string, proto.Message) (proto.Message, error) {
			return nil, status.Error(codes.Unauthenticated, "unknown caller")
		})
		rec := post(h, "/api/memory_status", "{}", nil)
		if rec.Code != http.StatusUnauthorized || rec.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("status = %d, WWW-Authenticate %q", rec.Code, rec.Header().Get("WWW-Authenticate"))
		}
		if e := errorBody(t, rec.Body.Bytes()); e.GetCode() != "UNAUTHENTICATED" || e.GetHttpStatus() != 401 {
			t.Errorf("error = %v", e)
		}
	})

	t.Run("ErrUnknownField", func(t *testing.T) {
		h, backend := newGateway(t, nil)
		rec := post(h, "/api/memory_store", `{"namespace":"global","titel":"x"}`, nil)
		if rec.Code != http.StatusBadRequest {
			t.Fatalf("status = %d %s", rec.Code, rec.Body)
		}
		if e := errorBody(t, rec.Body.Bytes()); e.GetCode() != "INVALID_ARGUMENT" || e.GetField() != "titel" {
			t.Errorf("error = %v", e)
		}
		if n := len(backend.Calls()); n != 0 {
			t.Errorf("backend called %d times", n)
		}
	})

	t.Run("ErrTrailingGarbage", func(t *testing.T) {
		// grpc-gateway's own decoder would stop after the first value.
		h, backend := newGateway(t, nil)
		rec := post(h, "/api/memory_store", `{"namespace":"global"} {"x":1}`, nil)
		if rec.Code != http.StatusBadRequest || len(backend.Calls()) != 0 {
			t.Errorf("status = %d, %d calls", rec.Code, len(backend.Calls()))
		}
	})

	t.Run("ErrMethod", func(t *testing.T) {
		h, _ := newGateway(t, nil)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/memory_store", nil))
		if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != http.MethodPost {
			t.Errorf("status = %d, Allow %q", rec.Code, rec.Header().Get("Allow"))
		}
		if e := errorBody(t, rec.Body.Bytes()); e.GetHttpStatus() != 405 {
			t.Errorf("error = %v", e)
		}
	})

	t.Run("ErrNoRoute", func(t *testing.T) {
		h, _ := newGateway(t, nil)
		rec := post(h, "/api/memory_nothing", "{}", nil)
		if rec.Code != http.StatusNotFound {
			t.Errorf("status = %d", rec.Code)
		}
		if e := errorBody(t, rec.Body.Bytes()); e.GetCode() != "NOT_FOUND" || e.GetHttpStatus() != 404 {
			t.Errorf("error = %v", e)
		}
	})

	t.Run("ErrUnreadableBody", func(t *testing.T) {
		backend := gatewaytest.New(t, nil)
		h, err := rest.New(backend.Conn)
		if err != nil {
			t.Fatal(err)
		}
		// Without Boundary in front, the handler still caps the body.
		r := httptest.NewRequest(http.MethodPost, "/api/memory_store", io.MultiReader(strings.NewReader(`{"content":"`), strings.NewReader(strings.Repeat("a", gateway.MaxBodyBytes))))
		r.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != http.StatusRequestEntityTooLarge {
			t.Errorf("status = %d", rec.Code)
		}
	})
}

func errorBody(t *testing.T, body []byte) *hearthv1.Error {
	t.Helper()
	var resp hearthv1.ErrorResponse
	if err := protojson.Unmarshal(body, &resp); err != nil {
		t.Fatalf("error body %s: %v", body, err)
	}
	if resp.GetError() == nil {
		t.Fatalf("error body %s has no error", body)
	}
	return resp.GetError()
}
