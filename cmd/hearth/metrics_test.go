package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/grpc/codes"

	"github.com/hearth-memory/hearth/server/metrics"
	"github.com/hearth-memory/hearth/server/models/modeltest"
	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/testwait"
)

// scrape gets /metrics with token ("" for none).
func scrape(t testing.TB, td *testDaemon, token string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, td.url+"/metrics", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

// parseMetrics parses the Prometheus text format with Prometheus's own
// parser, failing the test on any error.
func parseMetrics(t testing.TB, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, text)
	}
	return fams
}

var (
	kindLabel     = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)
	positionLabel = regexp.MustCompile(`^(0|[1-9][0-9]?)$`)
)

// checkClosedLabels fails for any label value of a hearth_ metric outside
// its closed set.
func checkClosedLabels(t testing.TB, fams map[string]*dto.MetricFamily) {
	t.Helper()
	tools := []string{metrics.Other}
	for _, name := range toolNames() {
		tools = append(tools, name)
	}
	var codeNames []string
	for c := range codes.Code(17) {
		codeNames = append(codeNames, metrics.CodeName(c))
	}
	sets := map[string]func(string) bool{
		"tool":   func(v string) bool { return slices.Contains(tools, v) },
		"code":   func(v string) bool { return slices.Contains(codeNames, v) },
		"type":   func(v string) bool { return v == metrics.Other || storage.ValidType(v) },
		"status": func(v string) bool { return v == metrics.Other || storage.ValidStatus(v) },
		"kind":   func(v string) bool { return kindLabel.MatchString(v) },
		"state": func(v string) bool {
			return v == metrics.Other || slices.Contains(storage.JobStates, v) || slices.Contains([]string{"current", "stale", "missing"}, v)
		},
		"le": func(v string) bool { return true }, // histogram buckets: numbers
		"tier": func(v string) bool {
			return slices.Contains([]string{"primary", "fallback", "direct", metrics.Other}, v)
		},
		// A model server's position in the configuration, never its URL.
		"position":   func(v string) bool { return positionLabel.MatchString(v) },
		"checkpoint": func(v string) bool { return slices.Contains([]string{"truncate", "background", "catch-up"}, v) },
		"result":     func(v string) bool { return slices.Contains([]string{"done", "unfinished", "failed"}, v) },
		"outcome":    func(v string) bool { return slices.Contains(storage.ReceiptOutcomes, v) },
	}
	for name, f := range fams {
		if !strings.HasPrefix(name, "hearth_") {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				ok, known := sets[l.GetName()]
				if !known || !ok(l.GetValue()) {
					t.Errorf("%s: label %s=%q is not in a closed set", name, l.GetName(), l.GetValue())
				}
			}
		}
	}
}

// sample returns the value of the metric of family name with labels.
func sample(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if got[k] != v {
				continue next
			}
		}
		switch {
		case m.GetCounter() != nil:
			return m.GetCounter().GetValue(), true
		case m.GetGauge() != nil:
			return m.GetGauge().GetValue(), true
		case m.GetHistogram() != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// TestMetrics holds GET /metrics: admin scope through the one interceptor
// (401 without a token, 403 without admin, both audited as any call), the
// Prometheus text format that Prometheus's parser reads, the series the
// issue asks for, and closed label sets only.
func TestMetrics(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, parityOptions())
	admin := td.tokens["claude-code"]
	for _, tr := range transports(td) {
		if r := tr.call(t, admin, "memory_store", storeArgs("github/acme/metrics", "Metric "+tr.name(), "Counted.")); !r.ok {
			t.Fatal(r)
		}
		tr.call(t, admin, "memory_search", map[string]any{"namespace": "github/acme/metrics", "query": "metric"})
		tr.call(t, "hearth_wrong", "memory_search", map[string]any{"query": "x"})
	}
	if r := (restTransport{td}).call(t, admin, "memory_backup", map[string]any{}); !r.ok {
		t.Fatal(r)
	}
	// A job far in the future: queued, never run by the test's workers.
	if _, _, err := td.db.EnqueueJob(context.Background(), storage.NewJob{Kind: "extraction", RunAfter: time.Now().Add(24 * time.Hour)}); err != nil {
		t.Fatal(err)
	}

	t.Run("ErrNoToken", func(t *testing.T) {
		code, _, body := scrape(t, td, "")
		if code != 401 || !strings.Contains(body, "UNAUTHENTICATED") {
			t.Errorf("got %d %s, want 401", code, body)
		}
	})
	t.Run("ErrNoAdmin", func(t *testing.T) {
		code, _, body := scrape(t, td, td.tokens["codex"])
		if code != 403 || !strings.Contains(body, "lacks scope admin") {
			t.Errorf("got %d %s, want 403", code, body)
		}
	})
	t.Run("OK", func(t *testing.T) {
		code, ct, text := scrape(t, td, admin)
		if code != 200 || !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
			t.Fatalf("got %d %q", code, ct)
		}
		fams := parseMetrics(t, text)
		checkClosedLabels(t, fams)
		for _, c := range []struct {
			name   string
			labels map[string]string
			min    float64
		}{
			{"hearth_calls_total", map[string]string{"tool": "memory_store", "code": "OK"}, 3},
			// REST, gRPC and MCP: over MCP a tool call's own RPC is
			// where an unknown caller is stopped.
			{"hearth_calls_total", map[string]string{"tool": "memory_search", "code": "UNAUTHENTICATED"}, 3},
			{"hearth_calls_total", map[string]string{"tool": "memory_metrics", "code": "PERMISSION_DENIED"}, 1},
			{"hearth_call_duration_seconds", map[string]string{"tool": "memory_search"}, 3},
			{"hearth_records", map[string]string{"type": "decision", "status": "active"}, 3},
			{"hearth_jobs", map[string]string{"kind": "extraction", "state": "queued"}, 1},
			{"hearth_last_backup_timestamp_seconds", nil, 1},
			{"hearth_last_backup_age_seconds", nil, 0},
			// The single writer: the stores above (and the audit rows of
			// the refusals) committed, nothing queued once they are done.
			{"hearth_write_commits_total", nil, 1},
			{"hearth_writes_committed_total", nil, 3},
			{"hearth_writes_waiting", nil, 0},
			{"hearth_wal_bytes", nil, 0},
			{"hearth_wal_checkpoints_total", map[string]string{"checkpoint": "truncate", "result": "done"}, 0},
			{"hearth_wal_checkpoints_total", map[string]string{"checkpoint": "background", "result": "failed"}, 0},
			{"hearth_wal_checkpoints_total", map[string]string{"checkpoint": "catch-up", "result": "done"}, 0},
			{"hearth_wal_restarts_total", nil, 0},
		} {
			v, ok := sample(fams, c.name, c.labels)
			if !ok || v < c.min {
				t.Errorf("%s%v = %v (present %v), want at least %v", c.name, c.labels, v, ok, c.min)
			}
		}
	})
	t.Run("Documented", func(t *testing.T) {
		// Every series the server sends is named in the operations guide
		// and the add-on's documentation.
		_, _, text := scrape(t, td, admin)
		for _, doc := range []string{"docs/operations.md", "addon/hearth/DOCS.md"} {
			b, err := os.ReadFile(filepath.Join("..", "..", doc))
			if err != nil {
				t.Fatal(err)
			}
			for name := range parseMetrics(t, text) {
				if strings.HasPrefix(name, "hearth_") && !strings.Contains(string(b), "`"+name) {
					t.Errorf("%s does not name %s", doc, name)
				}
			}
		}
	})
	t.Run("NoModelNoEncoder", func(t *testing.T) {
		_, _, text := scrape(t, td, admin)
		for _, name := range []string{"hearth_model_server_up", "hearth_encoder_up", "hearth_record_vectors"} {
			if strings.Contains(text, name+" ") || strings.Contains(text, name+"{") {
				t.Errorf("%s present without a model server or encoder", name)
			}
		}
	})
	t.Run("SameAsTool", func(t *testing.T) {
		r := restTransport{td}.call(t, admin, "memory_metrics", map[string]any{})
		if !r.ok {
			t.Fatal(r)
		}
		parseMetrics(t, str(r.body, "text"))
	})
}

// grantAdmin adds the admin scope (for /metrics) to the configured client
// named name.
func grantAdmin(opts *options.Options, name string) {
	for i := range opts.Clients {
		if opts.Clients[i].Name == name && !slices.Contains(opts.Clients[i].Scopes, options.ScopeAdmin) {
			opts.Clients[i].Scopes = append(opts.Clients[i].Scopes, options.ScopeAdmin)
		}
	}
}

// TestMetrics_ModelsAndEncoder holds the model server and encoder series:
// each configured model server up or down by tier and position (a server
// that does not answer its probe is 0), the encoder up, and the record
// vectors by state once the encoder has caught up. Without either, the
// series are absent (TestMetrics's daemon has neither).
func TestMetrics_ModelsAndEncoder(t *testing.T) {
	t.Parallel()
	const dim = 16
	primary := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "m1"})
	fallback := modeltest.New(t, modeltest.LlamaServer, modeltest.Model{Path: "/models/q.gguf"})
	fallback.Down()
	enc := modeltest.New(t, modeltest.LlamaServer, modeltest.Model{Path: "/models/emb-v1.gguf", Dim: dim})
	opts := modelOptions(primary.URL, fallback.URL)
	opts.EmbedURL, opts.EmbedModel = enc.URL, "qwen3-emb-0.6b"
	grantAdmin(&opts, "claude-code")
	td := startDaemon(t, opts)
	tok := td.tokens["claude-code"]
	waitProbed(t, td, primary.URL, fallback.URL)
	for _, title := range []string{"Vectors one", "Vectors two"} {
		if r := (restTransport{td}).call(t, tok, "memory_store", storeArgs("github/acme/vectors", title, title+".")); !r.ok {
			t.Fatal(r)
		}
	}
	var fams map[string]*dto.MetricFamily
	testwait.WaitFor(t, "the vectors", func() bool {
		code, _, text := scrape(t, td, tok)
		if code != 200 {
			t.Fatalf("scrape: %d %s", code, text)
		}
		fams = parseMetrics(t, text)
		v, _ := sample(fams, "hearth_record_vectors", map[string]string{"state": "current"})
		return v == 2
	})
	checkClosedLabels(t, fams)
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"hearth_model_server_up", map[string]string{"tier": "primary", "position": "0"}, 1},
		{"hearth_model_server_up", map[string]string{"tier": "fallback", "position": "1"}, 0},
		{"hearth_encoder_up", nil, 1},
		{"hearth_record_vectors", map[string]string{"state": "stale"}, 0},
		{"hearth_record_vectors", map[string]string{"state": "missing"}, 0},
	} {
		if v, ok := sample(fams, c.name, c.labels); !ok || v != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, v, ok, c.want)
		}
	}
	if n := len(fams["hearth_model_server_up"].GetMetric()); n != 2 {
		t.Errorf("hearth_model_server_up has %d series, want one per configured server (2)", n)
	}
}

// FuzzMetrics_NoFreeText calls tools with fuzzed text in every argument a
// caller controls (namespaces, queries, titles, ids, topics, the tool name
// and the bearer token), marked so that it can be found, and holds that
// none of it reaches /metrics: every label stays in its closed set.
func FuzzMetrics_NoFreeText(f *testing.F) {
	for _, s := range []string{"", "github/acme/api", "tool=\"x\"", "a\nb", "{le=\"+Inf\"}", "\xff\xfe", strings.Repeat("z", 300), "héllo wörld"} {
		f.Add(s)
	}
	td := startDaemon(f, parityOptions())
	admin := td.tokens["claude-code"]
	const mark = "zqmark"
	f.Fuzz(func(t *testing.T, s string) {
		v := mark + s
		rest := restTransport{td}
		rest.call(t, admin, "memory_store", map[string]any{"namespace": v, "type": v, "title": v, "content": v, "topics": []string{v}, "anchors": []string{v}})
		rest.call(t, admin, "memory_search", map[string]any{"namespace": v, "query": v, "topics": []string{v}})
		rest.call(t, admin, "memory_get", map[string]any{"ids": []string{v}})
		rest.call(t, admin, "memory_namespace", map[string]any{"remote": v})
		if strings.IndexFunc(v, func(r rune) bool { return r < 0x20 || r > 0x7e }) < 0 { // a header value at all
			rest.call(t, v, "memory_status", map[string]any{})
		}
		mcpTransport{td: td}.call(t, admin, "memory_search", map[string]any{"query": v})
		if ok := strings.ToValidUTF8(v, "") == v && !strings.ContainsAny(v, "\r\n\x00"); ok {
			grpcTransport{td: td}.call(t, admin, "memory_search", map[string]any{"query": v})
		}
		req, _ := http.NewRequest(http.MethodPost, td.url+"/api/"+mark+fmt.Sprintf("%x", s), bytes.NewReader([]byte("{}")))
		req.Header.Set("Content-Type", "application/json")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
		code, _, text := scrape(t, td, admin)
		if code != 200 {
			t.Fatalf("scrape: %d %s", code, text)
		}
		if strings.Contains(text, mark) {
			t.Fatalf("caller text reached the metrics:\n%s", text)
		}
		checkClosedLabels(t, parseMetrics(t, text))
	})
}
