package options

import (
	"net/url"
	"strings"
	"testing"
)

func TestParse_DatabaseURL(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, in string }{
		{"OKPostgres", "postgres://hearth:hunter2@db.lan:5432/hearth?sslmode=require"},
		{"OKPostgresql", "postgresql://db.lan/hearth"},
		{"OKSocket", "postgres:///hearth?host=/var/run/postgresql"},
		{"OKSeveralHosts", "postgres://db1.lan:5432,db2.lan:5432/hearth?target_session_attrs=read-write"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := mustParse(t, `{"database_url":"`+tt.in+`"}`)
			if o.DatabaseURL != tt.in {
				t.Fatalf("got %q, want %q", o.DatabaseURL, tt.in)
			}
		})
	}
	t.Run("OKUnsetIsSQLite", func(t *testing.T) {
		if o := mustParse(t, `{"database_url":""}`); o.DatabaseURL != "" {
			t.Fatalf("got %q, want unset", o.DatabaseURL)
		}
	})
}

func TestRedactDatabaseURL(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, in, want string }{
		{"OKUserInfo", "postgres://hearth:hunter2@db.lan:5432/hearth", "postgres://hearth:xxxxx@db.lan:5432/hearth"},
		{"OKNoPassword", "postgresql://hearth@db.lan/hearth?sslmode=require", "postgresql://hearth@db.lan/hearth?sslmode=require"},
		{"OKPasswordParam", "postgres://db.lan/hearth?user=hearth&password=hunter2", "postgres://db.lan/hearth?password=xxxxx&user=hearth"},
		{"OKSSLPasswordParam", "postgres://a:hunter2@db.lan/hearth?sslpassword=hunter3", "postgres://a:xxxxx@db.lan/hearth?sslpassword=xxxxx"},
		{"OKEscapedPassword", "postgres://a:hunt%40er2@db.lan/hearth", "postgres://a:xxxxx@db.lan/hearth"},
		{"ErrNotPostgres", "mysql://a:hunter2@db.lan/hearth", "(not shown: not a PostgreSQL URL)"},
		{"ErrKeywords", "host=db.lan password=hunter2", "(not shown: not a PostgreSQL URL)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := RedactDatabaseURL(tt.in); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// FuzzRedactDatabaseURL holds that RedactDatabaseURL never shows the
// password of a URL, whether in its user info or its password parameter.
func FuzzRedactDatabaseURL(f *testing.F) {
	f.Add("hearth", "hunter2", "db.lan:5432", "hearth", false)
	f.Add("a", "p@ss:w/rd?#", "[fd00::1]:5432", "db", true)
	f.Add("", "secretsecret", "", "", true)
	f.Fuzz(func(t *testing.T, user, password, host, db string, asParam bool) {
		u := url.URL{Scheme: "postgres", Host: host, Path: "/" + db}
		if asParam {
			u.User = url.User(user)
			u.RawQuery = url.Values{"password": {password}}.Encode()
		} else {
			u.User = url.UserPassword(user, password)
		}
		s := u.String()
		got := RedactDatabaseURL(s)
		// A short password, or one the rest of the URL holds anyway,
		// says nothing by occurring.
		rest := strings.Join([]string{user, host, db, url.QueryEscape(user), url.PathEscape(db), "postgres://xxxxx?password=&/:@"}, " ")
		for _, form := range []string{password, url.QueryEscape(password), url.UserPassword("", password).String()[1:]} {
			if len(form) >= 6 && !strings.Contains(rest, form) && strings.Contains(got, form) {
				t.Fatalf("RedactDatabaseURL(%q) = %q: shows the password", s, got)
			}
		}
	})
}
