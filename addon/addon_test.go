package addon

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/server/version"
)

// Paths, relative to this package's directory (where go test runs).
const (
	addonDir     = "hearth"
	repoRoot     = ".."
	schemaCopy   = "testdata/addon-lint.schema.json"
	fullOptions  = "testdata/options-full.yaml"
	optionsTestd = "../server/options/testdata"
)

// schemaSource records where the schema copy came from, its sha256 and its
// licence; schemaLicence is the licence's notice, kept with the copy.
const (
	schemaSource  = "testdata/addon-lint.md"
	schemaLicence = "testdata/addon-lint.LICENSE.md"
)

// optionKeys are the options of docs/design.md §17, in its order, then
// database_url (issue #46).
var optionKeys = []string{
	"clients", "github_owner", "forge_hosts", "forge_owner", "project_links", "hubs",
	"namespace_renames", "review_at", "candidate_expiry_days", "summary_candidates",
	"anchor_sweep_hours", "context_budget_tokens", "hard_context_limit_tokens",
	"retention_deleted_days", "capture_retention_days", "audit_retention_days", "ollama_url", "ollama_fallback_url",
	"ollama_direct_urls",
	"ollama_model", "ollama_models", "ollama_timeout_s", "embed_url", "embed_model",
	"embed_timeout_s", "embed_index_dims", "rerank_url", "rerank_model", "rerank_timeout_s", "model_daily_calls", "model_daily_tokens",
	"min_coverage",
	"page_token_required",
	"ssl", "certfile", "keyfile",
	"database_url",
}

// nestedKeys are the members of the options that are objects or lists of
// objects (docs/design.md §17 shapes).
var nestedKeys = map[string][]string{
	"clients":           {"name", "scopes", "ip", "token_sha256"},
	"project_links":     {"name", "namespaces"},
	"namespace_renames": {"from", "to"},
	"ollama_models":     {"extraction", "review", "answer"},
}

func readFile(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func readYAML(tb testing.TB, path string) map[string]any {
	tb.Helper()
	var m map[string]any
	if err := yaml.Unmarshal(readFile(tb, path), &m); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	if m == nil {
		tb.Fatalf("%s: empty", path)
	}
	return m
}

// config is addon/hearth/config.yaml as YAML decodes it.
func config(tb testing.TB) map[string]any {
	tb.Helper()
	return readYAML(tb, filepath.Join(addonDir, "config.yaml"))
}

// asJSON round-trips v through JSON, so YAML ints and JSON numbers compare.
func asJSON(tb testing.TB, v any) any {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		tb.Fatal(err)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func mapOf(tb testing.TB, v any, what string) map[string]any {
	tb.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		tb.Fatalf("%s: got %T, want a mapping", what, v)
	}
	return m
}

// linterSchema compiles the linter's schema (the copy in testdata).
func linterSchema(tb testing.TB) *jsonschema.Schema {
	tb.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(readFile(tb, schemaCopy)))
	if err != nil {
		tb.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	// The schema's patterns use Python's (?P<name>…) groups, which Go's
	// regexp (the compiler's default engine) also accepts.
	const loc = "https://hearth.invalid/addon-lint/config.schema.json"
	if err := c.AddResource(loc, doc); err != nil {
		tb.Fatal(err)
	}
	sch, err := c.Compile(loc)
	if err != nil {
		tb.Fatal(err)
	}
	return sch
}

func TestConfigValidatesAgainstLinterSchema(t *testing.T) {
	t.Parallel()
	sch := linterSchema(t)
	t.Run("OK", func(t *testing.T) {
		if err := sch.Validate(asJSON(t, config(t))); err != nil {
			t.Fatalf("config.yaml does not validate against the linter's schema:\n%v", err)
		}
	})
	// The schema is live: it refuses what the linter refuses, including a
	// pattern written with Python's group syntax.
	for name, edit := range map[string]func(map[string]any){
		"ErrUnknownKey":   func(c map[string]any) { c["watchdogs"] = true },
		"ErrArch":         func(c map[string]any) { c["arch"] = []any{"mips"} },
		"ErrService":      func(c map[string]any) { c["services"] = []any{"mqtt:maybe"} },
		"ErrMissingSlug":  func(c map[string]any) { delete(c, "slug") },
		"ErrPortOutRange": func(c map[string]any) { c["ports"] = map[string]any{"8765/tcp": 70000} },
	} {
		t.Run(name, func(t *testing.T) {
			c := config(t)
			edit(c)
			if err := sch.Validate(asJSON(t, c)); err == nil {
				t.Fatal("got no error")
			}
		})
	}
}

// TestLinterSchemaCopy holds the copy of the linter's schema to what its
// source note records: the digest of the file as it was copied, and the
// licence notice the copy must be kept with.
func TestLinterSchemaCopy(t *testing.T) {
	t.Parallel()
	note := string(readFile(t, schemaSource))
	m := regexp.MustCompile(`(?m)^- sha256: ([0-9a-f]{64})$`).FindStringSubmatch(note)
	if m == nil {
		t.Fatalf("%s records no sha256 line", schemaSource)
	}
	if got := fmt.Sprintf("%x", sha256.Sum256(readFile(t, schemaCopy))); got != m[1] {
		t.Fatalf("%s has sha256 %s, %s records %s: copy the schema unchanged and record its source and digest", schemaCopy, got, schemaSource, m[1])
	}
	licence := string(readFile(t, schemaLicence))
	if !strings.HasPrefix(licence, "# MIT License") || !strings.Contains(licence, "Copyright (c)") {
		t.Fatalf("%s is not the MIT notice the copy came with", schemaLicence)
	}
}

func TestConfigLinterRules(t *testing.T) {
	t.Parallel()
	c := config(t)
	var schema struct {
		Properties map[string]map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(readFile(t, schemaCopy), &schema); err != nil {
		t.Fatal(err)
	}
	t.Run("NoDefaultValues", func(t *testing.T) {
		for _, k := range sortedKeys(c) {
			def, ok := schema.Properties[k]["default"]
			if ok && reflect.DeepEqual(asJSON(t, c[k]), def) {
				t.Errorf("config.yaml: %s: %v is the default; leave the key out", k, c[k])
			}
		}
	})
	t.Run("NoWatchdog", func(t *testing.T) {
		if _, ok := c["watchdog"]; ok {
			t.Error("config.yaml: watchdog is rejected; the image's HEALTHCHECK replaces it")
		}
	})
	t.Run("Arch", func(t *testing.T) {
		arch, _ := c["arch"].([]any)
		var got []string
		for _, a := range arch {
			s, _ := a.(string)
			got = append(got, s)
		}
		if want := []string{"aarch64", "amd64"}; !reflect.DeepEqual(sorted(got), want) {
			t.Errorf("config.yaml: arch = %v, want %v", got, want)
		}
	})
	t.Run("PortsDescribed", func(t *testing.T) {
		ports := mapOf(t, c["ports"], "ports")
		desc := mapOf(t, c["ports_description"], "ports_description")
		if !reflect.DeepEqual(sortedKeys(ports), sortedKeys(desc)) {
			t.Errorf("ports %v and ports_description %v name different ports", sortedKeys(ports), sortedKeys(desc))
		}
		if got := asJSON(t, ports); !reflect.DeepEqual(got, map[string]any{"8765/tcp": 8765.0}) {
			t.Errorf("ports = %v, want 8765/tcp on 8765 (docs/design.md R-T7)", got)
		}
	})
	// What the Supervisor itself checks when it reads the repository.
	t.Run("Supervisor", func(t *testing.T) {
		if s, _ := c["slug"].(string); s != "hearth" {
			t.Errorf("slug = %q, want hearth", s)
		}
		imageRE := regexp.MustCompile(`^([a-zA-Z\-\.:\d{}]+/)*?([\-\w{}]+)/([\-\w{}]+)$`)
		if s, _ := c["image"].(string); !imageRE.MatchString(s) {
			t.Errorf("image = %q, not a Docker image name", s)
		}
		for _, bad := range checkSchemaElement("schema", c["schema"]) {
			t.Error(bad)
		}
	})
}

func TestConfigVersion(t *testing.T) {
	t.Parallel()
	if got := config(t)["version"]; got != version.Version {
		t.Errorf("config.yaml version = %v, want version.Version %q (docs/design.md R-T8)", got, version.Version)
	}
	if !strings.Contains(string(readFile(t, filepath.Join(addonDir, "CHANGELOG.md"))), "\n## "+version.Version+"\n") {
		t.Errorf("CHANGELOG.md has no section ## %s", version.Version)
	}
}

// fullOptionsJSON is testdata/options-full.yaml as the Supervisor writes it.
func fullOptionsJSON(t *testing.T) []byte {
	t.Helper()
	c := config(t)
	out, err := supervisorOptions(mapOf(t, c["schema"], "schema"), mapOf(t, c["options"], "options"), readYAML(t, fullOptions))
	if err != nil {
		t.Fatalf("the Supervisor would refuse %s: %v", fullOptions, err)
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// jsonKeys returns the keys of a JSON object and the union of the keys of
// the objects (or lists of objects) under it, by key.
func jsonKeys(tb testing.TB, b []byte) ([]string, map[string][]string) {
	tb.Helper()
	var top map[string]any
	if err := json.Unmarshal(b, &top); err != nil {
		tb.Fatal(err)
	}
	nested := make(map[string][]string)
	add := func(k string, m map[string]any) {
		for kk := range m {
			if !slices.Contains(nested[k], kk) {
				nested[k] = append(nested[k], kk)
			}
		}
	}
	for k, v := range top {
		switch v := v.(type) {
		case map[string]any:
			add(k, v)
		case []any:
			for _, e := range v {
				if m, ok := e.(map[string]any); ok {
					add(k, m)
				}
			}
		}
	}
	return sortedKeys(top), nested
}

func TestOptionKeys(t *testing.T) {
	t.Parallel()
	c := config(t)
	schema := mapOf(t, c["schema"], "schema")
	want := sorted(optionKeys)

	t.Run("OptionsPackage", func(t *testing.T) {
		// Every key the options package writes is an option here, and with
		// every option set it writes exactly these keys and members.
		b, err := options.Default().MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		keys, _ := jsonKeys(t, b)
		for _, k := range keys {
			if !slices.Contains(optionKeys, k) {
				t.Errorf("options.Default() writes %q, which this test does not know", k)
			}
		}
		o, err := options.Parse(bytes.NewReader(fullOptionsJSON(t)))
		if err != nil {
			t.Fatal(err)
		}
		if b, err = o.MarshalJSON(); err != nil {
			t.Fatal(err)
		}
		keys, nested := jsonKeys(t, b)
		if !reflect.DeepEqual(keys, want) {
			t.Errorf("options with every key set write %v, want %v", keys, want)
		}
		for k, members := range nestedKeys {
			if got := sorted(nested[k]); !reflect.DeepEqual(got, sorted(members)) {
				t.Errorf("options write %s members %v, want %v", k, got, sorted(members))
			}
		}
	})
	t.Run("Schema", func(t *testing.T) {
		if got := sortedKeys(schema); !reflect.DeepEqual(got, want) {
			t.Errorf("config.yaml schema keys %v, want %v", got, want)
		}
		for k, members := range nestedKeys {
			m := schemaObject(t, schema[k], k)
			if got := sortedKeys(m); !reflect.DeepEqual(got, sorted(members)) {
				t.Errorf("schema %s members %v, want %v", k, got, sorted(members))
			}
		}
		for _, k := range sortedKeys(mapOf(t, c["options"], "options")) {
			if _, ok := schema[k]; !ok {
				t.Errorf("config.yaml options has %s, which the schema lacks", k)
			}
		}
	})
	t.Run("Translations", func(t *testing.T) {
		tr := readYAML(t, filepath.Join(addonDir, "translations", "en.yaml"))
		conf := mapOf(t, tr["configuration"], "configuration")
		if got := sortedKeys(conf); !reflect.DeepEqual(got, want) {
			t.Errorf("translations configuration keys %v, want %v", got, want)
		}
		for _, k := range sortedKeys(conf) {
			entry := mapOf(t, conf[k], k)
			checkTranslation(t, k, entry)
			members, isNested := nestedKeys[k]
			fields, hasFields := entry["fields"]
			switch {
			case isNested && !hasFields:
				t.Errorf("translations %s: no fields for %v", k, members)
			case !isNested && hasFields:
				t.Errorf("translations %s: fields, but the option has no members", k)
			case isNested:
				f := mapOf(t, fields, k+".fields")
				if got := sortedKeys(f); !reflect.DeepEqual(got, sorted(members)) {
					t.Errorf("translations %s.fields %v, want %v", k, got, sorted(members))
				}
				for _, m := range sortedKeys(f) {
					checkTranslation(t, k+"."+m, mapOf(t, f[m], k+"."+m))
				}
			}
		}
		network := mapOf(t, tr["network"], "network")
		if got, want := sortedKeys(network), sortedKeys(mapOf(t, c["ports"], "ports")); !reflect.DeepEqual(got, want) {
			t.Errorf("translations network %v, want the ports %v", got, want)
		}
	})
	t.Run("Docs", func(t *testing.T) {
		docs := string(readFile(t, filepath.Join(addonDir, "DOCS.md")))
		for _, k := range optionKeys {
			if !strings.Contains(docs, "| `"+k+"` |") {
				t.Errorf("DOCS.md: no row for option %s in the options table", k)
			}
		}
	})
}

// schemaObject returns the object schema of an option that is an object or
// a list of objects.
func schemaObject(tb testing.TB, v any, key string) map[string]any {
	tb.Helper()
	if l, ok := v.([]any); ok && len(l) == 1 {
		v = l[0]
	}
	return mapOf(tb, v, "schema "+key)
}

func checkTranslation(tb testing.TB, key string, entry map[string]any) {
	tb.Helper()
	for _, field := range []string{"name", "description"} {
		if s, _ := entry[field].(string); strings.TrimSpace(s) == "" {
			tb.Errorf("translations %s: no %s", key, field)
		}
	}
}

func TestDefaultOptions(t *testing.T) {
	t.Parallel()
	c := config(t)
	out, err := supervisorOptions(mapOf(t, c["schema"], "schema"), mapOf(t, c["options"], "options"), nil)
	if err != nil {
		t.Fatalf("the Supervisor would refuse config.yaml's defaults: %v", err)
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("ParseToDefault", func(t *testing.T) {
		o, err := options.Parse(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("options.Parse(%s): %v", b, err)
		}
		if !reflect.DeepEqual(o, options.Default()) {
			t.Errorf("options.Parse(%s)\ngot  %+v\nwant %+v", b, o, options.Default())
		}
	})
	// The options package's fixture of the Supervisor's defaults, plus the two
	// lists of objects, which the Supervisor cannot leave out (see
	// config.yaml).
	t.Run("Fixture", func(t *testing.T) {
		var want map[string]any
		if err := json.Unmarshal(readFile(t, filepath.Join(optionsTestd, "supervisor-defaults.json")), &want); err != nil {
			t.Fatal(err)
		}
		want["project_links"] = []any{}
		want["namespace_renames"] = []any{}
		var got map[string]any
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("options.json from config.yaml's defaults:\n%s\nwant supervisor-defaults.json with empty project_links and namespace_renames", b)
		}
		if !bytes.Contains(b, []byte(`"embed_timeout_s": 2.0`)) {
			t.Errorf("embed_timeout_s is not written as the Supervisor writes a float:\n%s", b)
		}
	})
}

func TestFullOptions(t *testing.T) {
	t.Parallel()
	b := fullOptionsJSON(t)
	o, err := options.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("options.Parse(%s): %v", b, err)
	}
	if o.GithubOwner != "alice" || len(o.Clients) != 4 || o.EmbedTimeout.Seconds() != 0.5 {
		t.Errorf("options.Parse(%s) = %+v", b, o)
	}
	// database_url reaches the options as typed: serve reads it from
	// /data/options.json as it would --database.
	if want := "postgres://hearth:s3cret-pw@db.lan:5432/hearth?sslmode=verify-full"; o.DatabaseURL != want {
		t.Errorf("database_url %q, want %q", o.DatabaseURL, want)
	}
}

// TestSupervisorChecks shows what the schema refuses before Hearth starts,
// and what it leaves to Hearth.
func TestSupervisorChecks(t *testing.T) {
	t.Parallel()
	type edit func(o map[string]any)
	set := func(k string, v any) edit { return func(o map[string]any) { o[k] = v } }
	del := func(k string) edit { return func(o map[string]any) { delete(o, k) } }
	client := func(c map[string]any) edit { return set("clients", []any{c}) }
	for _, tc := range []struct {
		name string
		edit edit
		ok   bool
	}{
		{"OKReviewOff", set("review_at", "off"), true},
		{"OKReviewMidnight", set("review_at", "00:00"), true},
		{"OKReviewLate", set("review_at", "23:59"), true},
		{"OKNoExpiry", set("candidate_expiry_days", 0), true},
		{"OKEmbedTimeoutInt", set("embed_timeout_s", 1), true},
		{"OKClientIP", client(map[string]any{"name": "tv", "scopes": []any{"read"}, "ip": "192.168.1.9"}), true},
		{"OKOptionalListEmpty", set("hubs", []any{}), true},
		{"OKUnknownKeyDropped", set("colour", "red"), true},
		// A password field: the Supervisor checks only that it is a string;
		// Hearth checks the URL at start.
		{"OKDatabaseURL", set("database_url", "postgresql://hearth@db.lan/hearth"), true},
		{"ErrDatabaseURLNotString", set("database_url", []any{"postgres://db.lan/hearth"}), false},
		{"ErrReviewHour", set("review_at", "24:00"), false},
		{"ErrReviewShort", set("review_at", "3:00"), false},
		{"ErrReviewWord", set("review_at", "never"), false},
		{"ErrScope", client(map[string]any{"name": "x", "scopes": []any{"root"}}), false},
		{"ErrClientName", client(map[string]any{"scopes": []any{"read"}}), false},
		{"ErrClientScopes", client(map[string]any{"name": "x"}), false},
		{"ErrTokenShort", client(map[string]any{"name": "x", "scopes": []any{"read"}, "token_sha256": "abc"}), false},
		{"ErrTokenUpper", client(map[string]any{"name": "x", "scopes": []any{"read"}, "token_sha256": strings.Repeat("A", 64)}), false},
		{"ErrExpiry", set("candidate_expiry_days", -1), false},
		{"ErrSweep", set("anchor_sweep_hours", 169), false},
		{"ErrBudget", set("context_budget_tokens", 99), false},
		{"ErrOllamaTimeout", set("ollama_timeout_s", 0), false},
		{"ErrEmbedTimeout", set("embed_timeout_s", 61), false},
		{"ErrURL", set("ollama_url", "llm.lan:11434"), false},
		{"ErrDirectURL", set("ollama_direct_urls", []any{"gpu1"}), false},
		{"ErrLinkNamespaces", set("project_links", []any{map[string]any{"name": "p"}}), false},
		{"ErrRenameTo", set("namespace_renames", []any{map[string]any{"from": "github/a"}}), false},
		{"ErrModelsNotDict", set("ollama_models", []any{"qwen3.5:9b"}), false},
		{"ErrMissingReviewAt", del("review_at"), false},
		// Lists of objects and objects are required by the Supervisor, which
		// is why config.yaml's defaults carry them empty.
		{"ErrMissingProjectLinks", del("project_links"), false},
		{"ErrMissingOllamaModels", del("ollama_models"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := config(t)
			opts := mapOf(t, c["options"], "options")
			tc.edit(opts)
			_, err := supervisorOptions(mapOf(t, c["schema"], "schema"), opts, nil)
			if tc.ok && err != nil {
				t.Fatalf("got %v, want no error", err)
			}
			if !tc.ok && err == nil {
				t.Fatal("got no error")
			}
		})
	}
}

func TestRepository(t *testing.T) {
	t.Parallel()
	r := readYAML(t, "repository.yaml")
	for _, k := range []string{"name", "url", "maintainer"} {
		if s, _ := r[k].(string); s == "" {
			t.Errorf("repository.yaml: no %s", k)
		}
	}
	// The Supervisor reads every config.{json,yaml,yml} below the repository
	// root (outside dot directories and rootfs) as an add-on.
	var found []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "rootfs") {
			return filepath.SkipDir
		}
		ext := filepath.Ext(d.Name())
		if !d.IsDir() && strings.HasPrefix(d.Name(), "config.") && (ext == ".json" || ext == ".yaml" || ext == ".yml") {
			found = append(found, filepath.ToSlash(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"hearth/config.yaml"}; !reflect.DeepEqual(found, want) {
		t.Errorf("the Supervisor would read %v as add-ons, want %v", found, want)
	}
	for _, name := range []string{"README.md", "DOCS.md", "CHANGELOG.md", "icon.png", "logo.png", "Dockerfile", "translations/en.yaml"} {
		if _, err := os.Stat(filepath.Join(addonDir, name)); err != nil {
			t.Error(err)
		}
	}
	for _, name := range []string{"build.yaml", "build.yml", "build.json"} {
		for _, dir := range []string{".", addonDir} {
			if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
				t.Errorf("%s exists: build.yaml is deprecated; the Dockerfile names its base", filepath.Join(dir, name))
			}
		}
	}
	watchdog := regexp.MustCompile(`(?m)^\s*watchdog\s*:`)
	for _, name := range []string{"config.yaml", "Dockerfile"} {
		if watchdog.Match(readFile(t, filepath.Join(addonDir, name))) {
			t.Errorf("%s sets a watchdog", name)
		}
	}
}
