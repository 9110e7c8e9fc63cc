package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/cmd/eval/harness"
)

func TestRun_Usage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"ErrNoCommand", nil, 2, "usage:"},
		{"ErrUnknownCommand", []string{"bench"}, 2, `unknown command "bench"`},
		{"OKHelp", []string{"help"}, 0, "eval run -hearth BIN"},
		{"ErrNoHearth", []string{"run"}, 2, "-hearth is required"},
		{"ErrBothEncoders", []string{"run", "-hearth", "h", "-embed-url", "http://x/v1", "-wink", "w.json"}, 2, "give -embed-url or -wink, not both"},
		{"ErrBothDatabases", []string{"run", "-hearth", "h", "-database", "postgres://h@db.lan/hearth", "-postgres"}, 2, "give -database or -postgres, not both"},
		{"ErrSliceHalf", []string{"run", "-hearth", "h", "-records", "40"}, 2, "-records and -queries go together"},
		{"ErrArgument", []string{"run", "-hearth", "h", "extra"}, 2, `unexpected argument "extra"`},
		{"ErrBadFlag", []string{"run", "-nope"}, 2, "flag provided but not defined"},
		{"ErrNoSet", []string{"run", "-hearth", "h", "-set", "/nonexistent"}, 1, "set /nonexistent"},
		{"ErrEncoderNoVectors", []string{"encoder"}, 2, "-vectors is required"},
		{"ErrEncoderBadVectors", []string{"encoder", "-vectors", "/nonexistent.json"}, 1, "nonexistent.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit code = %d, want %d (stderr %q)", code, tc.code, stderr.String())
			}
			if out := stdout.String() + stderr.String(); !strings.Contains(out, tc.want) {
				t.Errorf("output %q lacks %q", out, tc.want)
			}
		})
	}
}

func TestStartWink(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, stop, err := startWink(ctx, "encoder/testdata/vectors.json", "127.0.0.1:0", "", io.Discard)
	if err != nil {
		t.Fatalf("startWink: %v", err)
	}
	defer stop()
	if !strings.HasSuffix(srv.url, "/v1") {
		t.Errorf("url = %q, want it to end in /v1 (Hearth's OpenAI-style embed_url)", srv.url)
	}
	resp, err := http.Post(srv.url+"/embeddings", "application/json", strings.NewReader(`{"input":["kitchen light"]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Data []struct {
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Data) != 1 || len(out.Data[0].Embedding) != 4 {
		t.Errorf("POST /v1/embeddings: HTTP %d, %+v, %v; want one 4-dimensional vector", resp.StatusCode, out, err)
	}
	if got := srv.Requests(); got != 1 {
		t.Errorf("Requests() = %d, want 1", got)
	}
}

// TestRunEval runs `eval run` on a slice of the committed set against a
// freshly built hearth, as `make eval` does on the whole set.
func TestRunEval(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "hearth")
	build := exec.Command("go", "build", "-o", bin, "github.com/hearth-memory/hearth/cmd/hearth")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out := filepath.Join(t.TempDir(), "eval", "results.json")
	var stdout, stderr bytes.Buffer
	args := []string{"run", "-hearth", bin, "-set", "testdata/set", "-records", "20", "-queries", "6", "-out", out}
	if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("eval run: exit %d\n%s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "20 records, 6 queries") {
		t.Errorf("table:\n%s\nwant the slice's size in its header", stdout.String())
	}
	// Without an encoder, fts and rerank (the stand-in rerank server, in
	// this process): no rows for the encoder modes.
	if strings.Contains(stdout.String(), "rrf") || strings.Contains(stdout.String(), "cosine") {
		t.Errorf("table:\n%s\nwant only fts and rerank without an encoder", stdout.String())
	}
	rep, err := harness.ReadReport(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Modes) != 2 || rep.Modes[0].Mode != harness.ModeFTS || len(rep.Modes[0].Results) != 6 {
		t.Fatalf("results file has modes %+v, want fts with 6 results, then rerank", rep.Modes)
	}
	if rr := rep.Modes[1]; rr.Mode != harness.ModeRerank || !rr.Ran || len(rr.HookServer) != 6 || rr.HookReranked != 6 {
		t.Errorf("rerank mode %s ran %v, %d of %d hook searches reranked: want the stand-in to order all 6", rr.Mode, rr.Ran, rr.HookReranked, len(rr.HookServer))
	}

	// A second run compares itself with the first.
	stdout.Reset()
	args = append(args[:len(args)-2], "-out", "", "-compare", out)
	if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("eval run -compare: exit %d\n%s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "Change since") || !strings.Contains(stdout.String(), "+0.000") {
		t.Errorf("comparison with an identical run:\n%s\nwant a Change section with zero deltas", stdout.String())
	}
}

// TestRunEval_PrivatePostgres: with -postgres the run starts a PostgreSQL
// of its own (the tests' pgtest server), stores each daemon's set in a new
// database of it, reports the backend and stops it, as make eval-postgres
// runs it.
func TestRunEval_PrivatePostgres(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "hearth")
	build := exec.Command("go", "build", "-tags", "postgres", "-o", bin, "github.com/hearth-memory/hearth/cmd/hearth")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out := filepath.Join(t.TempDir(), "results.json")
	var stdout, stderr bytes.Buffer
	args := []string{"run", "-hearth", bin, "-set", "testdata/set", "-records", "20", "-queries", "6", "-modes", "fts", "-postgres", "-out", out}
	code := run(context.Background(), args, &stdout, &stderr)
	if code != 0 && strings.Contains(stderr.String(), "no PostgreSQL server binaries") && os.Getenv("HEARTH_REQUIRE_POSTGRES") == "" {
		t.Skipf("%s; HEARTH_REQUIRE_POSTGRES=1 makes this a failure", stderr.String())
	}
	if code != 0 {
		t.Fatalf("eval run -postgres: exit %d\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "starting a private PostgreSQL") || strings.Contains(stderr.String(), "stopping the private PostgreSQL:") {
		t.Errorf("stderr:\n%s\nwant the private server started and stopped without an error", stderr.String())
	}
	rep, err := harness.ReadReport(out)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Backend != "postgres" || len(rep.Modes) != 1 || len(rep.Modes[0].Results) != 6 {
		t.Errorf("report: backend %q, modes %+v; want postgres, fts with 6 results", rep.Backend, rep.Modes)
	}
}
