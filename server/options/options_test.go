package options

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files")

// mustParse parses s and fails the test on error.
func mustParse(tb testing.TB, s string) Options {
	tb.Helper()
	o, err := Parse(strings.NewReader(s))
	if err != nil {
		tb.Fatalf("Parse(%s): got error %v, want none", s, err)
	}
	return o
}

func mustReadFile(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// optionErrors flattens err into its *Error parts.
func optionErrors(err error) []*Error {
	var out []*Error
	var walk func(error)
	walk = func(err error) {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		var e *Error
		if errors.As(err, &e) {
			out = append(out, e)
		}
	}
	walk(err)
	return out
}

// wantOptionError fails unless err holds an *Error for option whose text
// contains msg.
func wantOptionError(tb testing.TB, err error, option, msg string) {
	tb.Helper()
	if err == nil {
		tb.Fatalf("got no error, want one for option %q", option)
	}
	for _, e := range optionErrors(err) {
		if e.Option == option {
			if !strings.Contains(e.Error(), msg) {
				tb.Fatalf("got %q, want it to contain %q", e.Error(), msg)
			}
			if !strings.Contains(e.Error(), `option "`+option+`"`) {
				tb.Fatalf("got %q, want it to name %q", e.Error(), option)
			}
			return
		}
	}
	tb.Fatalf("got error %q, want one for option %q", err, option)
}

func TestDefault(t *testing.T) {
	t.Parallel()
	d := Default()
	for _, tt := range []struct {
		option    string
		got, want any
	}{
		{"clients", d.Clients, []Client{
			{Name: "claude-code", Scopes: []Scope{"read", "write", "delete"}},
			{Name: "codex", Scopes: []Scope{"read", "write", "delete"}},
			{Name: "copilot", Scopes: []Scope{"read", "write", "delete"}},
			{Name: "gemini-cli", Scopes: []Scope{"read", "write", "delete"}},
			{Name: "opencode", Scopes: []Scope{"read", "write", "delete"}},
		}},
		{"github_owner", d.GithubOwner, ""},
		{"forge_hosts", d.ForgeHosts, []string(nil)},
		{"forge_owner", d.ForgeOwner, ""},
		{"project_links", d.ProjectLinks, []ProjectLink(nil)},
		{"hubs", d.Hubs, []string(nil)},
		{"namespace_renames", d.NamespaceRenames, []Rename(nil)},
		{"review_at", d.ReviewAt, ReviewAt{Hour: 3}},
		{"candidate_expiry_days", d.CandidateExpiryDays, 14},
		{"summary_candidates", d.SummaryCandidates, false},
		{"anchor_sweep_hours", d.AnchorSweepHours, 6},
		{"context_budget_tokens", d.ContextBudgetTokens, 4000},
		{"hard_context_limit_tokens", d.HardContextLimitTokens, 8000},
		{"retention_deleted_days", d.RetentionDeletedDays, 30},
		{"capture_retention_days", d.CaptureRetentionDays, 14},
		{"audit_retention_days", d.AuditRetentionDays, 365},
		{"ollama_url", d.OllamaURL, ""},
		{"ollama_fallback_url", d.OllamaFallbackURL, ""},
		{"ollama_direct_urls", d.OllamaDirectURLs, []string(nil)},
		{"ollama_model", d.OllamaModel, "qwen3.5:9b"},
		{"ollama_models", d.OllamaModels, ModelChains{}},
		{"ollama_timeout_s", d.OllamaTimeout, 120 * time.Second},
		{"embed_url", d.EmbedURL, ""},
		{"embed_model", d.EmbedModel, "qwen3-emb-0.6b"},
		{"embed_timeout_s", d.EmbedTimeout, 2 * time.Second},
		{"embed_index_dims", d.EmbedIndexDims, 0},
		{"rerank_url", d.RerankURL, ""},
		{"rerank_model", d.RerankModel, "qwen3-reranker-0.6b"},
		{"rerank_timeout_s", d.RerankTimeout, 150 * time.Millisecond},
		{"model_daily_calls", d.ModelDailyCalls, 2000},
		{"model_daily_tokens", d.ModelDailyTokens, 4000000},
		{"min_coverage", d.MinCoverage, 0.2},
		{"page_token_required", d.PageTokenRequired, false},
		{"database_url", d.DatabaseURL, ""},
	} {
		t.Run(tt.option, func(t *testing.T) {
			if !reflect.DeepEqual(tt.got, tt.want) {
				t.Fatalf("got %#v, want %#v", tt.got, tt.want)
			}
		})
	}
	t.Run("Valid", func(t *testing.T) {
		if err := d.Validate(); err != nil {
			t.Fatalf("got %v, want nil", err)
		}
	})
	t.Run("Fresh", func(t *testing.T) {
		a := Default()
		a.Clients[0].Scopes[0] = ScopeAdmin
		if got := Default().Clients[0].Scopes[0]; got != ScopeRead {
			t.Fatalf("got %q, want %q: Default shares slices", got, ScopeRead)
		}
	})
	t.Run("EveryKey", func(t *testing.T) {
		// Every option of docs/design.md §17 has a key, and only those.
		want := []string{"clients", "github_owner", "forge_hosts", "forge_owner", "project_links", "hubs",
			"namespace_renames", "review_at", "candidate_expiry_days", "summary_candidates", "anchor_sweep_hours",
			"context_budget_tokens", "hard_context_limit_tokens", "retention_deleted_days", "capture_retention_days",
			"audit_retention_days", "ollama_url",
			"ollama_fallback_url", "ollama_direct_urls", "ollama_model", "ollama_models", "ollama_timeout_s",
			"embed_url", "embed_model", "embed_timeout_s", "embed_index_dims", "rerank_url", "rerank_model", "rerank_timeout_s", "model_daily_calls", "model_daily_tokens", "min_coverage", "page_token_required",
			"ssl", "certfile", "keyfile", "database_url"}
		if got := keyNames(); !reflect.DeepEqual(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
	})
}

func TestParse_Defaults(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, in string }{
		{"OKEmptyObject", `{}`},
		{"OKWhitespace", " \n{ }\n"},
		{"OKFixtureSupervisorDefaults", string(mustReadFile(t, "supervisor-defaults.json"))},
		{"OKFixtureEmptyLists", string(mustReadFile(t, "supervisor-defaults-empty-lists.json"))},
		{"OKAllNull", `{"clients":null,"github_owner":null,"forge_hosts":null,"forge_owner":null,"project_links":null,
			"hubs":null,"namespace_renames":null,"review_at":null,"candidate_expiry_days":null,"summary_candidates":null,
			"anchor_sweep_hours":null,"context_budget_tokens":null,"hard_context_limit_tokens":null,
			"retention_deleted_days":null,"audit_retention_days":null,"ollama_url":null,"ollama_fallback_url":null,"ollama_direct_urls":null,
			"ollama_model":null,"ollama_models":null,"ollama_timeout_s":null,"embed_url":null,"embed_model":null,
			"embed_timeout_s":null,"embed_index_dims":null,"rerank_url":null,"rerank_model":null,"rerank_timeout_s":null,"model_daily_calls":null,"model_daily_tokens":null,"page_token_required":null}`},
		{"OKEmptyOptionalStrings", `{"github_owner":"","forge_owner":"","ollama_url":"","ollama_fallback_url":"","embed_url":""}`},
		{"OKNullChains", `{"ollama_models":{"extraction":null,"review":null,"answer":null}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got, want := mustParse(t, tt.in), Default(); !reflect.DeepEqual(got, want) {
				t.Fatalf("got %+v, want %+v", got, want)
			}
		})
	}
}

func TestParse_Full(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		got := mustParse(t, string(mustReadFile(t, "supervisor-full.json")))
		want := Options{
			Clients: []Client{
				{Name: "claude-code", Scopes: []Scope{ScopeRead, ScopeWrite, ScopeDelete}},
				{Name: "codex", Scopes: []Scope{ScopeRead, ScopeWrite, ScopeDelete},
					TokenSHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"},
				{Name: "ha-dashboard", Scopes: []Scope{ScopeRead}, IP: netip.MustParseAddr("192.168.1.20")},
				{Name: "laptop.alice", Scopes: []Scope{ScopeRead, ScopeWrite, ScopeDelete, ScopeExport, ScopeAdmin},
					IP: netip.MustParseAddr("fd00::20"), TokenSHA256: "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"},
			},
			GithubOwner:      "alice",
			ForgeHosts:       []string{"gitea.home.arpa", "git.lan:3000"},
			ForgeOwner:       "alice",
			ProjectLinks:     []ProjectLink{{Name: "home-stack", Namespaces: []string{"github/alice/hearth", "gitea/alice/ha-config"}}},
			Hubs:             []string{"github/alice/dotfiles", "topics/home-assistant"},
			NamespaceRenames: []Rename{{From: "github/alice-old", To: "github/alice"}},
			ReviewAt:         ReviewAt{Hour: 2, Minute: 30},

			CandidateExpiryDays:    0,
			SummaryCandidates:      true,
			AnchorSweepHours:       24,
			ContextBudgetTokens:    6000,
			HardContextLimitTokens: 12000,
			RetentionDeletedDays:   90,
			CaptureRetentionDays:   30,
			AuditRetentionDays:     730,

			OllamaURL:         "http://llm.lan:8080/v1",
			OllamaFallbackURL: "http://192.168.1.30:11434",
			OllamaDirectURLs:  []string{"http://gpu1.lan:11434", "http://gpu2.lan:11434"},
			OllamaModel:       "qwen3.5:9b",
			OllamaModels: ModelChains{
				Extraction: []string{"qwen3.5:4b", "qwen3.5:9b"},
				Review:     []string{"qwen3.5:27b"},
				Answer:     []string{"qwen3.5:9b"},
			},
			OllamaTimeout:  300 * time.Second,
			EmbedURL:       "http://llm.lan:8080/v1",
			EmbedModel:     "qwen3-emb-4b",
			EmbedTimeout:   500 * time.Millisecond,
			EmbedIndexDims: 256,
			RerankURL:      "http://llm.lan:8081/v1",
			RerankModel:    "bge-reranker-v2-m3",
			RerankTimeout:  250 * time.Millisecond,

			ModelDailyCalls:  0,
			ModelDailyTokens: 250000,
			MinCoverage:      0.4,

			PageTokenRequired: true,
			SSL:               true, CertFile: "hearth.crt", KeyFile: "hearth.key",
			DatabaseURL: "postgres://hearth:hunter2@db.lan:5432/hearth?sslmode=verify-full",
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("got %+v\nwant %+v", got, want)
		}
	})
}

func TestParse_Values(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		in   string
		want func(*Options)
	}{
		{"OKReviewOff", `{"review_at":"off"}`, func(o *Options) { o.ReviewAt = ReviewAt{Off: true} }},
		{"OKReviewMidnight", `{"review_at":"00:00"}`, func(o *Options) { o.ReviewAt = ReviewAt{} }},
		{"OKReviewLast", `{"review_at":"23:59"}`, func(o *Options) { o.ReviewAt = ReviewAt{Hour: 23, Minute: 59} }},
		{"OKEmbedTimeoutFraction", `{"embed_timeout_s":0.25}`, func(o *Options) { o.EmbedTimeout = 250 * time.Millisecond }},
		{"OKMinCoverageOff", `{"min_coverage":0}`, func(o *Options) { o.MinCoverage = 0 }},
		{"OKMinCoverage", `{"min_coverage":0.5}`, func(o *Options) { o.MinCoverage = 0.5 }},
		{"OKEmbedTimeoutInt", `{"embed_timeout_s":60}`, func(o *Options) { o.EmbedTimeout = time.Minute }},
		{"OKEmbedTimeoutMin", `{"embed_timeout_s":1e-3}`, func(o *Options) { o.EmbedTimeout = time.Millisecond }},
		{"OKEmbedIndexDims", `{"embed_index_dims":8192}`, func(o *Options) { o.EmbedIndexDims = 8192 }},
		{"OKRerankTimeoutFraction", `{"rerank_timeout_s":0.25}`, func(o *Options) { o.RerankTimeout = 250 * time.Millisecond }},
		{"OKRerankURL", `{"rerank_url":"http://llm.lan:8081/v1/"}`, func(o *Options) { o.RerankURL = "http://llm.lan:8081/v1" }},
		{"OKOllamaTimeoutMax", `{"ollama_timeout_s":3600}`, func(o *Options) { o.OllamaTimeout = time.Hour }},
		{"OKExpiryOff", `{"candidate_expiry_days":0}`, func(o *Options) { o.CandidateExpiryDays = 0 }},
		{"OKSweepBounds", `{"anchor_sweep_hours":168}`, func(o *Options) { o.AnchorSweepHours = 168 }},
		{"OKBudgetEqualsLimit", `{"context_budget_tokens":8000}`, func(o *Options) { o.ContextBudgetTokens = 8000 }},
		{"OKIPMapped", `{"clients":[{"name":"ha","scopes":["read"],"ip":"::ffff:192.168.1.5"}]}`, func(o *Options) {
			o.Clients = []Client{{Name: "ha", Scopes: []Scope{ScopeRead}, IP: netip.MustParseAddr("192.168.1.5")}}
		}},
		{"OKClientNullMembers", `{"clients":[{"name":"a","scopes":["read"],"ip":null,"token_sha256":null}]}`, func(o *Options) {
			o.Clients = []Client{{Name: "a", Scopes: []Scope{ScopeRead}}}
		}},
		{"OKClientBothIPAndToken", `{"clients":[{"name":"a","scopes":["write"],"ip":"10.0.0.2","token_sha256":"` + strings.Repeat("ab", 32) + `"}]}`, func(o *Options) {
			o.Clients = []Client{{Name: "a", Scopes: []Scope{ScopeWrite}, IP: netip.MustParseAddr("10.0.0.2"), TokenSHA256: strings.Repeat("ab", 32)}}
		}},
		{"OKURLTrailingSlash", `{"ollama_url":"http://h:8080/v1/"}`, func(o *Options) { o.OllamaURL = "http://h:8080/v1" }},
		{"OKURLHTTPSIPv6", `{"embed_url":"https://[fd00::1]:8443"}`, func(o *Options) { o.EmbedURL = "https://[fd00::1]:8443" }},
		{"OKForgeHostForms", `{"forge_hosts":["gitea.lan","10.0.0.3:3000","[fd00::3]:3000","[fd00::4]"]}`, func(o *Options) {
			o.ForgeHosts = []string{"gitea.lan", "10.0.0.3:3000", "[fd00::3]:3000", "[fd00::4]"}
		}},
		{"OKNamespacesLowerCased", `{"hubs":["GitHub/Alice/Repo"],"project_links":[{"name":"Home","namespaces":["LOCAL/Notes"]}]}`, func(o *Options) {
			o.Hubs = []string{"github/alice/repo"}
			o.ProjectLinks = []ProjectLink{{Name: "home", Namespaces: []string{"local/notes"}}}
		}},
		{"OKRenameAcrossForges", `{"namespace_renames":[{"from":"github/alice","to":"gitea/alice"},{"from":"github/bob","to":"gitea/alice"}]}`, func(o *Options) {
			o.NamespaceRenames = []Rename{{From: "github/alice", To: "gitea/alice"}, {From: "github/bob", To: "gitea/alice"}}
		}},
		{"OKLinkSharesNamespace", `{"project_links":[{"name":"a","namespaces":["github/o/r"]},{"name":"b","namespaces":["github/o/r"]}]}`, func(o *Options) {
			o.ProjectLinks = []ProjectLink{{Name: "a", Namespaces: []string{"github/o/r"}}, {Name: "b", Namespaces: []string{"github/o/r"}}}
		}},
		{"OKModelWithPath", `{"ollama_model":"hf.co/Qwen/Qwen3-8B-GGUF:Q4_K_M"}`, func(o *Options) { o.OllamaModel = "hf.co/Qwen/Qwen3-8B-GGUF:Q4_K_M" }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want := Default()
			tt.want(&want)
			if got := mustParse(t, tt.in); !reflect.DeepEqual(got, want) {
				t.Fatalf("got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestParse_Invalid(t *testing.T) {
	t.Parallel()
	client := func(extra string) string {
		return `{"clients":[{"name":"a","scopes":["read"]` + extra + `}]}`
	}
	hash := strings.Repeat("0", 64)
	for _, tt := range []struct {
		name   string
		in     string
		option string
		msg    string
	}{
		// clients
		{"ErrClientsEmpty", `{"clients":[]}`, "clients", "at least one client"},
		{"ErrClientsType", `{"clients":{"name":"a"}}`, "clients", "must be a list, got an object"},
		{"ErrClientType", `{"clients":["codex"]}`, "clients[0]", "must be an object"},
		{"ErrClientNameMissing", `{"clients":[{"scopes":["read"]}]}`, "clients[0].name", "is required"},
		{"ErrClientNameUpper", `{"clients":[{"name":"Codex","scopes":["read"]}]}`, "clients[0].name", `got "Codex"`},
		{"ErrClientNameLong", `{"clients":[{"name":"` + strings.Repeat("a", 65) + `","scopes":["read"]}]}`, "clients[0].name", "1 to 64"},
		{"ErrClientNameType", `{"clients":[{"name":7,"scopes":["read"]}]}`, "clients[0].name", "must be a string, got a number"},
		{"ErrClientNameDuplicate", `{"clients":[{"name":"a","scopes":["read"]},{"name":"a","scopes":["write"]}]}`, "clients[1].name", "clients[0]"},
		{"ErrClientUnknownKey", client(`,"scope":["read"]`), "clients[0].scope", `did you mean "scopes"`},
		{"ErrClientKeyTwice", client(`,"ip":"10.0.0.1","ip":"10.0.0.2"`), "clients[0].ip", "more than once"},
		{"ErrScopesMissing", `{"clients":[{"name":"a"}]}`, "clients[0].scopes", "at least one"},
		{"ErrScopesEmpty", `{"clients":[{"name":"a","scopes":[]}]}`, "clients[0].scopes", "at least one"},
		{"ErrScopesType", `{"clients":[{"name":"a","scopes":"read"}]}`, "clients[0].scopes", "must be a list"},
		{"ErrScopeUnknown", `{"clients":[{"name":"a","scopes":["read","wirte"]}]}`, "clients[0].scopes[1]", `got "wirte"`},
		{"ErrScopeDuplicate", `{"clients":[{"name":"a","scopes":["read","read"]}]}`, "clients[0].scopes[1]", "repeats clients[0].scopes[0]"},
		{"ErrScopeNull", `{"clients":[{"name":"a","scopes":[null]}]}`, "clients[0].scopes[0]", "must be a string, got null"},
		// database_url
		{"ErrDatabaseURLType", `{"database_url":5432}`, "database_url", "must be a string, got a number"},
		{"ErrDatabaseURLScheme", `{"database_url":"mysql://db.lan/hearth"}`, "database_url", "must be a PostgreSQL URL"},
		{"ErrDatabaseURLOpaque", `{"database_url":"postgres:hearth"}`, "database_url", "must be a PostgreSQL URL"},
		{"ErrDatabaseURLNoSlashes", `{"database_url":"postgres:/hearth"}`, "database_url", "must be a PostgreSQL URL"},
		{"ErrDatabaseURLUpper", `{"database_url":"POSTGRES://db.lan/hearth"}`, "database_url", "must be a PostgreSQL URL"},
		{"ErrDatabaseURLKeywords", `{"database_url":"host=db.lan dbname=hearth"}`, "database_url", "spaces"},
		{"ErrDatabaseURLFragment", `{"database_url":"postgres://db.lan/hearth#x"}`, "database_url", "fragment"},
		{"ErrIPRange", client(`,"ip":"192.168.1.0/24"`), "clients[0].ip", "one IP address"},
		{"ErrIPPort", client(`,"ip":"192.168.1.2:80"`), "clients[0].ip", "one IP address"},
		{"ErrIPUnspecified", client(`,"ip":"0.0.0.0"`), "clients[0].ip", "unspecified"},
		{"ErrIPType", client(`,"ip":["10.0.0.1"]`), "clients[0].ip", "must be a string"},
		{"ErrIPDuplicate", `{"clients":[{"name":"a","scopes":["read"],"ip":"10.0.0.1"},{"name":"b","scopes":["read"],"ip":"10.0.0.1"}]}`, "clients[1].ip", "clients[0]"},
		{"ErrTokenShort", client(`,"token_sha256":"abc"`), "clients[0].token_sha256", "64 hex digits"},
		{"ErrTokenNotHex", client(`,"token_sha256":"` + strings.Repeat("g", 64) + `"`), "clients[0].token_sha256", "64 hex digits"},
		{"ErrTokenDuplicate", `{"clients":[{"name":"a","scopes":["read"],"token_sha256":"` + hash + `"},{"name":"b","scopes":["read"],"token_sha256":"` + hash + `"}]}`, "clients[1].token_sha256", "clients[0]"},
		// github_owner
		{"ErrGithubOwnerChars", `{"github_owner":"alice_smith"}`, "github_owner", `got "alice_smith"`},
		{"ErrGithubOwnerLong", `{"github_owner":"` + strings.Repeat("a", 40) + `"}`, "github_owner", "at most 39"},
		{"ErrGithubOwnerType", `{"github_owner":42}`, "github_owner", "must be a string, got a number"},
		// forge_hosts
		{"ErrForgeHostsType", `{"forge_hosts":"gitea.lan"}`, "forge_hosts", "must be a list, got a string"},
		{"ErrForgeHostURL", `{"forge_hosts":["https://gitea.lan"]}`, "forge_hosts[0]", "not a URL"},
		{"ErrForgeHostChars", `{"forge_hosts":["gitea_lan"]}`, "forge_hosts[0]", "host name"},
		{"ErrForgeHostPortZero", `{"forge_hosts":["gitea.lan:0"]}`, "forge_hosts[0]", "port from 1 to 65535"},
		{"ErrForgeHostPortBig", `{"forge_hosts":["gitea.lan:65536"]}`, "forge_hosts[0]", "port from 1 to 65535"},
		{"ErrForgeHostIPv6Bare", `{"forge_hosts":["fd00::1"]}`, "forge_hosts[0]", "brackets"},
		{"ErrForgeHostDuplicate", `{"forge_hosts":["Gitea.lan","gitea.lan"]}`, "forge_hosts[1]", "repeats forge_hosts[0]"},
		{"ErrForgeHostNull", `{"forge_hosts":[null]}`, "forge_hosts[0]", "must be a string"},
		// forge_owner
		{"ErrForgeOwnerChars", `{"forge_hosts":["gitea.lan"],"forge_owner":"alice/bob"}`, "forge_owner", "a-z, 0-9"},
		{"ErrForgeOwnerWithoutHosts", `{"forge_owner":"alice"}`, "forge_owner", "needs forge_hosts"},
		{"ErrForgeOwnerType", `{"forge_owner":true}`, "forge_owner", "must be a string, got a boolean"},
		// project_links
		{"ErrProjectLinksType", `{"project_links":{"name":"a"}}`, "project_links", "must be a list"},
		{"ErrProjectLinkName", `{"project_links":[{"name":"home stack","namespaces":["github/o/r"]}]}`, "project_links[0].name", "a-z, 0-9"},
		{"ErrProjectLinkNameMissing", `{"project_links":[{"namespaces":["github/o/r"]}]}`, "project_links[0].name", "empty segment"},
		{"ErrProjectLinkNameDuplicate", `{"project_links":[{"name":"a","namespaces":["github/o/r"]},{"name":"a","namespaces":["github/o/s"]}]}`, "project_links[1].name", "project_links[0]"},
		{"ErrProjectLinkNamespacesEmpty", `{"project_links":[{"name":"a","namespaces":[]}]}`, "project_links[0].namespaces", "at least one"},
		{"ErrProjectLinkNamespaceInvalid", `{"project_links":[{"name":"a","namespaces":["github/alice"]}]}`, "project_links[0].namespaces[0]", "segment"},
		{"ErrProjectLinkNamespaceKind", `{"project_links":[{"name":"a","namespaces":["topics/go"]}]}`, "project_links[0].namespaces[0]", "repository namespace"},
		{"ErrProjectLinkNamespaceDuplicate", `{"project_links":[{"name":"a","namespaces":["github/o/r","github/o/r"]}]}`, "project_links[0].namespaces[1]", "repeats"},
		{"ErrProjectLinkUnknownKey", `{"project_links":[{"name":"a","namespace":["github/o/r"]}]}`, "project_links[0].namespace", `did you mean "namespaces"`},
		// hubs
		{"ErrHubsType", `{"hubs":"global"}`, "hubs", "must be a list"},
		{"ErrHubInvalid", `{"hubs":["hub"]}`, "hubs[0]", "must be a namespace"},
		{"ErrHubDuplicate", `{"hubs":["global","global"]}`, "hubs[1]", "repeats hubs[0]"},
		// namespace_renames
		{"ErrRenamesType", `{"namespace_renames":{"from":"github/a","to":"github/b"}}`, "namespace_renames", "must be a list"},
		{"ErrRenameFromBare", `{"namespace_renames":[{"from":"alice","to":"github/bob"}]}`, "namespace_renames[0].from", "owner prefix"},
		{"ErrRenameFromRepo", `{"namespace_renames":[{"from":"github/alice/repo","to":"github/bob"}]}`, "namespace_renames[0].from", "owner prefix"},
		{"ErrRenameToMissing", `{"namespace_renames":[{"from":"github/alice"}]}`, "namespace_renames[0].to", "is required"},
		{"ErrRenameToKind", `{"namespace_renames":[{"from":"github/alice","to":"projects/bob"}]}`, "namespace_renames[0].to", "owner prefix"},
		{"ErrRenameSame", `{"namespace_renames":[{"from":"github/alice","to":"GitHub/Alice"}]}`, "namespace_renames[0]", "both"},
		{"ErrRenameFromDuplicate", `{"namespace_renames":[{"from":"github/a","to":"github/b"},{"from":"github/a","to":"github/c"}]}`, "namespace_renames[1].from", "repeats"},
		{"ErrRenameChain", `{"namespace_renames":[{"from":"github/a","to":"github/b"},{"from":"github/b","to":"github/c"}]}`, "namespace_renames[1].from", "do not chain"},
		{"ErrRenameUnknownKey", `{"namespace_renames":[{"from":"github/a","too":"github/b"}]}`, "namespace_renames[0].too", `did you mean "to"`},
		// review_at
		{"ErrReviewAtHour", `{"review_at":"24:00"}`, "review_at", `got "24:00"`},
		{"ErrReviewAtMinute", `{"review_at":"03:60"}`, "review_at", "HH:MM"},
		{"ErrReviewAtShort", `{"review_at":"3:00"}`, "review_at", "HH:MM"},
		{"ErrReviewAtEmpty", `{"review_at":""}`, "review_at", "HH:MM"},
		{"ErrReviewAtOffCase", `{"review_at":"OFF"}`, "review_at", `"off"`},
		{"ErrReviewAtType", `{"review_at":300}`, "review_at", "must be a string"},
		// integers
		{"ErrCandidateExpiryNegative", `{"candidate_expiry_days":-1}`, "candidate_expiry_days", "must be 0 to 3650, got -1"},
		{"ErrCandidateExpiryBig", `{"candidate_expiry_days":3651}`, "candidate_expiry_days", "got 3651"},
		{"ErrCandidateExpiryString", `{"candidate_expiry_days":"14"}`, "candidate_expiry_days", "must be a whole number, got a string"},
		{"ErrCandidateExpiryFraction", `{"candidate_expiry_days":1.5}`, "candidate_expiry_days", "whole number"},
		{"ErrCandidateExpiryHuge", `{"candidate_expiry_days":99999999999999999999}`, "candidate_expiry_days", "out of range"},
		{"ErrSummaryCandidatesString", `{"summary_candidates":"true"}`, "summary_candidates", "true or false, got a string"},
		{"ErrSummaryCandidatesNumber", `{"summary_candidates":1}`, "summary_candidates", "true or false"},
		{"ErrSSLString", `{"ssl":"yes"}`, "ssl", "true or false"},
		{"ErrCertfilePath", `{"certfile":"../etc/shadow"}`, "certfile", "must be a file name in the /ssl folder"},
		{"ErrKeyfileDir", `{"keyfile":"keys/privkey.pem"}`, "keyfile", "must be a file name in the /ssl folder"},
		{"ErrCertfileEmpty", `{"certfile":""}`, "certfile", "must be a file name in the /ssl folder"},
		{"ErrAnchorSweepZero", `{"anchor_sweep_hours":0}`, "anchor_sweep_hours", "must be 1 to 168, got 0"},
		{"ErrAnchorSweepBig", `{"anchor_sweep_hours":169}`, "anchor_sweep_hours", "got 169"},
		{"ErrContextBudgetSmall", `{"context_budget_tokens":99}`, "context_budget_tokens", "at least 100"},
		{"ErrContextBudgetOverLimit", `{"context_budget_tokens":9000}`, "context_budget_tokens", "at most hard_context_limit_tokens (8000), got 9000"},
		{"ErrContextBudgetType", `{"context_budget_tokens":[4000]}`, "context_budget_tokens", "got a list"},
		{"ErrHardLimitBig", `{"hard_context_limit_tokens":100001}`, "hard_context_limit_tokens", "must be 100 to 100000"},
		{"ErrHardLimitSmall", `{"hard_context_limit_tokens":50}`, "hard_context_limit_tokens", "got 50"},
		{"ErrRetentionZero", `{"retention_deleted_days":0}`, "retention_deleted_days", "must be 1 to 3650, got 0"},
		{"ErrModelDailyCallsNegative", `{"model_daily_calls":-1}`, "model_daily_calls", "must be 0 to 1000000, got -1"},
		{"ErrEmbedIndexDimsBig", `{"embed_index_dims":8193}`, "embed_index_dims", "must be 0 to 8192, got 8193"},
		{"ErrEmbedIndexDimsNegative", `{"embed_index_dims":-1}`, "embed_index_dims", "must be 0 to 8192, got -1"},
		{"ErrModelDailyTokensHigh", `{"model_daily_tokens":1000000001}`, "model_daily_tokens", "must be 0 to 1000000000, got 1000000001"},
		{"ErrRetentionType", `{"retention_deleted_days":false}`, "retention_deleted_days", "got a boolean"},
		{"ErrAuditRetentionNegative", `{"audit_retention_days":-1}`, "audit_retention_days", "must be 0 to 3650, got -1"},
		{"ErrAuditRetentionHigh", `{"audit_retention_days":3651}`, "audit_retention_days", "must be 0 to 3650, got 3651"},
		// URLs
		{"ErrOllamaURLScheme", `{"ollama_url":"ftp://h"}`, "ollama_url", "http or https"},
		{"ErrOllamaURLNoScheme", `{"ollama_url":"llm.lan:11434"}`, "ollama_url", "http or https"},
		{"ErrOllamaURLNoHost", `{"ollama_url":"http:///v1"}`, "ollama_url", "http or https"},
		{"ErrOllamaURLUser", `{"ollama_url":"http://admin@h"}`, "ollama_url", "user name or password"},
		{"ErrOllamaURLQuery", `{"ollama_url":"http://h/?key=1"}`, "ollama_url", "query"},
		{"ErrOllamaURLFragment", `{"ollama_url":"http://h/#x"}`, "ollama_url", "fragment"},
		{"ErrOllamaURLPort", `{"ollama_url":"http://h:0"}`, "ollama_url", "port"},
		{"ErrOllamaURLSpace", `{"ollama_url":"http://h/ v1"}`, "ollama_url", "spaces"},
		{"ErrOllamaURLType", `{"ollama_url":["http://h"]}`, "ollama_url", "must be a string"},
		{"ErrFallbackURLInvalid", `{"ollama_fallback_url":"h"}`, "ollama_fallback_url", "http or https"},
		{"ErrFallbackURLSame", `{"ollama_url":"http://h:11434","ollama_fallback_url":"http://h:11434/"}`, "ollama_fallback_url", "same as ollama_url"},
		{"ErrDirectURLsType", `{"ollama_direct_urls":"http://h"}`, "ollama_direct_urls", "must be a list"},
		{"ErrDirectURLInvalid", `{"ollama_direct_urls":["http://a","gopher://b"]}`, "ollama_direct_urls[1]", "http or https"},
		{"ErrDirectURLDuplicate", `{"ollama_direct_urls":["http://a","http://a/"]}`, "ollama_direct_urls[1]", "repeats ollama_direct_urls[0]"},
		{"ErrEmbedURLPassword", `{"embed_url":"https://u:p@h"}`, "embed_url", "user name or password"},
		{"ErrEmbedURLType", `{"embed_url":1}`, "embed_url", "must be a string"},
		// models
		{"ErrOllamaModelEmpty", `{"ollama_model":""}`, "ollama_model", "must name a model"},
		{"ErrOllamaModelSpace", `{"ollama_model":"qwen 3"}`, "ollama_model", "without spaces"},
		{"ErrOllamaModelControl", `{"ollama_model":"qwen\u0000"}`, "ollama_model", "control"},
		{"ErrOllamaModelLong", `{"ollama_model":"` + strings.Repeat("m", 257) + `"}`, "ollama_model", "at most 256"},
		{"ErrOllamaModelsType", `{"ollama_models":["qwen"]}`, "ollama_models", "must be an object"},
		{"ErrOllamaModelsUnknown", `{"ollama_models":{"summary":["qwen"]}}`, "ollama_models.summary", "unknown key"},
		{"ErrOllamaModelsChainType", `{"ollama_models":{"review":"qwen"}}`, "ollama_models.review", "must be a list"},
		{"ErrOllamaModelsEmptyName", `{"ollama_models":{"extraction":["a",""]}}`, "ollama_models.extraction[1]", "must name a model"},
		{"ErrOllamaModelsDuplicate", `{"ollama_models":{"answer":["a","a"]}}`, "ollama_models.answer[1]", "repeats ollama_models.answer[0]"},
		{"ErrOllamaTimeoutZero", `{"ollama_timeout_s":0}`, "ollama_timeout_s", "must be 1 to 3600, got 0"},
		{"ErrOllamaTimeoutBig", `{"ollama_timeout_s":3601}`, "ollama_timeout_s", "got 3601"},
		{"ErrOllamaTimeoutFraction", `{"ollama_timeout_s":1.5}`, "ollama_timeout_s", "whole number"},
		{"ErrOllamaTimeoutHuge", `{"ollama_timeout_s":9223372036854775807}`, "ollama_timeout_s", "got 9223372036854775807"},
		{"ErrEmbedModelEmpty", `{"embed_model":""}`, "embed_model", "must name a model"},
		{"ErrEmbedModelType", `{"embed_model":{}}`, "embed_model", "must be a string, got an object"},
		{"ErrEmbedTimeoutZero", `{"embed_timeout_s":0}`, "embed_timeout_s", "must be 0.001 to 60 seconds, got 0"},
		{"ErrMinCoverageBig", `{"min_coverage":1.5}`, "min_coverage", "must be 0 to 1, got 1.5"},
		{"ErrMinCoverageNegative", `{"min_coverage":-0.1}`, "min_coverage", "got -0.1"},
		{"ErrEmbedTimeoutNegative", `{"embed_timeout_s":-2}`, "embed_timeout_s", "got -2"},
		{"ErrEmbedTimeoutBig", `{"embed_timeout_s":60.5}`, "embed_timeout_s", "got 60.5"},
		{"ErrEmbedTimeoutTiny", `{"embed_timeout_s":0.0001}`, "embed_timeout_s", "got 0.0001"},
		{"ErrEmbedTimeoutHuge", `{"embed_timeout_s":1e400}`, "embed_timeout_s", "out of range"},
		{"ErrEmbedTimeoutString", `{"embed_timeout_s":"2"}`, "embed_timeout_s", "must be a number, got a string"},
		{"ErrRerankTimeoutZero", `{"rerank_timeout_s":0}`, "rerank_timeout_s", "must be 0.001 to 60 seconds, got 0"},
		{"ErrRerankURLPassword", `{"rerank_url":"https://u:p@h"}`, "rerank_url", "user name or password"},
		{"ErrRerankModelEmpty", `{"rerank_model":""}`, "rerank_model", "must name a model"},
		// the file
		{"ErrUnknownKey", `{"review_at":"03:00","sumary_candidates":true}`, "sumary_candidates", `unknown option; did you mean "summary_candidates"?`},
		{"ErrUnknownKeyCase", `{"Review_At":"03:00"}`, "Review_At", `did you mean "review_at"`},
		{"ErrUnknownKeyFar", `{"listen":":8765"}`, "listen", "unknown option"},
		{"ErrKeyTwice", `{"hubs":["global"],"hubs":null}`, "hubs", "more than once"},
		{"ErrBrokenValue", `{"hubs":["global"}`, "hubs", "invalid JSON"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o, err := Parse(strings.NewReader(tt.in))
			wantOptionError(t, err, tt.option, tt.msg)
			if !reflect.DeepEqual(o, Options{}) {
				t.Fatalf("got %+v with the error, want the zero Options", o)
			}
		})
	}
}

func TestParse_InvalidFile(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, in, msg string }{
		{"ErrEmpty", "", "empty"},
		{"ErrNotObject", `["clients"]`, "want a JSON object"},
		{"ErrNotJSON", `clients: []`, "not valid JSON"},
		{"ErrTrailingData", `{} {}`, "more data after"},
		{"ErrUnclosed", `{"hubs":[]`, "invalid JSON"},
		{"ErrTrailingComma", `{"hubs":[],}`, "invalid JSON"},
		{"ErrTooLarge", `{"hubs":[` + strings.Repeat(" ", MaxFileSize) + `]}`, "larger than"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("got %v, want an error containing %q", err, tt.msg)
			}
		})
	}
}

func TestParse_Several(t *testing.T) {
	t.Parallel()
	t.Run("ErrEveryOptionNamed", func(t *testing.T) {
		_, err := Parse(strings.NewReader(`{"anchor_sweep_hours":0,"retention_deleted_days":0,"bogus":1,"review_at":"x"}`))
		var got []string
		for _, e := range optionErrors(err) {
			got = append(got, e.Option)
		}
		want := []string{"bogus", "review_at"} // type and form errors stop before Validate
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
		_, err = Parse(strings.NewReader(`{"anchor_sweep_hours":0,"retention_deleted_days":0}`))
		got = nil
		for _, e := range optionErrors(err) {
			got = append(got, e.Option)
		}
		want = []string{"anchor_sweep_hours", "retention_deleted_days"}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
		var e *Error
		if !errors.As(err, &e) || e.Option != "anchor_sweep_hours" {
			t.Fatalf("got errors.As %v, want the first *Error", e)
		}
	})
}

// TestParse_NoSecretsEchoed holds that error text never repeats a URL's
// user name or password, nor a token_sha256 value.
func TestParse_NoSecretsEchoed(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, in, option string }{
		{"ErrOllamaURL", `{"ollama_url":"http://alice:hunter2@llm.lan:11434"}`, "ollama_url"},
		{"ErrOllamaURLUnparsable", `{"ollama_url":"http://alice:hunter2@llm lan"}`, "ollama_url"},
		{"ErrOllamaURLBadPort", `{"ollama_url":"http://alice:hunter2@llm.lan:99x"}`, "ollama_url"},
		{"ErrFallbackURL", `{"ollama_fallback_url":"https://alice:hunter2@h"}`, "ollama_fallback_url"},
		{"ErrDirectURL", `{"ollama_direct_urls":["ftp://alice:hunter2@h"]}`, "ollama_direct_urls[0]"},
		{"ErrEmbedURL", `{"embed_url":"http://alice:hunter2@h"}`, "embed_url"},
		{"ErrForgeHost", `{"forge_hosts":["alice:hunter2@gitea.lan"]}`, "forge_hosts[0]"},
		{"ErrForgeHostURL", `{"forge_hosts":["https://alice:hunter2@gitea.lan"]}`, "forge_hosts[0]"},
		{"ErrGithubOwner", `{"github_owner":"alice:hunter2@github.com"}`, "github_owner"},
		{"ErrToken", `{"clients":[{"name":"a","scopes":["read"],"token_sha256":"hunter2hunter2"}]}`, "clients[0].token_sha256"},
		{"ErrUnknownKey", `{"http://alice:hunter2@h":1}`, "(key not shown: it holds an '@')"},
		{"ErrDatabaseURLScheme", `{"database_url":"mysql://alice:hunter2@db.lan/hearth"}`, "database_url"},
		{"ErrDatabaseURLUnparsable", `{"database_url":"postgres://alice:hunter2@db.lan:54x/hearth"}`, "database_url"},
		{"ErrDatabaseURLSpace", `{"database_url":"postgres://alice:hunter2 @db.lan/hearth"}`, "database_url"},
		{"ErrDatabaseURLFragment", `{"database_url":"postgres://alice:hunter2@db.lan/hearth#x"}`, "database_url"},
		{"ErrDatabaseURLKeywords", `{"database_url":"host=db.lan user=alice password=hunter2"}`, "database_url"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tt.in))
			wantOptionError(t, err, tt.option, "")
			if s := err.Error(); strings.Contains(s, "hunter2") || strings.Contains(s, "alice") {
				t.Fatalf("got %q, want no user name or password in it", s)
			}
		})
	}
}

func TestParse_Fixtures(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ file, option, msg string }{
		{"supervisor-defaults.json", "", ""},
		{"supervisor-defaults-empty-lists.json", "", ""},
		{"supervisor-full.json", "", ""},
		{"invalid-unknown-key.json", "reveiw_at", `did you mean "review_at"`},
		{"invalid-scope.json", "clients[1].scopes[1]", `got "wirte"`},
		{"invalid-url-password.json", "ollama_url", "user name or password"},
		{"invalid-anchor-sweep-hours.json", "anchor_sweep_hours", "must be 1 to 168, got 0"},
		{"invalid-context-budget.json", "context_budget_tokens", "at most hard_context_limit_tokens (8000), got 9000"},
		{"invalid-review-at.json", "review_at", `got "3am"`},
	} {
		name := "OK"
		if tt.option != "" {
			name = "Err"
		}
		t.Run(name+"/"+tt.file, func(t *testing.T) {
			o, err := Load(filepath.Join("testdata", tt.file))
			if tt.option == "" {
				if err != nil {
					t.Fatalf("got %v, want no error", err)
				}
				if err := o.Validate(); err != nil {
					t.Fatalf("got Validate %v, want nil", err)
				}
				return
			}
			wantOptionError(t, err, tt.option, tt.msg)
			if !strings.HasPrefix(err.Error(), filepath.Join("testdata", tt.file)+": ") {
				t.Fatalf("got %q, want it to start with the file name", err)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("got %q, want no password in it", err)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	t.Run("OKMissingFile", func(t *testing.T) {
		o, err := Load(filepath.Join(t.TempDir(), FileName))
		if err != nil {
			t.Fatalf("got %v, want nil", err)
		}
		if !reflect.DeepEqual(o, Default()) {
			t.Fatalf("got %+v, want Default()", o)
		}
	})
	t.Run("OKPath", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(Path(dir), []byte(`{"review_at":"off"}`), 0o600); err != nil {
			t.Fatal(err)
		}
		o, err := Load(Path(dir))
		if err != nil {
			t.Fatalf("got %v, want nil", err)
		}
		if !o.ReviewAt.Off {
			t.Fatalf("got %v, want off", o.ReviewAt)
		}
		if got, want := Path(AddonDataDir), "/data/options.json"; got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	})
	t.Run("ErrDirectory", func(t *testing.T) {
		if _, err := Load(t.TempDir()); err == nil {
			t.Fatal("got nil, want an error reading a directory")
		}
	})
}

func TestOptions_Set(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name       string
		key, value string
		want       func(*Options)
	}{
		{"OKBareString", "review_at", "off", func(o *Options) { o.ReviewAt = ReviewAt{Off: true} }},
		{"OKBareTime", "review_at", "04:15", func(o *Options) { o.ReviewAt = ReviewAt{Hour: 4, Minute: 15} }},
		{"OKQuotedString", "review_at", `"off"`, func(o *Options) { o.ReviewAt = ReviewAt{Off: true} }},
		{"OKInt", "candidate_expiry_days", "7", func(o *Options) { o.CandidateExpiryDays = 7 }},
		{"OKBool", "summary_candidates", "true", func(o *Options) { o.SummaryCandidates = true }},
		{"OKSSL", "ssl", "true", func(o *Options) { o.SSL = true }},
		{"OKCertfile", "certfile", "hearth.pem", func(o *Options) { o.CertFile = "hearth.pem" }},
		{"OKFloat", "embed_timeout_s", "0.25", func(o *Options) { o.EmbedTimeout = 250 * time.Millisecond }},
		{"OKNumberAsString", "ollama_model", "7", func(o *Options) { o.OllamaModel = "7" }},
		{"OKBoolAsString", "github_owner", "true", func(o *Options) { o.GithubOwner = "true" }},
		{"OKLowerCased", "github_owner", "Alice", func(o *Options) { o.GithubOwner = "alice" }},
		{"OKURL", "ollama_url", "http://llm.lan:8080/v1/", func(o *Options) { o.OllamaURL = "http://llm.lan:8080/v1" }},
		{"OKList", "hubs", `["global","topics/go"]`, func(o *Options) { o.Hubs = []string{"global", "topics/go"} }},
		{"OKObject", "ollama_models", `{"review":["a","b"]}`, func(o *Options) { o.OllamaModels.Review = []string{"a", "b"} }},
		{"OKClients", "clients", `[{"name":"me","scopes":["read","admin"]}]`, func(o *Options) {
			o.Clients = []Client{{Name: "me", Scopes: []Scope{ScopeRead, ScopeAdmin}}}
		}},
		{"OKNullRestoresDefault", "anchor_sweep_hours", "null", func(o *Options) {}},
		{"OKQuotedNull", "ollama_model", `"null"`, func(o *Options) { o.OllamaModel = "null" }},
		{"OKEmptyUnsets", "github_owner", "", func(o *Options) {}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Default()
			got.AnchorSweepHours = 12 // so that null visibly restores 6
			if err := got.Set(tt.key, tt.value); err != nil {
				t.Fatalf("got %v, want nil", err)
			}
			want := Default()
			want.AnchorSweepHours = 12
			if tt.key == "anchor_sweep_hours" {
				want.AnchorSweepHours = 6
			}
			tt.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got %+v\nwant %+v", got, want)
			}
			if err := got.Validate(); err != nil {
				t.Fatalf("got Validate %v, want nil", err)
			}
		})
	}
	for _, tt := range []struct{ name, key, value, option, msg string }{
		{"ErrUnknownKey", "reveiw_at", "off", "reveiw_at", `did you mean "review_at"`},
		{"ErrIntNotNumber", "candidate_expiry_days", "abc", "candidate_expiry_days", "must be a whole number, got a string"},
		{"ErrIntFraction", "anchor_sweep_hours", "1.5", "anchor_sweep_hours", "whole number"},
		{"ErrBareStringForList", "hubs", "global", "hubs", "must be a list, got a string"},
		{"ErrReviewAt", "review_at", "noon", "review_at", `got "noon"`},
		{"ErrTimeout", "ollama_timeout_s", "0", "ollama_timeout_s", "must be 1 to 3600, got 0"},
		{"ErrClientKey", "clients", `[{"name":"a","scopes":["read"],"admin":true}]`, "clients[0].admin", "unknown key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := Default()
			err := o.Set(tt.key, tt.value)
			wantOptionError(t, err, tt.option, tt.msg)
			if !reflect.DeepEqual(o, Default()) {
				t.Fatalf("got %+v after a failed Set, want it unchanged", o)
			}
		})
	}
	t.Run("OKValidateAfterAll", func(t *testing.T) {
		o := Default()
		// Each alone breaks budget ≤ limit in one order; together they hold.
		for _, kv := range []string{"context_budget_tokens=10000", "hard_context_limit_tokens=20000"} {
			if err := o.SetOverride(kv); err != nil {
				t.Fatalf("got %v, want nil", err)
			}
		}
		if err := o.Validate(); err != nil {
			t.Fatalf("got %v, want nil", err)
		}
	})
	t.Run("ErrValidateAfterSet", func(t *testing.T) {
		o := Default()
		if err := o.Set("ollama_url", "http://alice:hunter2@h"); err != nil {
			t.Fatalf("got %v, want nil", err)
		}
		err := o.Validate()
		wantOptionError(t, err, "ollama_url", "user name or password")
		if strings.Contains(err.Error(), "hunter2") {
			t.Fatalf("got %q, want no password in it", err)
		}
	})
}

func TestOptions_SetOverride(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		o := Default()
		if err := o.SetOverride("ollama_url=http://h:1/x=y"); err != nil {
			t.Fatalf("got %v, want nil", err)
		}
		if got, want := o.OllamaURL, "http://h:1/x=y"; got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	})
	for _, tt := range []struct{ name, kv string }{
		{"ErrNoEquals", "http://alice:hunter2@h"},
		{"ErrNoKey", "=off"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := Default()
			err := o.SetOverride(tt.kv)
			if err == nil || !strings.Contains(err.Error(), "key=value") {
				t.Fatalf("got %v, want a key=value error", err)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("got %q, want no password in it", err)
			}
		})
	}
}

func TestOptions_Validate(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		change func(*Options)
		option string
	}{
		{"ErrNoClients", func(o *Options) { o.Clients = nil }, "clients"},
		{"ErrIP4In6", func(o *Options) { o.Clients[0].IP = netip.MustParseAddr("::ffff:10.0.0.1") }, "clients[0].ip"},
		{"ErrTokenUpper", func(o *Options) { o.Clients[0].TokenSHA256 = strings.Repeat("A", 64) }, "clients[0].token_sha256"},
		{"ErrGithubOwnerUpper", func(o *Options) { o.GithubOwner = "Alice" }, "github_owner"},
		{"ErrForgeHostUpper", func(o *Options) { o.ForgeHosts = []string{"Gitea.lan"} }, "forge_hosts[0]"},
		{"ErrHubUpper", func(o *Options) { o.Hubs = []string{"Global"} }, "hubs[0]"},
		{"ErrReviewAtRange", func(o *Options) { o.ReviewAt = ReviewAt{Hour: 25} }, "review_at"},
		{"ErrReviewAtOffWithTime", func(o *Options) { o.ReviewAt = ReviewAt{Off: true, Hour: 3} }, "review_at"},
		{"ErrOllamaTimeoutFraction", func(o *Options) { o.OllamaTimeout = 1500 * time.Millisecond }, "ollama_timeout_s"},
		{"ErrEmbedTimeoutZero", func(o *Options) { o.EmbedTimeout = 0 }, "embed_timeout_s"},
		{"ErrRerankTimeoutZero", func(o *Options) { o.RerankTimeout = 0 }, "rerank_timeout_s"},
		{"ErrURLTrailingSlash", func(o *Options) { o.EmbedURL = "http://h/" }, "embed_url"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := Default()
			tt.change(&o)
			wantOptionError(t, o.Validate(), tt.option, "")
		})
	}
}

func TestOptions_MarshalJSON(t *testing.T) {
	t.Parallel()
	t.Run("OKGolden", func(t *testing.T) {
		for _, tt := range []struct{ in, golden string }{
			{"", "default.golden.json"},
			{"supervisor-full.json", "full.golden.json"},
		} {
			o := Default()
			if tt.in != "" {
				o = mustParse(t, string(mustReadFile(t, tt.in)))
			}
			got, err := json.MarshalIndent(o, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", tt.golden)
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if want := mustReadFile(t, tt.golden); !bytes.Equal(got, want) {
				t.Fatalf("%s: got\n%s\nwant\n%s", tt.golden, got, want)
			}
			if back := mustParse(t, string(got)); !reflect.DeepEqual(back, o) {
				t.Fatalf("%s: got %+v after a round trip, want %+v", tt.golden, back, o)
			}
		}
	})
	t.Run("OKOptionalKeysAbsent", func(t *testing.T) {
		b, err := json.Marshal(Default())
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"github_owner", "forge_hosts", "forge_owner", "project_links", "hubs",
			"namespace_renames", "ollama_url", "ollama_fallback_url", "ollama_direct_urls", "ollama_models", "embed_url", "database_url"} {
			if v, ok := m[k]; ok {
				t.Fatalf("got %s: %s, want the key absent", k, v)
			}
		}
		for k, v := range m {
			if string(v) == "null" {
				t.Fatalf("got %s: null, want no nulls", k)
			}
		}
	})
}

func TestParse_ManyErrors(t *testing.T) {
	t.Parallel()
	t.Run("ErrCapped", func(t *testing.T) {
		_, err := Parse(strings.NewReader(`{"hubs":[` + strings.Repeat(`"x",`, 100) + `"x"]}`))
		if got := len(optionErrors(err)); got != maxErrors {
			t.Fatalf("got %d option errors, want %d", got, maxErrors)
		}
		if !strings.Contains(err.Error(), "81 more errors not shown") {
			t.Fatalf("got %q, want it to count the rest", err)
		}
	})
}

// TestLoad_Overrides: --option overrides apply before validation, so one can
// rescue a value the file gets wrong (by type or by rule), while an error
// about another key still stops start and names it.
func TestLoad_Overrides(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "options.json")
	if err := os.WriteFile(path, []byte(`{"review_at": "25:00", "anchor_sweep_hours": "often"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Run("OKRescued", func(t *testing.T) {
		o, err := Load(path, "review_at=04:30", "anchor_sweep_hours=12")
		if err != nil {
			t.Fatal(err)
		}
		if o.ReviewAt.String() != "04:30" || o.AnchorSweepHours != 12 {
			t.Errorf("got review_at %s, anchor_sweep_hours %d", o.ReviewAt, o.AnchorSweepHours)
		}
	})
	t.Run("ErrOtherKey", func(t *testing.T) {
		_, err := Load(path, "review_at=04:30")
		if err == nil || !strings.Contains(err.Error(), "anchor_sweep_hours") || strings.Contains(err.Error(), "review_at") {
			t.Errorf("got %v, want an error naming anchor_sweep_hours alone", err)
		}
	})
	t.Run("ErrOverrideInvalid", func(t *testing.T) {
		_, err := Load(filepath.Join(dir, "absent.json"), "anchor_sweep_hours=0")
		var oe *Error
		if !errors.As(err, &oe) || oe.Option != "anchor_sweep_hours" {
			t.Errorf("got %v, want an *Error naming anchor_sweep_hours", err)
		}
	})
}

// TestClient_Kind: how a client is identified, the one answer memory_tokens,
// start-up's token provisioning and the page read: a token_sha256 makes it
// supplied (an ip as well or not), an ip alone an address client, neither
// a generated token.
func TestClient_Kind(t *testing.T) {
	t.Parallel()
	ip, hash := netip.MustParseAddr("192.168.1.5"), strings.Repeat("ab", 32)
	for _, tt := range []struct {
		c    Client
		want ClientKind
	}{
		{Client{Name: "a"}, KindGenerated},
		{Client{Name: "a", IP: ip}, KindAddress},
		{Client{Name: "a", TokenSHA256: hash}, KindSupplied},
		{Client{Name: "a", IP: ip, TokenSHA256: hash}, KindSupplied},
	} {
		if got := tt.c.Kind(); got != tt.want {
			t.Errorf("%+v: Kind() = %s, want %s", tt.c, got, tt.want)
		}
	}
}
