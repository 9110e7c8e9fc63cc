package options

import (
	"net/url"
	"strings"
	"unicode"
)

// DatabaseSchemes are the URL schemes database_url takes, PostgreSQL's two.
var DatabaseSchemes = []string{"postgres", "postgresql"}

// redactedParams are the query parameters of a PostgreSQL URL that hold a
// secret (libpq's and pgx's names).
var redactedParams = []string{"password", "sslpassword"}

// checkDatabaseURL returns why s is not a PostgreSQL URL database_url
// takes, or "". The message never repeats s: it may carry a password.
func checkDatabaseURL(s string) string {
	const want = "must be a PostgreSQL URL such as postgres://user:password@host:5432/database"
	if strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0 {
		return "must not hold spaces or control characters"
	}
	// pgx reads a connection string as a URL only when it starts with
	// one of the schemes, in lower case, and "://".
	scheme, _, _ := strings.Cut(s, "://")
	u, err := url.Parse(s)
	switch {
	case err != nil, !contains(DatabaseSchemes, scheme), u.Opaque != "":
		return want
	case u.Fragment != "" || strings.Contains(s, "#"):
		return "must not carry a fragment"
	}
	return ""
}

// RedactDatabaseURL returns a database_url to print: its password, in the
// user info or a password or sslpassword parameter, replaced by xxxxx.
// A value Validate would refuse is not shown at all.
func RedactDatabaseURL(s string) string {
	if checkDatabaseURL(s) != "" {
		return "(not shown: not a PostgreSQL URL)"
	}
	u, _ := url.Parse(s) // checkDatabaseURL parsed it
	q := u.Query()
	changed := false
	for _, p := range redactedParams {
		if q.Has(p) {
			q.Set(p, "xxxxx")
			changed = true
		}
	}
	if changed {
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}
