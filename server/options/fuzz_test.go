package options

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// FuzzParse holds that Parse never panics, that every error it returns
// names something, and that whatever it accepts survives a round trip:
// MarshalJSON gives an options.json that parses to an equal Options and
// encodes to the same bytes.
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		`{}`,
		`{"review_at":"off","embed_timeout_s":0.001}`,
		`{"clients":[{"name":"a","scopes":["read"],"ip":"::ffff:10.0.0.1","token_sha256":"` + strings.Repeat("AB", 32) + `"}]}`,
		`{"forge_hosts":["[fd00::1]:3000","Gitea.LAN"],"forge_owner":"Bob"}`,
		`{"ollama_url":"HTTP://h:1/v1//","ollama_models":{"review":["a","b"],"answer":null}}`,
		`{"namespace_renames":[{"from":"github/a","to":"gitea/a"}],"hubs":["global"]}`,
		`{"clients":[{"name":"a","scopes":["read"],"ip":"fe80::1%eth0"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := Parse(bytes.NewReader(data))
		if err != nil {
			if err.Error() == "" {
				t.Fatal("got an empty error message")
			}
			return
		}
		b1, err := json.Marshal(o)
		if err != nil {
			t.Fatalf("MarshalJSON: got %v, want nil", err)
		}
		back, err := Parse(bytes.NewReader(b1))
		if err != nil {
			t.Fatalf("Parse(MarshalJSON(o)): got %v, want nil\n%s", err, b1)
		}
		if !reflect.DeepEqual(back, o) {
			t.Fatalf("round trip: got %+v\nwant %+v\nvia %s", back, o, b1)
		}
		b2, err := json.Marshal(back)
		if err != nil {
			t.Fatalf("MarshalJSON: got %v, want nil", err)
		}
		if !bytes.Equal(b1, b2) {
			t.Fatalf("encoding not stable: got %s, want %s", b2, b1)
		}
	})
}
