package gateway_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/gateway"
)

// countingReader is a request body that records how many bytes were read.
type countingReader struct {
	n    atomic.Int64
	left int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	for i := range p {
		p[i] = ' '
	}
	c.left -= int64(len(p))
	c.n.Add(int64(len(p)))
	return len(p), nil
}

func (c *countingReader) Close() error { return nil }

// okHandler reads the whole body and records that it ran.
type okHandler struct {
	called atomic.Bool
	read   atomic.Int64
	err    atomic.Value
}

func (h *okHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.called.Store(true)
	n, err := io.Copy(io.Discard, r.Body)
	h.read.Store(n)
	if err != nil {
		h.err.Store(err)
	}
	w.WriteHeader(http.StatusNoContent)
}

func newPost(body io.ReadCloser, length int64) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/api/memory_store", nil)
	r.Body = body
	r.ContentLength = length
	r.Header.Set("Content-Type", "application/json")
	if length >= 0 {
		// As a real client sends it: net/http keeps the header.
		r.Header.Set("Content-Length", strconv.FormatInt(length, 10))
	}
	return r
}

func TestBoundary(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		req        func() *http.Request
		wantStatus int
		wantCode   string
	}{
		{"ErrOrigin", func() *http.Request {
			r := newPost(io.NopCloser(strings.NewReader("{}")), 2)
			r.Header.Set("Origin", "http://evil.example")
			return r
		}, 403, "PERMISSION_DENIED"},
		{"ErrEmptyOrigin", func() *http.Request {
			r := newPost(io.NopCloser(strings.NewReader("{}")), 2)
			r.Header["Origin"] = []string{""}
			return r
		}, 403, "PERMISSION_DENIED"},
		{"ErrOriginOnGet", func() *http.Request {
			r := httptest.NewRequest(http.MethodGet, "/api/memory_store", nil)
			r.Header.Set("Origin", "null")
			return r
		}, 403, "PERMISSION_DENIED"},
		{"ErrTextPlain", func() *http.Request {
			r := newPost(io.NopCloser(strings.NewReader("{}")), 2)
			r.Header.Set("Content-Type", "text/plain")
			return r
		}, 415, "INVALID_ARGUMENT"},
		{"ErrNoContentType", func() *http.Request {
			r := newPost(io.NopCloser(strings.NewReader("{}")), 2)
			r.Header.Del("Content-Type")
			return r
		}, 415, "INVALID_ARGUMENT"},
		{"ErrFormEncoded", func() *http.Request {
			r := newPost(io.NopCloser(strings.NewReader("a=b")), 3)
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			return r
		}, 415, "INVALID_ARGUMENT"},
		{"ErrNoContentLength", func() *http.Request {
			return newPost(io.NopCloser(strings.NewReader("{}")), -1)
		}, 400, "INVALID_ARGUMENT"},
		{"OKCharset", func() *http.Request {
			r := newPost(io.NopCloser(strings.NewReader("{}")), 2)
			r.Header.Set("Content-Type", "application/json; charset=utf-8")
			return r
		}, 204, ""},
		{"OKEmptyBody", func() *http.Request {
			return newPost(http.NoBody, 0)
		}, 204, ""},
		{"OKGetPassesThrough", func() *http.Request {
			return httptest.NewRequest(http.MethodGet, "/api/memory_store", nil)
		}, 204, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &okHandler{}
			rec := httptest.NewRecorder()
			gateway.Boundary(h).ServeHTTP(rec, tt.req())
			if rec.Code != tt.wantStatus {
				t.Fatalf("status = %d, want %d (%s)", rec.Code, tt.wantStatus, rec.Body)
			}
			if tt.wantCode == "" {
				if !h.called.Load() {
					t.Error("handler not called")
				}
				return
			}
			if h.called.Load() {
				t.Error("handler called")
			}
			e := errorBody(t, rec.Body.Bytes())
			if e.GetCode() != tt.wantCode || int(e.GetHttpStatus()) != tt.wantStatus {
				t.Errorf("body code %s http_status %d, want %s %d", e.GetCode(), e.GetHttpStatus(), tt.wantCode, tt.wantStatus)
			}
			if got := rec.Header().Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type = %q", got)
			}
		})
	}

	t.Run("OKExactlyOneMiB", func(t *testing.T) {
		body := &countingReader{left: gateway.MaxBodyBytes}
		h := &okHandler{}
		rec := httptest.NewRecorder()
		gateway.Boundary(h).ServeHTTP(rec, newPost(body, gateway.MaxBodyBytes))
		if rec.Code != http.StatusNoContent || !h.called.Load() {
			t.Fatalf("status = %d, called %v; want the handler to run", rec.Code, h.called.Load())
		}
		if got := h.read.Load(); got != gateway.MaxBodyBytes {
			t.Errorf("handler read %d bytes, want %d", got, gateway.MaxBodyBytes)
		}
		if err := h.err.Load(); err != nil {
			t.Errorf("handler read error: %v", err)
		}
	})

	t.Run("ErrOneMiBPlusOne", func(t *testing.T) {
		body := &countingReader{left: gateway.MaxBodyBytes + 1}
		h := &okHandler{}
		rec := httptest.NewRecorder()
		gateway.Boundary(h).ServeHTTP(rec, newPost(body, gateway.MaxBodyBytes+1))
		if rec.Code != http.StatusRequestEntityTooLarge {
			t.Fatalf("status = %d, want 413", rec.Code)
		}
		if h.called.Load() {
			t.Error("handler called")
		}
		if n := body.n.Load(); n != 0 {
			t.Errorf("%d body bytes read, want 0", n)
		}
		e := errorBody(t, rec.Body.Bytes())
		if e.GetCode() != "RESOURCE_EXHAUSTED" || e.GetHttpStatus() != 413 {
			t.Errorf("body code %s http_status %d", e.GetCode(), e.GetHttpStatus())
		}
		// A 1 MB note is told the record's limit and what to do (issue 42).
		for _, want := range []string{"larger than 1 MiB", "content holds at most 6,000 bytes", "split a long note into several"} {
			if !strings.Contains(e.GetMessage(), want) {
				t.Errorf("message %q lacks %q", e.GetMessage(), want)
			}
		}
	})

	t.Run("ErrBodyLongerThanDeclared", func(t *testing.T) {
		// A body that lies about its length is still cut at the limit.
		body := &countingReader{left: 2 * gateway.MaxBodyBytes}
		h := &okHandler{}
		gateway.Boundary(h).ServeHTTP(httptest.NewRecorder(), newPost(body, 10))
		if h.err.Load() == nil {
			t.Error("handler read past the limit without an error")
		}
		if n := body.n.Load(); n > gateway.MaxBodyBytes+1 {
			t.Errorf("%d bytes read, limit %d", n, gateway.MaxBodyBytes)
		}
	})
}

// TestBoundary_Wire sends requests over real connections, where net/http
// parses the headers itself.
func TestBoundary_Wire(t *testing.T) {
	t.Parallel()
	h := &okHandler{}
	srv := httptest.NewServer(gateway.Boundary(h))
	t.Cleanup(srv.Close)

	t.Run("ErrChunked", func(t *testing.T) {
		// A body of unknown length makes the client send it chunked.
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/api/memory_store", io.NopCloser(strings.NewReader("{}")))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("status = %d, want 400 (%s)", resp.StatusCode, body)
		}
		if e := errorBody(t, body); e.GetHttpStatus() != 400 {
			t.Errorf("http_status = %d", e.GetHttpStatus())
		}
	})

	t.Run("ErrTooLargeAnswersBeforeTheBody", func(t *testing.T) {
		// Only the headers are sent: the 413 must come without the server
		// waiting for (reading) the body.
		h.called.Store(false)
		conn, err := net.DialTimeout("tcp", srv.Listener.Addr().String(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		_, err = io.WriteString(conn, "POST /api/memory_store HTTP/1.1\r\nHost: hearth\r\n"+
			"Content-Type: application/json\r\nContent-Length: 1048577\r\n\r\n")
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("status = %d, want 413", resp.StatusCode)
		}
		if e := errorBody(t, body); e.GetHttpStatus() != 413 {
			t.Errorf("http_status = %d", e.GetHttpStatus())
		}
		if h.called.Load() {
			t.Error("handler called")
		}
	})

	for _, cl := range []string{"abc", "-1", "1, 2", "+2", "0x2", "99999999999999999999999"} {
		t.Run("ErrMalformedContentLength/"+cl, func(t *testing.T) {
			h.called.Store(false)
			conn, err := net.DialTimeout("tcp", srv.Listener.Addr().String(), 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			_, err = io.WriteString(conn, "POST /api/memory_store HTTP/1.1\r\nHost: hearth\r\n"+
				"Content-Type: application/json\r\nContent-Length: "+cl+"\r\n\r\n{}")
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("status = %d, want 400", resp.StatusCode)
			}
			if h.called.Load() {
				t.Error("handler called")
			}
		})
	}
}
