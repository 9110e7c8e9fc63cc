package server_test

import (
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/server/servertest"
)

// TestScreen_StrictPlaceholders holds issue 41's second finding through
// REST, MCP and gRPC: real passwords that the placeholder rules let
// through (letters only in a URL, dummy words inside a value, a provider
// token holding abcd, a password stated in prose) are refused naming the
// field and pattern, and look-alikes that are references or placeholders
// are still stored.
func TestScreen_StrictPlaceholders(t *testing.T) {
	t.Parallel()
	td := servertest.Start(t, testOptions())
	tok := td.Tokens["claude-code"]
	const ns = "github/acme/screen"
	refused := map[string]string{
		"postgres://app:NHFZxnwrngxqCx@db/app":                              "url-userinfo",
		"git clone https://deploy:correcthorsebatterystaple@git.acme.dev/a": "url-userinfo",
		"DB_PASSWORD=Welcome1234!":                                          "credential-assignment",
		"mysql -pWinter1234x":                                               "cli-password",
		"export GITHUB_TOKEN=ghp_abcdQ9x7LmN2pR5tV8wY1zB4cF6hJ0kM3sXe":      "github-token",
		"the admin password is Tr0ub4dor&3xQ":                               "credential-in-prose",
	}
	stored := []string{
		"password is required",
		"the password is stored in Vault",
		"postgres://user:${DB_PASS}@db/app",
		"docker run -e POSTGRES_PASSWORD=mysecretpassword -d postgres",
	}
	for _, tr := range td.Transports() {
		for content, pattern := range refused {
			r := tr.Call(t, tok, "memory_store", storeArgs(ns, "Deploy notes", content))
			if r.OK || r.Code != "INVALID_ARGUMENT" || r.HTTP != 400 || str(r.Body, "error", "field") != "content" || str(r.Body, "error", "pattern") != pattern {
				t.Errorf("%s: %q: %v, want INVALID_ARGUMENT/400 naming content and %s", tr.Name(), content, r, pattern)
			}
			if strings.Contains(string(r.Raw), content) {
				t.Errorf("%s: the reply echoes the value", tr.Name())
			}
		}
		for _, content := range stored {
			if r := tr.Call(t, tok, "memory_store", storeArgs(ns, "Deploy notes "+tr.Name(), content)); !r.OK {
				t.Errorf("%s: %q: %v, want stored", tr.Name(), content, r)
			}
		}
	}
}
