package wire_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hearth-memory/hearth/server/models/modeltest"
	"github.com/hearth-memory/hearth/server/models/wire"
)

func TestFormatOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url  string
		want wire.Format
	}{
		{"http://box:11434", wire.Ollama},
		{"http://box:8080/v1", wire.OpenAI},
		{"http://box:8080/v1/", wire.OpenAI},
		{"https://box/llama/v1", wire.OpenAI},
		{"http://box:8080/v10", wire.Ollama},
		{"http://v1", wire.Ollama},
	} {
		if got := wire.FormatOf(tc.url); got != tc.want {
			t.Errorf("FormatOf(%q): got %v, want %v", tc.url, got, tc.want)
		}
	}
}

func TestMessage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body, want string
	}{
		{"Ollama", `{"error":"model 'qwen3:8b' not found"}`, "model 'qwen3:8b' not found"},
		{"LlamaServer", `{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}`, "Loading model"},
		{"LlamaSwap", `{"src":"llama-swap","error":{"message":"no router for requested model","type":"invalid_request_error","param":null,"code":"not_found"}}`,
			"no router for requested model"},
		{"PlainText", "could not find suitable inference handler for x\n", "could not find suitable inference handler for x"},
		{"ControlCharacters", "a\x00b\x1b[31mc", "a b [31mc"},
		{"InvalidUTF8", "a\xffb", "a\uFFFDb"},
		{"Empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := wire.Message([]byte(tc.body)); got != tc.want {
				t.Errorf("Message: got %q, want %q", got, tc.want)
			}
		})
	}
	t.Run("Clipped", func(t *testing.T) {
		got := wire.Message([]byte(strings.Repeat("é", 500)))
		if len(got) > wire.MaxMessage || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
			t.Errorf("Message of 1000 bytes: got %d bytes %q, want at most %d valid bytes ending in …", len(got), got, wire.MaxMessage)
		}
	})
}

func FuzzMessage(f *testing.F) {
	for _, s := range []string{
		`{"error":"x"}`, `{"error":{"message":"y"}}`, `{"src":"llama-swap","error":{"message":"z"}}`,
		`{"error":null}`, `{"error":3}`, "plain", "\xff\xfe", `{"object":"error","message":"m"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got := wire.Message(body)
		if len(got) > wire.MaxMessage {
			t.Fatalf("Message: %d bytes, want at most %d", len(got), wire.MaxMessage)
		}
		if !utf8.ValidString(got) {
			t.Fatalf("Message: invalid UTF-8 %q", got)
		}
		for _, r := range got {
			if r < 0x20 || r == 0x7f {
				t.Fatalf("Message: control character in %q", got)
			}
		}
	})
}

func TestDo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hc := &http.Client{Transport: wire.NewTransport()}
	srv := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "qwen3:8b"})

	t.Run("OK", func(t *testing.T) {
		b, err := wire.Do(ctx, hc, srv.URL+"/api/tags", nil, 1<<20)
		if err != nil {
			t.Fatalf("Do: %v", err)
		}
		if !strings.Contains(string(b), `"name":"qwen3:8b"`) {
			t.Errorf("Do: got %s, want the model list", b)
		}
		body := []byte(`{"model":"qwen3:8b","input":["a"]}`)
		if _, err := wire.Do(ctx, hc, srv.URL+"/api/embed", body, 1<<20); err != nil {
			t.Fatalf("Do POST: %v", err)
		}
		reqs := srv.Requests()
		last := reqs[len(reqs)-1]
		if last.Method != http.MethodPost || last.ContentType != "application/json" || string(last.Body) != string(body) {
			t.Errorf("Do POST sent %s %q %s, want POST application/json %s", last.Method, last.ContentType, last.Body, body)
		}
	})
	t.Run("ErrStatus", func(t *testing.T) {
		_, err := wire.Do(ctx, hc, srv.URL+"/api/chat", []byte(`{"model":"nope","stream":false}`), 1<<20)
		var we *wire.Error
		if !errors.As(err, &we) || we.Status != 404 || we.Message != "model 'nope' not found" || !we.Answered() || wire.NoAnswer(err) {
			t.Fatalf("Do: got %v, want an answered 404 with Ollama's message", err)
		}
	})
	t.Run("ErrTooLarge", func(t *testing.T) {
		_, err := wire.Do(ctx, hc, srv.URL+"/api/tags", nil, 10)
		var we *wire.Error
		if !errors.As(err, &we) || we.Status != 200 || we.Message != "reply too large" {
			t.Fatalf("Do: got %v, want reply too large", err)
		}
	})
	t.Run("ErrRefused", func(t *testing.T) {
		down := modeltest.New(t, modeltest.Ollama)
		down.Down()
		_, err := wire.Do(ctx, hc, down.URL+"/api/tags", nil, 1<<20)
		if !wire.NoAnswer(err) {
			t.Fatalf("Do: got %v, want no answer", err)
		}
	})
	t.Run("ErrTimeout", func(t *testing.T) {
		srv.Script(modeltest.Rule{Path: "/api/tags", Times: 1, Action: modeltest.Action{Hang: true}})
		tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		_, err := wire.Do(tctx, hc, srv.URL+"/api/tags", nil, 1<<20)
		if !wire.NoAnswer(err) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Do: got %v, want no answer (deadline exceeded)", err)
		}
	})
}
