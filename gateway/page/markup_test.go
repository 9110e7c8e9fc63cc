package page

import (
	"bytes"
	"html/template"
	"strings"
	"testing"
)

// asTemplate is how html/template wrote s in each place the page writes a
// value: text, a quoted attribute, an href and a style's colour. The page
// was written by html/template before (markup.go); its tests may use it.
var asTemplate = template.Must(template.New("").Parse(
	`<p title="{{.}}">{{.}}</p><a href="{{.}}">x</a><span style="background: {{.}}"></span><title>{{.}}</title>`))

func writeLikeTemplate(s string) string {
	var w htmlWriter
	w.f(`<p title="%v">%v</p><a href="%v">x</a><span style="background: %v"></span><title>%v</title>`,
		s, s, href(s), cssValue(s), s)
	return w.String()
}

// checkLikeTemplate fails unless the writer escapes s as html/template
// did, but for a style value holding a backslash, which the writer refuses
// where html/template decoded it.
func checkLikeTemplate(t *testing.T, s string) {
	t.Helper()
	var want bytes.Buffer
	if err := asTemplate.Execute(&want, s); err != nil {
		t.Fatal(err)
	}
	got := writeLikeTemplate(s)
	if got == want.String() {
		return
	}
	if strings.Contains(s, `\`) && strings.Contains(got, `style="background: ZgotmplZ"`) {
		return
	}
	t.Errorf("%q:\n got  %s\n want %s", s, got, want.String())
}

func TestWriterEscapesLikeHTMLTemplate(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"", "plain", "#4fb89a", `<script>alert("x")</script>`, `a&b'c"d+e`, "\x00nul",
		"javascript:alert(1)", "JavaScript:x", "data:text/html,x", "vbscript:x", "HTTPS://example.com/a b",
		"mailto:a@b", "/path:with:colons", "records?ns=a b&x=é", "record?id=%41%zz%4", "100%",
		"red;background:url(x)", "expression(alert(1))", "a--b", "-moz-binding", "é → ü", "\u2028",
	} {
		checkLikeTemplate(t, s)
	}
}

// The writer of every value the page shows, against html/template.
func FuzzWriterEscaping(f *testing.F) {
	for _, s := range []string{"records?q=a+b&ns=x", `<b>"'&+`, "javascript:x", "#30363d", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkLikeTemplate(t, s)
	})
}
