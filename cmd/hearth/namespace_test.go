package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/storage"
)

// nsOptions are the test options with a forge host, project links, a hub
// and whatever edit adds, validated as start-up validates them.
func nsOptions(t *testing.T, edit func(*options.Options)) options.Options {
	t.Helper()
	o := testOptions()
	o.ForgeHosts = []string{"git.home.lan:3000"}
	o.ProjectLinks = []options.ProjectLink{
		{Name: "platform", Namespaces: []string{"github/acme/api", "github/acme/web"}},
	}
	o.Hubs = []string{"projects/ops"}
	if edit != nil {
		edit(&o)
	}
	if err := o.Validate(); err != nil {
		t.Fatalf("options: %v", err)
	}
	return o
}

// namespacesOf returns the sorted distinct namespaces of a search's hits or
// a timeline's records.
func namespacesOf(r result, key string) []string {
	var out []string
	for _, h := range list(r.body, key) {
		if ns := str(h, "namespace"); !slices.Contains(out, ns) {
			out = append(out, ns)
		}
	}
	slices.Sort(out)
	return out
}

func strs(v []any) []string {
	out := make([]string, len(v))
	for i, x := range v {
		out[i], _ = x.(string)
	}
	return out
}

// wantRefused fails unless r is INVALID_ARGUMENT naming field.
func wantRefused(t *testing.T, what string, r result, field string) {
	t.Helper()
	if r.ok || r.code != "INVALID_ARGUMENT" || r.http != 400 || str(r.body, "error", "field") != field {
		t.Errorf("%s: got %v; want INVALID_ARGUMENT naming %s", what, r, field)
	}
}

// TestNamespace_Remotes holds R-N1, R-N2: memory_namespace turns every
// remote form into its namespace with the scope chain, names a namespace's
// chain, and refuses other hosts, unreadable remotes and bad names, through
// every transport; user information is never echoed.
func TestNamespace_Remotes(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, nsOptions(t, nil))
	tok := td.tokens["claude-code"]
	const secret = "ghp_R8x2Kq9Lm4Tz7Vb1Nc6Hd3Fj5Wp0Ys8Ue2Ab"
	for _, tr := range transports(td) {
		t.Run(tr.name(), func(t *testing.T) {
			for _, c := range []struct {
				remote, want string
			}{
				{"https://github.com/Acme/API", "github/acme/api"},
				{"https://github.com/Acme/API.git", "github/acme/api"},
				{"https://github.com/Acme/API.git/", "github/acme/api"},
				{"git@github.com:acme/api.git", "github/acme/api"},
				{"ssh://git@github.com/acme/api.git", "github/acme/api"},
				{"ssh://git@github.com:22/acme/api.git", "github/acme/api"},
				{"git://github.com/acme/api", "github/acme/api"},
				{"https://x-access-token:" + secret + "@github.com/acme/api.git", "github/acme/api"},
				{"https://git.home.lan:3000/Team/Tools.git", "gitea/team/tools"},
				{"git@git.home.lan:team/tools.git", "gitea/team/tools"},
			} {
				r := tr.call(t, tok, "memory_namespace", map[string]any{"remote": c.remote})
				if !r.ok || str(r.body, "namespace") != c.want {
					t.Errorf("remote %q: got %v; want %s", c.remote, r, c.want)
				}
				if bytes.Contains(r.raw, []byte(secret)) {
					t.Errorf("remote %q: the reply repeats the token", c.remote)
				}
			}
			r := tr.call(t, tok, "memory_namespace", map[string]any{"remote": "git@github.com:acme/api.git"})
			if got, want := strs(list(r.body, "scopes")), []string{"github/acme/api", "projects/platform", "global"}; !slices.Equal(got, want) {
				t.Errorf("scopes: got %v; want %v", got, want)
			}
			r = tr.call(t, tok, "memory_namespace", map[string]any{"name": "projects/platform"})
			if str(r.body, "namespace") != "projects/platform" || !slices.Equal(strs(list(r.body, "scopes")), []string{"projects/platform", "global"}) {
				t.Errorf("name projects/platform: got %v", r)
			}
			r = tr.call(t, tok, "memory_namespace", map[string]any{"name": "github/acme/api", "remote": "https://github.com/acme/api"})
			if !r.ok || str(r.body, "namespace") != "github/acme/api" {
				t.Errorf("name and remote agreeing: got %v", r)
			}

			r = tr.call(t, tok, "memory_namespace", map[string]any{"remote": "https://me:" + secret + "@gitlab.com/acme/api.git"})
			wantRefused(t, "other host", r, "remote")
			if msg := str(r.body, "error", "message"); !strings.Contains(msg, "gitlab.com") || !strings.Contains(msg, "local/api") {
				t.Errorf("other host: message %q; want the host and a local/api suggestion", msg)
			}
			if bytes.Contains(r.raw, []byte(secret)) || bytes.Contains(r.raw, []byte("me:")) {
				t.Errorf("other host: the error repeats the user information: %s", r.raw)
			}
			r = tr.call(t, tok, "memory_namespace", map[string]any{"remote": "/home/me/src/scratch"})
			wantRefused(t, "local path", r, "remote")
			if msg := str(r.body, "error", "message"); !strings.Contains(msg, "local/scratch") {
				t.Errorf("local path: message %q; want a local/scratch suggestion", msg)
			}
			wantRefused(t, "one segment", tr.call(t, tok, "memory_namespace", map[string]any{"remote": "https://github.com/acme"}), "remote")
			wantRefused(t, "nothing", tr.call(t, tok, "memory_namespace", map[string]any{}), "remote")
			wantRefused(t, "bad name", tr.call(t, tok, "memory_namespace", map[string]any{"name": "GitHub/Acme/API"}), "name")
			wantRefused(t, "disagreeing", tr.call(t, tok, "memory_namespace", map[string]any{"name": "github/acme/web", "remote": "https://github.com/acme/api"}), "remote")
			r = tr.call(t, tok, "memory_namespace", map[string]any{"remote": "https://github.com/acme/AKIAQ3EGRT5ZKXLM7WPA"})
			wantRefused(t, "secret in the path", r, "remote")
			if str(r.body, "error", "pattern") != "aws-access-key" || bytes.Contains(bytes.ToLower(r.raw), []byte("akiaq3egrt5zkxlm7wpa")) {
				t.Errorf("secret in the path: got %s; want the pattern and never the key", r.raw)
			}
		})
	}
}

// TestNamespace_Owners holds R-N2's owner limits: with github_owner and
// forge_owner set, remotes and namespaces of other owners are refused.
func TestNamespace_Owners(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, nsOptions(t, func(o *options.Options) {
		o.GithubOwner = "acme"
		o.ForgeOwner = "team"
	}))
	tok := td.tokens["claude-code"]
	for _, tr := range []transport{restTransport{td}, mcpTransport{td: td}} {
		if r := tr.call(t, tok, "memory_namespace", map[string]any{"remote": "git@github.com:Acme/api.git"}); !r.ok {
			t.Errorf("%s: own owner: %v", tr.name(), r)
		}
		r := tr.call(t, tok, "memory_namespace", map[string]any{"remote": "git@github.com:someone/api.git"})
		wantRefused(t, tr.name()+": other GitHub owner", r, "remote")
		if msg := str(r.body, "error", "message"); !strings.Contains(msg, "github_owner") {
			t.Errorf("%s: message %q; want it to name github_owner", tr.name(), msg)
		}
		wantRefused(t, tr.name()+": other forge owner", tr.call(t, tok, "memory_namespace", map[string]any{"remote": "https://git.home.lan/other/tools"}), "remote")
		wantRefused(t, tr.name()+": store by name", tr.call(t, tok, "memory_store", storeArgs("github/someone/api", "T", "C")), "namespace")
		wantRefused(t, tr.name()+": search by name", tr.call(t, tok, "memory_search", map[string]any{"namespace": "gitea/other/x", "query": "q"}), "namespace")
	}
}

// TestNamespace_Chain holds R-N3, R-N4, R-N5 and R-K2 end to end: a store
// through a remote lands in the repository; search and timeline read the
// repository, its linked project, the given topics and global, each hit
// naming its namespace; a hub's search reaches every repository namespace;
// and two sibling repositories never see each other.
func TestNamespace_Chain(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, nsOptions(t, nil))
	tok := td.tokens["claude-code"]
	rest := restTransport{td}
	for _, ns := range []string{
		"github/acme/web", "projects/platform", "projects/ops", "topics/go", "topics/ci", "global",
		"github/other/x", "gitea/team/tools", "local/scratch",
	} {
		if r := rest.call(t, tok, "memory_store", storeArgs(ns, "Deploy "+ns, "How we deploy from "+ns+".")); !r.ok {
			t.Fatalf("store %s: %v", ns, r)
		}
	}
	for _, tr := range []transport{restTransport{td}, mcpTransport{td: td}} {
		args := storeArgs("", "Deploy api via "+tr.name(), "How we deploy the API.")
		delete(args, "namespace")
		args["remote"] = "git@github.com:Acme/API.git"
		r := tr.call(t, tok, "memory_store", args)
		if !r.ok || str(r.body, "record", "namespace") != "github/acme/api" {
			t.Fatalf("%s: store by remote: got %v; want namespace github/acme/api", tr.name(), r)
		}
	}

	for _, tr := range transports(td) {
		t.Run(tr.name(), func(t *testing.T) {
			r := tr.call(t, tok, "memory_search", map[string]any{"remote": "https://github.com/acme/api.git", "query": "deploy", "topics": []string{"go"}, "limit": 50})
			if got, want := namespacesOf(r, "hits"), []string{"github/acme/api", "global", "projects/platform", "topics/go"}; !slices.Equal(got, want) {
				t.Errorf("search from api: got %v; want %v (%v)", got, want, r)
			}
			r = tr.call(t, tok, "memory_timeline", map[string]any{"remote": "git@github.com:acme/api.git"})
			if got, want := namespacesOf(r, "records"), []string{"github/acme/api", "global", "projects/platform"}; !slices.Equal(got, want) {
				t.Errorf("timeline of api: got %v; want %v", got, want)
			}
			// The hub reaches every repository namespace, plus its own chain.
			r = tr.call(t, tok, "memory_search", map[string]any{"namespace": "projects/ops", "query": "deploy", "limit": 50})
			if got, want := namespacesOf(r, "hits"), []string{"gitea/team/tools", "github/acme/api", "github/acme/web", "github/other/x", "global", "local/scratch", "projects/ops"}; !slices.Equal(got, want) {
				t.Errorf("hub search: got %v; want %v", got, want)
			}
			// A hub's timeline is its chain alone.
			r = tr.call(t, tok, "memory_timeline", map[string]any{"namespace": "projects/ops"})
			if got, want := namespacesOf(r, "records"), []string{"global", "projects/ops"}; !slices.Equal(got, want) {
				t.Errorf("hub timeline: got %v; want %v", got, want)
			}
			// Not a hub: a project reads itself and global.
			r = tr.call(t, tok, "memory_search", map[string]any{"namespace": "projects/platform", "query": "deploy", "limit": 50})
			if got, want := namespacesOf(r, "hits"), []string{"global", "projects/platform"}; !slices.Equal(got, want) {
				t.Errorf("project search: got %v; want %v", got, want)
			}
		})
	}

	t.Run("Siblings", func(t *testing.T) {
		// Two repositories of one owner, not linked: neither sees the other.
		for _, s := range []struct{ remote, word string }{
			{"git@github.com:acme/one.git", "marmalade"},
			{"git@github.com:acme/two.git", "porcupine"},
		} {
			args := storeArgs("", "The "+s.word+" rule", "Always "+s.word+".")
			delete(args, "namespace")
			args["remote"] = s.remote
			if r := rest.call(t, tok, "memory_store", args); !r.ok {
				t.Fatalf("store: %v", r)
			}
		}
		for _, tr := range transports(td) {
			for _, c := range []struct{ remote, ns, own, other string }{
				{"git@github.com:acme/one.git", "github/acme/one", "marmalade", "porcupine"},
				{"git@github.com:acme/two.git", "github/acme/two", "porcupine", "marmalade"},
			} {
				r := tr.call(t, tok, "memory_search", map[string]any{"remote": c.remote, "query": c.own + " " + c.other})
				if got := namespacesOf(r, "hits"); !slices.Equal(got, []string{c.ns}) {
					t.Errorf("%s: search from %s: got %v; want only %s", tr.name(), c.ns, got, c.ns)
				}
				if bytes.Contains(r.raw, []byte(c.other)) {
					t.Errorf("%s: %s sees its sibling: %s", tr.name(), c.ns, r.raw)
				}
				r = tr.call(t, tok, "memory_timeline", map[string]any{"namespace": c.ns})
				if bytes.Contains(r.raw, []byte(c.other)) || !bytes.Contains(r.raw, []byte(c.own)) {
					t.Errorf("%s: timeline of %s: %s", tr.name(), c.ns, r.raw)
				}
			}
		}
	})
}

// TestNamespace_Limits holds R-N7: limits and names are checked, and each
// violation is INVALID_ARGUMENT naming its field.
func TestNamespace_Limits(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, nsOptions(t, nil))
	tok := td.tokens["claude-code"]
	long := "local/" + strings.Repeat("a", 155)
	nine := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}
	for _, tr := range []transport{restTransport{td}, mcpTransport{td: td}} {
		for _, c := range []struct {
			tool  string
			args  map[string]any
			field string
		}{
			{"memory_store", storeArgs(long, "T", "C"), "namespace"},
			{"memory_store", storeArgs("github/acme", "T", "C"), "namespace"},
			{"memory_store", storeArgs("github/Acme/api", "T", "C"), "namespace"},
			{"memory_store", storeArgs("local/..", "T", "C"), "namespace"},
			{"memory_store", storeArgs("repos/x", "T", "C"), "namespace"},
			{"memory_store", map[string]any{"type": "decision", "title": "T", "content": "C"}, "namespace"},
			{"memory_store", map[string]any{"remote": "https://gitlab.com/a/b", "type": "decision", "title": "T", "content": "C"}, "remote"},
			{"memory_store", map[string]any{"namespace": "global", "type": "decision", "title": "T", "content": "C", "topics": nine}, "topics"},
			{"memory_search", map[string]any{"query": "q", "namespace": long}, "namespace"},
			{"memory_search", map[string]any{"query": "q", "topics": nine}, "topics"},
			{"memory_search", map[string]any{"query": "q", "topics": []string{strings.Repeat("t", 41)}}, "topics[0]"},
			{"memory_search", map[string]any{"query": "q", "topics": []string{"go", ""}}, "topics[1]"},
			{"memory_search", map[string]any{"query": "q", "topics": []string{"Go"}}, "topics[0]"},
			{"memory_search", map[string]any{"query": "q", "remote": "not a remote"}, "remote"},
			{"memory_timeline", map[string]any{"namespace": "topics/a/b"}, "namespace"},
			{"memory_timeline", map[string]any{"remote": "git@github.com:acme"}, "remote"},
			{"memory_namespace", map[string]any{"name": long}, "name"},
		} {
			wantRefused(t, tr.name()+" "+c.tool, tr.call(t, tok, c.tool, c.args), c.field)
		}
		ok := "local/" + strings.Repeat("a", 154)
		if r := tr.call(t, tok, "memory_store", storeArgs(ok, "T", "C")); !r.ok {
			t.Errorf("%s: a 160-character namespace: %v", tr.name(), r)
		}
		if r := tr.call(t, tok, "memory_search", map[string]any{"query": "q", "topics": nine[:8]}); !r.ok {
			t.Errorf("%s: eight topics: %v", tr.name(), r)
		}
	}
}

// openDaemonAt runs a daemon on 127.0.0.1:0 over dir, which may hold an
// earlier daemon's data; close it with closeDaemon before opening dir again.
func openDaemonAt(tb testing.TB, dir string, opts options.Options) *testDaemon {
	tb.Helper()
	return openDaemon(tb, &Daemon{Config: Config{DataDir: dir, Options: opts}}, false)
}

// TestNamespace_RenamesAcrossStarts holds R-N6: a start with
// namespace_renames moves the records (revision advanced, usage kept, one
// audit row per rename), requests naming the old owner land on the new one,
// and a second start with the same renames changes nothing more.
func TestNamespace_RenamesAcrossStarts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	td := openDaemonAt(t, dir, nsOptions(t, nil))
	tok := td.tokens["claude-code"]
	rest := restTransport{td}
	var ids []string
	for _, ns := range []string{"github/oldco/api", "github/oldco/web", "github/oldcorp/api"} {
		r := rest.call(t, tok, "memory_store", storeArgs(ns, "Release train in "+ns, "Weekly releases."))
		if !r.ok {
			t.Fatalf("store: %v", r)
		}
		ids = append(ids, str(r.body, "record", "id"))
	}
	if r := rest.call(t, tok, "memory_update", map[string]any{"id": ids[0], "revision": 1, "changes": map[string]any{"title": "Release train, weekly"}}); !r.ok {
		t.Fatalf("update: %v", r)
	}
	if r := rest.call(t, tok, "memory_search", map[string]any{"namespace": "github/oldco/api", "query": "release"}); len(list(r.body, "hits")) != 1 {
		t.Fatalf("search before: %v", r)
	}
	closeDaemon(t, td)

	renamed := nsOptions(t, func(o *options.Options) {
		o.NamespaceRenames = []options.Rename{{From: "github/oldco", To: "github/newco"}}
		o.ProjectLinks = []options.ProjectLink{{Name: "platform", Namespaces: []string{"github/oldco/api"}}}
	})
	wantRecords := func(td *testDaemon) {
		t.Helper()
		r := restTransport{td}.call(t, td.tokens["claude-code"], "memory_get", map[string]any{"ids": ids})
		want := []struct {
			ns  string
			rev float64
		}{{"github/newco/api", 3}, {"github/newco/web", 2}, {"github/oldcorp/api", 1}}
		for i, w := range want {
			if rec := get(r.body, "records", i); str(rec, "namespace") != w.ns || num(rec, "revision") != w.rev {
				t.Errorf("record %d: got %s at %v; want %s at %v", i, str(rec, "namespace"), num(rec, "revision"), w.ns, w.rev)
			}
		}
	}
	for start := 2; start <= 3; start++ {
		td = openDaemonAt(t, dir, renamed)
		tok = td.tokens["claude-code"]
		wantRecords(td)
		for _, tr := range []transport{restTransport{td}, mcpTransport{td: td}} {
			// The old owner resolves to the new one, with the link read
			// through the rename.
			r := tr.call(t, tok, "memory_namespace", map[string]any{"remote": "git@github.com:OldCo/api.git"})
			if str(r.body, "namespace") != "github/newco/api" || !slices.Equal(strs(list(r.body, "scopes")), []string{"github/newco/api", "projects/platform", "global"}) {
				t.Errorf("start %d %s: old remote: got %v", start, tr.name(), r)
			}
			r = tr.call(t, tok, "memory_search", map[string]any{"remote": "https://github.com/oldco/api", "query": "release"})
			if got := namespacesOf(r, "hits"); !slices.Equal(got, []string{"github/newco/api"}) {
				t.Errorf("start %d %s: search by the old remote: got %v", start, tr.name(), got)
			}
		}
		if start == 2 {
			// A store naming the old owner lands under the new one.
			r := restTransport{td}.call(t, tok, "memory_store", storeArgs("github/oldco/api", "Late write", "After the rename."))
			if str(r.body, "record", "namespace") != "github/newco/api" {
				t.Errorf("store under the old owner: got %v", r)
			}
		}
		closeDaemon(t, td)
	}

	db, err := storage.Open(context.Background(), filepath.Join(dir, "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	log, err := db.AuditLog(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, e := range log {
		if e.Action == storage.ActionRename {
			rows = append(rows, e.Namespace+" "+e.Detail.String())
		}
	}
	// The first start's search was recorded as a question asked in
	// github/oldco/api (R-W1): the rename moves it too.
	if want := []string{"github/newco github/oldco -> github/newco: moved 2 records, 1 questions"}; !slices.Equal(rows, want) {
		t.Errorf("rename audit rows: got %q; want %q", rows, want)
	}
}

// TestNamespace_RemoteCredentialsNeverStored holds that a remote's user
// information reaches neither a reply nor the database files.
func TestNamespace_RemoteCredentialsNeverStored(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	td := openDaemonAt(t, dir, nsOptions(t, nil))
	tok := td.tokens["claude-code"]
	const secret = "ghp_R8x2Kq9Lm4Tz7Vb1Nc6Hd3Fj5Wp0Ys8Ue2Ab"
	for _, tr := range transports(td) {
		args := storeArgs("", "Credentials in remotes", "Dropped before anything is stored.")
		delete(args, "namespace")
		args["remote"] = "https://x-access-token:" + secret + "@github.com/acme/api.git"
		r := tr.call(t, tok, "memory_store", args)
		if !r.ok || str(r.body, "record", "namespace") != "github/acme/api" || bytes.Contains(r.raw, []byte(secret)) {
			t.Errorf("%s: store: %v", tr.name(), r)
		}
		args["remote"] = "https://x-access-token:" + secret + "@gitlab.com/acme/api.git"
		r = tr.call(t, tok, "memory_store", args)
		wantRefused(t, tr.name()+": other host", r, "remote")
		if bytes.Contains(r.raw, []byte(secret)) {
			t.Errorf("%s: the refusal repeats the token", tr.name())
		}
	}
	closeDaemon(t, td)
	files, _ := filepath.Glob(filepath.Join(dir, "hearth.db*"))
	if len(files) == 0 {
		t.Fatal("no database files")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(secret)) || bytes.Contains(b, []byte("x-access-token")) {
			t.Errorf("%s holds the remote's user information", f)
		}
	}
}
