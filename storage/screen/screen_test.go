package screen

import (
	"bufio"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

// corpusLine is one test-corpus entry; pattern is empty in benign.txt. In
// secrets.txt, rule names the upstream rule that must find it, if any.
type corpusLine struct {
	line          int
	pattern, rule string
	text          string
}

// family is the entry's family: its pattern, or pattern/rule.
func (e corpusLine) family() string {
	if e.rule == "" {
		return e.pattern
	}
	return e.pattern + "/" + e.rule
}

// readCorpus reads testdata/<name>: one entry a line, blank lines and lines
// starting with # skipped, \n \t \\ decoded. With tabbed set, each line is
// pattern<TAB>text or pattern/rule<TAB>text.
func readCorpus(tb testing.TB, name string, tabbed bool) []corpusLine {
	tb.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []corpusLine
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		raw := sc.Text()
		if raw == "" || strings.HasPrefix(raw, "#") {
			continue
		}
		e := corpusLine{line: n}
		if tabbed {
			p, t, ok := strings.Cut(raw, "\t")
			if !ok {
				tb.Fatalf("%s:%d: want pattern<TAB>text", name, n)
			}
			e.pattern, raw = p, t
			e.pattern, e.rule, _ = strings.Cut(e.pattern, "/")
		}
		e.text = unescape(raw)
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

// unescape decodes \n, \t and \\ and leaves any other backslash alone.
func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case 'n':
				b.WriteByte('\n')
				i++
				continue
			case 't':
				b.WriteByte('\t')
				i++
				continue
			case '\\':
				b.WriteByte('\\')
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// TestCheck_Corpus runs both corpora: every fake secret is refused with
// its expected pattern (and found by its expected upstream rule), every
// look-alike is stored. It logs both rates.
func TestCheck_Corpus(t *testing.T) {
	t.Run("Secrets", func(t *testing.T) {
		lines := readCorpus(t, "secrets.txt", true)
		refused := 0
		families := map[string]bool{}
		for _, e := range lines {
			families[e.family()] = true
			_, err := Check("content", e.text)
			m, _ := scan(e.text)
			var r *Refusal
			switch {
			case !errors.As(err, &r):
				t.Errorf("secrets.txt:%d: got pass, want refusal %s", e.line, e.family())
			case r.Pattern != e.pattern:
				t.Errorf("secrets.txt:%d: got pattern %s, want %s", e.line, r.Pattern, e.pattern)
			case e.rule != "" && m.rule != e.rule:
				t.Errorf("secrets.txt:%d: got rule %q, want %s", e.line, m.rule, e.rule)
			default:
				refused++
			}
		}
		t.Logf("secrets refused with the expected pattern: %d/%d (%.1f%%) across %d families", refused, len(lines), 100*float64(refused)/float64(len(lines)), len(families))
		if len(lines) < 190 || len(families) < 40 {
			t.Errorf("got %d secrets in %d families, want at least 190 in 40", len(lines), len(families))
		}
	})
	t.Run("Benign", func(t *testing.T) {
		lines := readCorpus(t, "benign.txt", false)
		passed := 0
		for _, e := range lines {
			if _, err := Check("content", e.text); err != nil {
				t.Errorf("benign.txt:%d: got %v, want pass: %q", e.line, err, e.text)
				continue
			}
			passed++
		}
		t.Logf("benign stored: %d/%d (%.1f%%); false positives: %d", passed, len(lines), 100*float64(passed)/float64(len(lines)), len(lines)-passed)
		if len(lines) < 280 {
			t.Errorf("got %d benign lines, want at least 280", len(lines))
		}
	})
}

func TestPatterns(t *testing.T) {
	names := Patterns()
	if !slices.IsSorted(names) {
		t.Errorf("got %v, want sorted", names)
	}
	if c := slices.Compact(slices.Clone(names)); len(c) != len(names) {
		t.Errorf("got duplicate names in %v", names)
	}
	// Every pattern Check can report has corpus lines, and the corpus names
	// only real patterns.
	seen := map[string]bool{}
	for _, e := range readCorpus(t, "secrets.txt", true) {
		if !slices.Contains(names, e.pattern) {
			t.Errorf("secrets.txt:%d: unknown pattern %q", e.line, e.pattern)
		}
		seen[e.pattern] = true
	}
	for _, n := range names {
		if !seen[n] && n != patURLParam {
			t.Errorf("pattern %s: got no secrets.txt line, want at least one", n)
		}
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name, value, pattern string // pattern "" means pass
	}{
		{"Empty", "", ""},
		{"Prose", "rotate the API key every 90 days", ""},
		{"Password", "password=Xk9mP2vQ7r", patAssignment},
		// In an assignment only an obvious reference or placeholder passes,
		// whatever its length (issue 41).
		{"PasswordShort", "password=hunter2", patAssignment},
		{"PasswordPlaceholder", "password=<your-password>", ""},
		{"Marker", "note: DO-NOT-STORE", patMarker},
		{"MarkerFirst", "do-not-store ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5", patMarker},
		{"GitHubBeforeAssignment", "GITHUB_TOKEN=ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5", patGitHub},
		{"AnthropicBeforeOpenAI", "sk-ant-api03-aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5", patAnthropic},
		{"JWTInBearer", "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlMTIz", patJWT},
		{"URLPassword", "https://bob:Zq8#kLm2x@git.lan/r.git", patURLUserinfo},
		{"URLUserOnly", "https://bob@git.lan/r.git", ""},
		{"URLPasswordPlaceholder", "https://bob:<password>@git.lan/r.git", ""},
		{"CertificateOnly", "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJ\n-----END CERTIFICATE-----", ""},
		{"ScreenedPlaceholder", "[screened:no-store-marker] [screened:credential-assignment]", ""},
		{"EscapedJSONKey", `{\"api_key\": \"9f8e7d6c5b4a3921\"}`, patAssignment},
		{"TwoWordKey", "Access token: 9f8e7d6c5b4a3921", patAssignment},
		{"FlagForm", "psql --password 'Zq8#kLm2x'", patAssignment},
		{"FlagNotCredential", "go test --count 9f8e7d6c5b4a3921", ""},
		{"ComparisonLiteral", `if password == "Zq8#kLm2x!" {`, patAssignment},
		{"NotEqual", `if password != "Zq8#kLm2x!" {`, ""},
		{"ValueTooLongIsCut", "password=" + strings.Repeat("aB3", 200), patAssignment},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Check("content", tt.value)
			if tt.pattern == "" {
				if err != nil {
					t.Fatalf("got %v, want pass", err)
				}
				if got.String() != tt.value {
					t.Fatalf("got %q, want the value back", got.String())
				}
				return
			}
			var r *Refusal
			if !errors.As(err, &r) {
				t.Fatalf("got %v, want *Refusal", err)
			}
			if r.Field != "content" || r.Pattern != tt.pattern {
				t.Fatalf("got %s/%s, want content/%s", r.Field, r.Pattern, tt.pattern)
			}
			if got.String() != "" {
				t.Fatalf("got Text %q, want zero", got.String())
			}
		})
	}
}

// TestCheck_Placeholders pins the placeholder rule of docs/screen.md on
// the value of one credential key, in every quoting.
func TestCheck_Placeholders(t *testing.T) {
	tests := []struct {
		value   string
		refused bool
	}{
		// Real-looking: 8+ characters mixing letters with digits or symbols.
		{"Xk9mP2vQ", true},
		{"hunter22", true},
		{"s3cret!pass", true},
		{"90817!@#$%", true},
		{"f81d4fae7dec11d0a76500a0c91e6bf6", true},
		{"dXNlcjpwYXNzd29yZA==", true},
		{"contraseña9", true},
		// Short, or one class only: an assignment takes only an obvious
		// reference or placeholder (issue 41).
		{"hunter2", true},
		{"Ab1!", true},
		{"!@#$%^&*()", true},
		{"NHFZxnwrngxqCx", true},
		{"correcthorsebatterystaple", true},
		{"Welcome1234!", true},
		{"Winter1234x", true},
		// Placeholder words and typed numbers as the whole value.
		{"SuperSecretPass", false},
		{"12345678901234", false},
		{"my-secret-name", false},
		{"abcd1234", false},
		{"password", false},
		{"none", false},
		// References and templates.
		{"${DB_PASSWORD}", false},
		{"$(cat /run/secrets/db)", false},
		{"<your-password-2>", false},
		{"{{ vault_pw_2 }}", false},
		{"#{ENV['PW2']}", false},
		{"%DB_PASSWORD2%", false},
		{"/run/secrets/db_password2", false},
		{"~/.ssh/id_ed25519", false},
		{"arn:aws:secretsmanager:eu-west-1:123456789012:secret:db", false},
		// Masks and dummies.
		{"xxxxxxxx", false},
		{"********", false},
		{"aaaaaa1b", false},
		{"changeme123", false},
		{"CHANGE_ME_2", false},
		{"your-key-here-1", false},
		{"YOUR_API_KEY_1", false},
		{"abc123...xyz", false},
		{"Example-Key-1", false},
		{"fake_token_42", false},
		// Prose.
		{"the 2 of us", false},
	}
	forms := []struct {
		name string
		wrap func(string) string
	}{
		{"Env", func(v string) string { return "DB_PASSWORD=" + v }},
		{"YAML", func(v string) string { return "password: " + v }},
		{"JSON", func(v string) string { return `{"password": "` + v + `"}` }},
		{"Single", func(v string) string { return "password = '" + v + "'" }},
	}
	for _, f := range forms {
		for _, tt := range tests {
			if f.name != "JSON" && f.name != "Single" && strings.ContainsAny(tt.value, " '\"") {
				continue // an unquoted value ends at a blank or quote
			}
			text := f.wrap(tt.value)
			_, err := Check("content", text)
			if got := err != nil; got != tt.refused {
				t.Errorf("%s %q: got refused=%v (%v), want %v", f.name, text, got, err, tt.refused)
			}
		}
	}
	// Bare identifiers: names in code pass, password-like ones don't.
	for v, refused := range map[string]bool{
		"hashedPassword":        false,
		"testRSA2048PrivateKey": false,
		"test1024Key":           false,
		"Summer2024":            true,
		"MyPassword1":           true,
		"Pa55word":              true,
		"Xk9mP2vQ7r":            true,
		"2024Summer":            true,
	} {
		if _, err := Check("content", "PrivateKey: "+v); (err != nil) != refused {
			t.Errorf("PrivateKey: %s: got %v, want refused=%v", v, err, refused)
		}
	}
	// Unquoted code is not a literal; quoted, the same text is.
	for _, code := range []string{"cfg.Password2", "os.Getenv(", "env[", "this->pw2", "env::var("} {
		if _, err := Check("content", "password = "+code+`"X")`); err != nil {
			t.Errorf("unquoted %q: got %v, want pass", code, err)
		}
	}
	if _, err := Check("content", `password = "cfg.Password2"`); err == nil {
		t.Errorf(`quoted "cfg.Password2": got pass, want refused`)
	}
}

func TestCredentialName(t *testing.T) {
	tests := []struct {
		name        string
		text, inURL bool
	}{
		{"access_token", true, true},
		{"apiKey", true, true},
		{"X-Api-Key", true, true},
		{"API_KEY", true, true},
		{"APIKey", true, true},
		{"apikey", true, true},
		{"password", true, true},
		{"DB_PASSWORD", true, true},
		{"PGPASSWORD", true, true},
		{"client_secret", true, true},
		{"clientSecret", true, true},
		{"aws_secret_access_key", true, true},
		{"private_key", true, true},
		{"passphrase", true, true},
		{"db_pwd", true, true},
		{"Authorization", true, true},
		{"id_token", true, true},
		{"oauth2Token", true, true},
		{"X-Amz-Security-Token", true, true},
		{"X-Amz-Credential", true, true},
		{"user[password]", true, true},
		// URL-only: they grant access as parameters.
		{"session_id", false, true},
		{"sessionId", false, true},
		{"JSESSIONID", false, true},
		{"PHPSESSID", false, true},
		{"session", false, true},
		{"sig", false, true},
		{"signature", false, true},
		{"X-Amz-Signature", false, true},
		{"auth", false, true},
		// Kept.
		{"author", false, false},
		{"session_count", false, false},
		{"sessionCount", false, false},
		{"tokenizer", false, false},
		{"max_tokens", false, false},
		{"token_budget", false, false},
		{"token_type", false, false},
		{"page", false, false},
		{"q", false, false},
		{"key", false, false},
		{"primary_key", false, false},
		{"api_key_id", false, false},
		{"AWSAccessKeyId", false, false},
		{"password_policy", false, false},
		{"password-stdin", false, false},
		{"secretName", false, false},
		{"pageToken", false, false},
		{"next_page_token", false, false},
		{"nexttoken", false, false},
		{"PWD", false, false},
		{"OLDPWD", false, false},
		{"passkey", false, false},
		{"bypass", false, false},
		{"keyboard", false, false},
		{"", false, false},
	}
	for _, tt := range tests {
		if got := credentialName(tt.name, false); got != tt.text {
			t.Errorf("credentialName(%q, text): got %v, want %v", tt.name, got, tt.text)
		}
		if got := credentialName(tt.name, true); got != tt.inURL {
			t.Errorf("credentialName(%q, url): got %v, want %v", tt.name, got, tt.inURL)
		}
		if tt.text && !hasStem(tt.name) || tt.inURL && !hasStem(tt.name) {
			t.Errorf("hasStem(%q): got false, want true", tt.name)
		}
	}
}

func TestSplitWords(t *testing.T) {
	tests := map[string]string{
		"X-Api-Key":     "x api key",
		"APIKey":        "api key",
		"apiKey":        "api key",
		"XApiKey":       "x api key",
		"oauth2Token":   "oauth2 token",
		"session_count": "session count",
		"--password":    "password",
		"sha256Sum":     "sha256 sum",
		"":              "",
	}
	for in, want := range tests {
		if got := strings.Join(splitWords(in), " "); got != want {
			t.Errorf("splitWords(%q): got %q, want %q", in, got, want)
		}
	}
}

func TestAnchor(t *testing.T) {
	tests := []struct {
		anchor, pattern string
	}{
		{"url:https://github.com/hearth-memory/hearth/issues/3", ""},
		{"url:https://example.com/search?q=token+budget&page=2&author=ana&session_count=3", ""},
		{"url:https://example.com/doc#section-2", ""},
		{"url:https://example.com/doc#password-reset", ""},
		{"url:https://example.com/?tokenizer=bpe", ""},
		{"url:https://example.com/list?pageToken=CiAKGjBp", ""},
		{"path:docs/screening.md", ""},
		{"host:nas.lan", ""},
		{"entity:sensor.password_expiry", ""},
		{"url:https://bob@example.com/", patURLUserinfo},
		{"url:https://bob:hunter2@example.com/", patURLUserinfo},
		{"URL:ftp://anonymous:@ftp.lan/pub", patURLUserinfo},
		{"url:https://example.com/cb?access_token=abc", patURLParam},
		{"url:https://example.com/?apiKey=", patURLParam},
		{"url:https://example.com/?X-Api-Key=1", patURLParam},
		{"url:https://example.com/?session_id=42", patURLParam},
		{"url:https://example.com/?password", patURLParam},
		{"url:https://example.com/?a=1&client_secret=x", patURLParam},
		{"url:https://bucket.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4&X-Amz-Signature=ab12", patURLParam},
		{"url:https://acct.blob.core.windows.net/c/b?sv=2022&sig=ab12", patURLParam},
		{"url:https://example.com/cb#access_token=abc&token_type=bearer", patURLParam},
		{"url:https://example.com/#/callback?id_token=abc", patURLParam},
		{"url:https://example.com/app;jsessionid=ABC123?x=1", patURLParam},
		{"url:https://example.com/?api%5Fkey=1", patURLParam},
		{"url:https://example.com/?user%5Bpassword%5D=1", patURLParam},
		// Check still applies to every anchor.
		{"url:https://example.com/?q=ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5", patGitHub},
		{"path:notes/do-not-store.md", patMarker},
	}
	for _, tt := range tests {
		t.Run(tt.anchor, func(t *testing.T) {
			got, err := Anchor("changes.anchors[1]", tt.anchor)
			if tt.pattern == "" {
				if err != nil || got.String() != tt.anchor {
					t.Fatalf("got %q, %v, want pass", got.String(), err)
				}
				return
			}
			var r *Refusal
			if !errors.As(err, &r) || r.Pattern != tt.pattern || r.Field != "changes.anchors[1]" {
				t.Fatalf("got %v, want changes.anchors[1] refused by %s", err, tt.pattern)
			}
		})
	}
}

func TestCheckAll(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		got, err := CheckAll("topics", []string{"go", "sqlite"})
		if err != nil || len(got) != 2 || got[1].String() != "sqlite" {
			t.Fatalf("got %v, %v, want both topics", got, err)
		}
	})
	t.Run("ErrElement", func(t *testing.T) {
		_, err := CheckAll("topics", []string{"go", "sqlite", "password=Xk9mP2vQ7r"})
		var r *Refusal
		if !errors.As(err, &r) || r.Field != "topics[2]" || r.Pattern != patAssignment {
			t.Fatalf("got %v, want topics[2] refused", err)
		}
	})
}

func TestRedact(t *testing.T) {
	if got := Redact("plain note").String(); got != "plain note" {
		t.Errorf("got %q, want the value", got)
	}
	if got := Redact("token: ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5").String(); got != "[screened:github-token]" {
		t.Errorf("got %q, want [screened:github-token]", got)
	}
	for _, p := range Patterns() {
		if _, err := Check("detail", "[screened:"+p+"]"); err != nil {
			t.Errorf("placeholder for %s: got %v, want pass", p, err)
		}
	}
}

func TestRefusal_Error(t *testing.T) {
	secret := "Xk9mP2vQ7r"
	_, err := Check("content", "password="+secret)
	if err == nil {
		t.Fatal("got pass, want refusal")
	}
	msg := err.Error()
	if strings.Contains(msg, secret) || !strings.Contains(msg, "content") || !strings.Contains(msg, patAssignment) {
		t.Fatalf("got %q, want field and pattern, not the value", msg)
	}
}
