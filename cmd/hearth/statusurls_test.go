package main

import (
	"net/url"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/server/models/modeltest"
)

// TestStatus_URLsAdminOnly holds issue 41 item 11 on every transport:
// memory_status shows the model servers' and the encoder's URLs to a
// client with admin scope only. Others get the same shape with the URLs
// empty, and no probe error names the address.
func TestStatus_URLsAdminOnly(t *testing.T) {
	t.Parallel()
	primary := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "m1"})
	fallback := modeltest.New(t, modeltest.LlamaServer, modeltest.Model{Path: "/models/q.gguf"})
	fallback.Down()
	enc := modeltest.New(t, modeltest.LlamaServer, modeltest.Model{Path: "/models/emb-v1.gguf", Dim: 8})
	opts := modelOptions(primary.URL, fallback.URL)
	opts.EmbedURL, opts.EmbedModel = enc.URL, "qwen3-emb-0.6b"
	td := startDaemon(t, opts)
	waitProbed(t, td, primary.URL, fallback.URL)
	hosts := []string{}
	for _, u := range []string{primary.URL, fallback.URL, enc.URL} {
		p, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, p.Host)
	}
	for _, tr := range transports(td) {
		t.Run(tr.name(), func(t *testing.T) {
			t.Parallel()
			admin := tr.call(t, td.tokens["claude-code"], "memory_status", map[string]any{})
			if serverEntry(admin.body, primary.URL) == nil || serverEntry(admin.body, fallback.URL) == nil ||
				str(admin.body, "encoder", "url") != enc.URL {
				t.Errorf("admin: %v, want every URL", admin)
			}
			other := tr.call(t, td.tokens["codex"], "memory_status", map[string]any{})
			if !other.ok {
				t.Fatalf("codex: %v", other)
			}
			servers := list(other.body, "model_servers")
			if len(servers) != 2 {
				t.Fatalf("codex: %d model servers, want 2 (the shape stays)", len(servers))
			}
			for i, s := range servers {
				if u, ok := get(s, "url").(string); !ok || u != "" {
					t.Errorf("codex: model server %d url = %v, want present and empty", i, get(s, "url"))
				}
			}
			if u, ok := get(other.body, "encoder", "url").(string); !ok || u != "" || get(other.body, "encoder", "configured") != true {
				t.Errorf("codex: encoder %v, want configured with an empty url", get(other.body, "encoder"))
			}
			if str(servers[1], "tier") != "fallback" || str(servers[1], "probe_error") == "" {
				t.Errorf("codex: fallback %v, want its tier and probe error", servers[1])
			}
			for _, h := range hosts {
				if strings.Contains(string(other.raw), h) {
					t.Errorf("codex: memory_status names %s: %s", h, other.raw)
				}
			}
		})
	}
}
