package anchor

import (
	"errors"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		for _, c := range []struct {
			in    string
			kind  Kind
			value string
		}{
			{"entity:binary_sensor.garage_door", Entity, "binary_sensor.garage_door"},
			{"entity:sensor.outdoor_temp_2", Entity, "sensor.outdoor_temp_2"},
			{"entity:a.b", Entity, "a.b"},
			{"entity:" + strings.Repeat("d", 100) + "." + strings.Repeat("o", 154), Entity, strings.Repeat("d", 100) + "." + strings.Repeat("o", 154)},
			{"path:deploy/helm/values.yaml", Path, "deploy/helm/values.yaml"},
			{"path:README.md", Path, "README.md"},
			{"path:.github/workflows/ci.yml", Path, ".github/workflows/ci.yml"},
			{"path:..hidden", Path, "..hidden"},
			{"path:ab:c", Path, "ab:c"},
			{"path:src/ünïcode.go", Path, "src/ünïcode.go"},
			{"host:nas", Host, "nas"},
			{"host:nas.local", Host, "nas.local"},
			{"host:build-01.lan", Host, "build-01.lan"},
			{"host:192.168.1.10", Host, "192.168.1.10"},
			{"host:2001:db8::1", Host, "2001:db8::1"},
			{"host:3com.example", Host, "3com.example"},
			{"url:https://ci.example.com/job/7?tab=log#end", URL, "https://ci.example.com/job/7?tab=log#end"},
			{"url:http://192.168.1.5:8123/lovelace", URL, "http://192.168.1.5:8123/lovelace"},
			{"url:http://[fe80::1]:8080/", URL, "http://[fe80::1]:8080/"},
			{"url:ssh://git.example.com/repo.git", URL, "ssh://git.example.com/repo.git"},
		} {
			a, err := Parse(c.in)
			if err != nil {
				t.Errorf("Parse(%q): %v", c.in, err)
				continue
			}
			if a.Kind() != c.kind || a.Value() != c.value || a.String() != c.in {
				t.Errorf("Parse(%q) = %s %q %q, want %s %q %q", c.in, a.Kind(), a.Value(), a.String(), c.kind, c.value, c.in)
			}
		}
	})
	for _, c := range []struct {
		name string
		in   string
		want *Error
	}{
		{"ErrEmpty", "", errForm},
		{"ErrNoKind", "garage_door", errForm},
		{"ErrUnknownKind", "file:x", errForm},
		{"ErrKindCase", "Entity:sensor.x", errKindCase},
		{"ErrNothing", "path:", errEmpty},
		{"ErrSpace", "path:my file.txt", errSpace},
		{"ErrControl", "host:nas\x00", errSpace},
		{"ErrNewline", "url:https://x/\n", errSpace},
		{"ErrUTF8", "path:\xff", errUTF8},
		{"ErrEntityNoDot", "entity:garage_door", errEntityForm},
		{"ErrEntityUpper", "entity:Sensor.x", errEntityForm},
		{"ErrEntityDash", "entity:sensor.garage-door", errEntityForm},
		{"ErrEntityTwoDots", "entity:a.b.c", errEntityForm},
		{"ErrEntityEmptyPart", "entity:.x", errEntityForm},
		{"ErrEntityEdge", "entity:sensor._x", errEntityEdge},
		{"ErrEntityEdgeEnd", "entity:sensor_.x", errEntityEdge},
		{"ErrEntityDouble", "entity:sen__sor.x", errEntityDup},
		{"ErrEntityLong", "entity:a." + strings.Repeat("b", 254), errEntityLong},
		{"ErrPathAbsolute", "path:/etc/passwd", errPathAbs},
		{"ErrPathBackslash", `path:src\x.go`, errPathSlash},
		{"ErrPathUp", "path:../secrets", errPathUp},
		{"ErrPathUpInside", "path:a/../../b", errPathUp},
		{"ErrPathUpEnd", "path:a/..", errPathUp},
		{"ErrPathDotDot", "path:..", errPathUp},
		{"ErrPathRoot", "path:.", errPathUp},
		{"ErrPathHome", "path:~/.ssh/config", errPathHome},
		{"ErrPathDrive", "path:C:/Windows", errPathDrive},
		{"ErrPathDot", "path:./src", errPathClean},
		{"ErrPathDouble", "path:src//x", errPathClean},
		{"ErrPathTrailing", "path:src/", errPathClean},
		{"ErrPathInnerDot", "path:src/./x", errPathClean},
		{"ErrHostUpper", "host:NAS.local", errHostCase},
		{"ErrHostPort", "host:nas:22", errHostPort},
		{"ErrHostBracket", "host:[::1]", errHostPort},
		{"ErrHostZone", "host:fe80::1%eth0", errHostZone},
		{"ErrHostLongAddr", "host:2001:0db8::1", errHostAddr},
		{"ErrHostDigits", "host:192.168.1", errHostForm},
		{"ErrHostUnderscore", "host:my_nas", errHostForm},
		{"ErrHostDash", "host:-nas", errHostForm},
		{"ErrHostTrailingDot", "host:nas.", errHostForm},
		{"ErrHostLabel", "host:" + strings.Repeat("a", 64), errHostForm},
		{"ErrHostLong", "host:" + strings.Repeat(strings.Repeat("a", 60)+".", 5), errHostLong},
		{"ErrURLRelative", "url:/relative", errURLAbs},
		{"ErrURLOpaque", "url:mailto:bob@example.com", errURLAbs},
		{"ErrURLNoHost", "url:file:///etc/passwd", errURLHost},
		{"ErrURLScheme", "url:HTTPS://x", errURLCase},
		{"ErrURLParse", "url:http://[::1", errURLParse},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, err := Parse(c.in)
			if err != c.want {
				t.Fatalf("Parse(%q) = %q, %v; want error %q", c.in, a.String(), err, c.want)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Errorf("error %T is not an *Error", err)
			}
		})
	}
}

// every is each of Parse's refusals: a refusal is always one of them.
var every = []*Error{errUTF8, errSpace, errForm, errKindCase, errEmpty, errEntityLong, errEntityForm, errEntityEdge,
	errEntityDup, errPathAbs, errPathSlash, errPathUp, errPathHome, errPathDrive, errPathClean, errHostZone, errHostAddr,
	errHostPort, errHostLong, errHostCase, errHostForm, errURLParse, errURLAbs, errURLCase, errURLHost}

// haEntity is Home Assistant's valid_entity_id, less the look-arounds Go's
// regexp lacks (checked apart below).
var haEntity = regexp.MustCompile(`^[0-9a-z_]+\.[0-9a-z_]+$`)

// FuzzParse holds Parse's properties on any input: it never panics; a
// refusal is one of the fixed errors (so it never echoes the input); an
// accepted anchor round-trips exactly (String is the input, and parses to
// the same anchor); a path can never leave its root; an entity id is one
// Home Assistant accepts; a host is lower case.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"entity:binary_sensor.garage_door", "entity:a__b.c", "entity:_a.b", "path:deploy/helm/values.yaml",
		"path:../x", "path:a/./b", "path:C:/x", "path:~/x", "host:nas.local", "host:192.168.1.10", "host:::1",
		"host:fe80::1%eth0", "host:NAS", "url:https://ci.example.com/x?y=1#z", "url:https://user:pw@host/",
		"url:mailto:x@y", "Path:x", "", ":", "path:\xff", "url:http://[::1]:80/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := Parse(s)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || !slices.Contains(every, e) {
				t.Fatalf("Parse(%q): error %q is not one of the fixed refusals", s, err)
			}
			if a != (Anchor{}) {
				t.Fatalf("Parse(%q): refused but returned %q", s, a.String())
			}
			return
		}
		if a.String() != s {
			t.Fatalf("Parse(%q).String() = %q: not a round trip", s, a.String())
		}
		b, err := Parse(a.String())
		if err != nil || b != a {
			t.Fatalf("Parse(Parse(%q).String()) = %v, %v", s, b, err)
		}
		if !slices.Contains(Kinds, a.Kind()) || a.Value() == "" {
			t.Fatalf("Parse(%q): kind %q value %q", s, a.Kind(), a.Value())
		}
		v := a.Value()
		switch a.Kind() {
		case Path:
			if !filepath.IsLocal(v) || path.Clean(v) != v || strings.Contains(v, `\`) {
				t.Fatalf("path %q is not local and clean", v)
			}
			root := "/srv/checkout"
			if j := path.Join(root, v); !strings.HasPrefix(j, root+"/") {
				t.Fatalf("path %q leaves its root: %s", v, j)
			}
		case Entity:
			if !haEntity.MatchString(v) || strings.Contains(v, "__") || strings.Contains(v, "_.") ||
				strings.Contains(v, "._") || v[0] == '_' || v[len(v)-1] == '_' || len(v) > MaxEntityID {
				t.Fatalf("entity id %q is not one Home Assistant accepts", v)
			}
		case Host:
			if strings.ToLower(v) != v || strings.ContainsAny(v, "/[]%") {
				t.Fatalf("host %q is not a plain lower-case host", v)
			}
		}
	})
}
