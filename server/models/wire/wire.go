// Package wire is the HTTP plumbing the chat router (server/models) and the
// encoder (server/encoder) share: which wire format a base URL speaks, one
// JSON request with the headers every model server needs, the split between
// a server that did not answer and one that answered with an error, and the
// message inside each server's error body (shared/MODELS.md).
package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// Format is the wire format a base URL speaks.
type Format int

const (
	// Ollama is Ollama's native API: /api/tags, /api/chat, /api/embed.
	Ollama Format = iota
	// OpenAI is the OpenAI-style API of llama-server and llama-swap:
	// /v1/models, /v1/chat/completions, /v1/embeddings.
	OpenAI
)

// String returns "ollama" or "openai".
func (f Format) String() string {
	if f == OpenAI {
		return "openai"
	}
	return "ollama"
}

// FormatOf returns the wire format of a base URL: OpenAI when its path
// ends in /v1 (trailing slashes ignored), Ollama otherwise (docs/design.md R-M2).
func FormatOf(baseURL string) Format {
	u, err := url.Parse(baseURL)
	if err == nil && strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/v1") {
		return OpenAI
	}
	return Ollama
}

// MaxMessage bounds the server message an Error keeps, in bytes.
const MaxMessage = 200

// Error is a failed request. Status is 0 when the server did not answer
// (refused connection, timeout, reset, a body cut off); otherwise it is the
// HTTP status of the answer, and Message the server's own error message
// (at most MaxMessage bytes), or what was wrong with a 2xx body.
type Error struct {
	Status  int
	Message string
	Err     error
}

// Error describes the failure without the request's content.
func (e *Error) Error() string {
	switch {
	case e.Status == 0:
		return "no answer: " + e.Err.Error()
	case e.Message != "":
		return fmt.Sprintf("http %d: %s", e.Status, e.Message)
	default:
		return fmt.Sprintf("http %d", e.Status)
	}
}

// Unwrap returns the transport error of a server that did not answer.
func (e *Error) Unwrap() error { return e.Err }

// Answered reports whether the server sent an HTTP answer.
func (e *Error) Answered() bool { return e.Status != 0 }

// NoAnswer reports whether err is an *Error from a server that did not
// answer.
func NoAnswer(err error) bool {
	var we *Error
	return errors.As(err, &we) && !we.Answered()
}

// NewTransport returns the transport both clients use: the default one
// without proxies (model servers are on the LAN), a 10 s dial timeout, and
// enough idle connections per host for the review workers.
func NewTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	t.MaxIdleConnsPerHost = 16
	return t
}

// Do sends one request to url: GET when body is nil, else POST of body as
// JSON (Content-Type: application/json, which llama-swap needs to find the
// model; Accept: application/json, which gets JSON errors from older
// llama-swap). It returns the body of a 2xx answer, read up to limit bytes.
// Every failure is an *Error: Status 0 when the server did not answer, its
// status and message otherwise (a 2xx body over limit is Status 200 with
// Message "reply too large").
func Do(ctx context.Context, c *http.Client, url string, body []byte, limit int64) ([]byte, error) {
	method := http.MethodGet
	var rd io.Reader
	if body != nil {
		method = http.MethodPost
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, &Error{Err: err}
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, &Error{Err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, &Error{Err: err}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &Error{Status: resp.StatusCode, Message: Message(b)}
	}
	if int64(len(b)) > limit {
		return nil, &Error{Status: resp.StatusCode, Message: "reply too large"}
	}
	return b, nil
}

// Bad returns the *Error for a 2xx answer whose body is unusable.
func Bad(format string, args ...any) *Error {
	return &Error{Status: http.StatusOK, Message: clip(fmt.Sprintf(format, args...))}
}

// Message returns the message of an error body in any of the shapes model
// servers send: Ollama's {"error":"msg"}, llama-server's
// {"error":{"message":"msg",…}}, llama-swap's {"src":"llama-swap","error":
// {"message":"msg",…}}, or plain text (llama-swap's legacy proxy, a reverse
// proxy). It is clipped to MaxMessage bytes of valid UTF-8 with control
// characters replaced, so it can be logged and shown.
func Message(body []byte) string {
	var env struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &env) == nil && len(env.Error) > 0 {
		var s string
		if json.Unmarshal(env.Error, &s) == nil {
			return clip(s)
		}
		var obj struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(env.Error, &obj) == nil && obj.Message != "" {
			return clip(obj.Message)
		}
	}
	return clip(string(body))
}

// clip makes s printable: valid UTF-8, no control characters, surrounding
// space trimmed, at most MaxMessage bytes.
func clip(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if len(s) <= MaxMessage {
		return s
	}
	cut := MaxMessage - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Marshal encodes v as JSON without escaping <, > and & (prompts are full
// of them, and the fence delimiters are made of them), with no newline at
// the end.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
