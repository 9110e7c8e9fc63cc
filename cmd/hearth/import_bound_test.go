package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server"
	"google.golang.org/protobuf/encoding/protojson"
)

// TestImport_Bounded holds the bounds on one memory_import call (issue
// #41): a call of server.MaxImportLines lines that all fail lists the
// first 100 failures by line number and counts them all, in a reply of a
// few kilobytes; a call of one line more, and one of 250,000 lines of {},
// is refused whole, naming lines; hearth import sends a larger file in
// calls of at most server.MaxImportLines lines and counts every failure.
func TestImport_Bounded(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, testOptions())
	tok := td.tokens["claude-code"]

	// Every line fails, in parsing or in storage: lines 2, 4, ... are
	// superseded records, which storage refuses without as_active, the
	// others are not records at all.
	var b strings.Builder
	for i := range server.MaxImportLines {
		if i%2 == 1 {
			b.WriteString(`{"namespace":"global","type":"note","title":"t","content":"c","status":"superseded"}` + "\n")
		} else {
			b.WriteString("{}\n")
		}
	}
	r := grpcTransport{td: td}.call(t, tok, "memory_import", map[string]any{"lines": b.String()})
	if !r.ok {
		t.Fatalf("import of %d failing lines: %v", server.MaxImportLines, r)
	}
	var resp hearthv1.ImportResponse
	if err := protojson.Unmarshal(r.raw, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.GetFailedCount() != uint32(server.MaxImportLines) || len(resp.GetFailed()) != 100 || resp.GetImported() != 0 {
		t.Fatalf("failed_count %d, %d failures listed, %d imported; want %d counted, 100 listed, none imported",
			resp.GetFailedCount(), len(resp.GetFailed()), resp.GetImported(), server.MaxImportLines)
	}
	for i, f := range resp.GetFailed() {
		if f.GetLine() != uint32(i+1) {
			t.Fatalf("failure %d is of line %d, want the first 100 lines in order", i, f.GetLine())
		}
	}
	if len(r.raw) > 20<<10 {
		t.Errorf("the reply is %d bytes, want a few kilobytes", len(r.raw))
	}

	for name, lines := range map[string]string{
		"OneLineMore":         b.String() + "{}\n",
		"QuarterMillionEmpty": strings.Repeat("{}\n", 250000),
	} {
		r := grpcTransport{td: td}.call(t, tok, "memory_import", map[string]any{"lines": lines})
		if r.ok || r.code != "INVALID_ARGUMENT" || !strings.Contains(string(r.raw), "lines") ||
			!strings.Contains(string(r.raw), "at most 5000") {
			t.Errorf("%s: %v, want INVALID_ARGUMENT naming lines and the bound", name, r)
		}
	}

	// The CLI splits by lines: 12,001 lines of {} in three calls.
	file := filepath.Join(t.TempDir(), "empty.jsonl")
	if err := os.WriteFile(file, []byte(strings.Repeat("{}\n", 12001)), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := cli(t, "import", "--url", td.url, "--token-file", tokenFile(td, "claude-code"), file)
	if code != 1 || !strings.Contains(stdout, "failed 12001") || strings.Count(stdout, "more failed lines, not listed") != 3 ||
		!strings.Contains(stdout, "lines 5001 to 10000: 4900 more failed lines") {
		t.Errorf("hearth import of 12,001 failing lines: exit %d, stderr %q, stdout ending %q", code, stderr, stdout[max(0, len(stdout)-600):])
	}
}

// BenchmarkImportFlood measures what memory_import calls of lines that all
// fail cost the server (issue #41: at most 20 MB of resident set per
// call): a hearth binary serving an empty store takes, over REST, four
// calls at once of 250,000 lines of {} (each refused whole), then four at
// once of server.MaxImportLines lines of {} (each answered with its first
// failures). rss-growth-MB is the resident set after against before,
// peak-growth-MB the peak (VmHWM) against before, reply-bytes the second
// kind's reply.
func BenchmarkImportFlood(b *testing.B) {
	bin, _ := buildBinary(b)
	for range b.N {
		dir := b.TempDir()
		p := startHearth(b, bin, dir)
		tok, err := os.ReadFile(filepath.Join(dir, "tokens", "claude-code"))
		if err != nil {
			b.Fatal(err)
		}
		rss0, _ := procMem(b, p.cmd.Process.Pid)
		var reply int
		for _, n := range []int{250000, server.MaxImportLines} {
			body, _ := json.Marshal(map[string]any{"lines": strings.Repeat("{}\n", n)})
			var wg sync.WaitGroup
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					req, _ := http.NewRequest(http.MethodPost, "http://"+p.addr+"/api/memory_import", bytes.NewReader(body))
					req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
					req.Header.Set("Content-Type", "application/json")
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					out, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if n == server.MaxImportLines {
						reply = len(out)
					}
				}()
			}
			wg.Wait()
		}
		rss1, hwm := procMem(b, p.cmd.Process.Pid)
		b.ReportMetric(rss1-rss0, "rss-growth-MB")
		b.ReportMetric(hwm-rss0, "peak-growth-MB")
		b.ReportMetric(float64(reply), "reply-bytes")
		p.cmd.Process.Kill()
		p.cmd.Wait()
	}
}
