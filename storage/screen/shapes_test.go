package screen

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestCheck_Shapes pins each shape with values it refuses (by its pattern)
// and look-alikes it stores (pattern ""). The corpora hold more of both.
func TestCheck_Shapes(t *testing.T) {
	shapes := map[string][]struct{ text, pattern string }{
		"URLUserinfo": {
			{`DATABASE_URL=postgres://app:Vb7qLx2Wm9@db:5432/app`, patURLUserinfo},
			{`url: "mysql://shop:Kt4#nR8vQ2@10.0.0.7/shop"`, patURLUserinfo},
			{`["redis://:Qw9zT4mK7p@cache:6379"]`, patURLUserinfo},
			{`(mongodb+srv://admin:Rt5vB9nM2q@c0.mongodb.net)`, patURLUserinfo},
			{`<https://bot:Lq8mN3xV7z@git.lan/x.git>`, patURLUserinfo},
			{`https://alice:Zk4pW9mQ2x@github.com`, patURLUserinfo}, // .git-credentials
			{`postgres://user:password@localhost/db`, ""},
			{`mongodb+srv://<user>:<password>@c0.mongodb.net`, ""},
			{`https://user@git.lan/x.git`, ""},
		},
		"DriverDSN": {
			{`app:Vq8mK3xP2w@tcp(db:3306)/orders`, patDriverDSN},
			{`"root:Tz7vN2qW8k@unix(/run/mysqld.sock)/app"`, patDriverDSN},
			{`dsn=svc:Hj4#pL9mX2@tcp6([::1]:3306)/r`, patDriverDSN},
			{`hr/Xm4Lp9Vq2@//oradb:1521/HRPDB`, patDriverDSN},
			{`user:password@tcp(localhost:3306)/db`, ""},
			{`app:${MYSQL_PASSWORD}@tcp(db:3306)/app`, ""},
			{`go get github.com/go-sql-driver/mysql@v1.8.1`, ""},
		},
		"ConnectionString": {
			{`Server=db;Database=erp;User ID=erp;Password=Pq7#mX2vL9;`, patConnString},
			{`Driver={ODBC};Server=db;Uid=hr;Pwd={Wv3!kN8qR2};`, patConnString},
			{`AccountName=prod;AccountKey=Ym9ndXNrZXlmb3J0ZXN0aW5nMTIz==;EndpointSuffix=core.windows.net`, patConnString},
			{`Endpoint=sb://x.servicebus.windows.net/;SharedAccessKeyName=a;SharedAccessKey=c2hhcmVkYWNjZXNz0=`, patConnString},
			{`Server=db;Uid=root;Pwd=Rz2!nB7xM4`, patConnString},
			{`Server=db;Database=app;User Id=app;Password=myPassword;`, ""},
			{`Server=db;Uid=hr;Pwd={your_password};`, ""},
			{`pwd=/home/alice2`, ""},
		},
		"CommandLine": {
			{`mysql -u root -pXw7!kM3qZ9 shop`, patCLI},
			{`mysqldump -u b -p'Lm4#vR8nQ2' --all-databases`, patCLI},
			{`sshpass -p 'Tq9mZ2xV7k' ssh admin@host`, patCLI},
			{`docker login -u ci -p Hv5!nW8xL3 registry.lan`, patCLI},
			{`curl -u admin:Pk7!zQ2wX9 https://nas.lan`, patCLI},
			{`redis-cli -a Qz8#pK3vM6 ping`, patCLI},
			{`openssl enc -pass pass:Kq7#xM2vN9 -in a`, patCLI},
			{`mysql --password=Xw7!kM3qZ9 shop`, patAssignment},
			{`psql --password 'Xw7!kM3qZ9'`, patAssignment},
			{`PGPASSWORD=Hq7mW2xZ9k psql -h db`, patAssignment},
			{`ssh -p 2222 admin@host`, ""},
			{`docker run -p 8080:80 nginx`, ""},
			{`mysql -u root -p shop_2024`, ""},
			{`curl -u "$USER:$TOKEN" https://x`, ""},
			{`openssl enc -pass env:KEY -in a`, ""},
		},
		"CredentialFiles": {
			{`machine nexus.lan login deployer password Pw4#kX8mV2`, patNetrc},
			{"machine ftp.lan\n  login backup\n  password Kv9!zM3qX7", patNetrc},
			{`db.lan:5432:orders:orders:Xv8#mQ3kL2`, patPgpass},
			{`*:*:*:replicator:Zq7!vM4xK9`, patPgpass},
			{`machine api.github.com login octocat password $GITHUB_TOKEN`, ""},
			{`localhost:5432:*:postgres:postgres`, ""},
			{`fe80:0000:0000:0000:0202:b3ff:fe1e:8329`, ""},
		},
		"AuthorizationHeader": {
			{`Authorization: Bearer b0130cad05810c05066a764454db5798`, patAssignment},
			{`Proxy-Authorization: Basic ZGVwbG95ZXI6UWs0IW1WOXhaMw==`, patAssignment},
			{`-H "Authorization: Token Wn8k2Lq5Xv7m3Rz9Pt4c"`, patAssignment},
			{`Authorization: Negotiate YIIGhgYGKwYBBQUCoIIGejCCBnag8Dg+`, patAssignment},
			{`Authorization: Bearer {{token}}`, ""},
			{`Proxy-Authorization: Basic <base64>`, ""},
		},
		"Formats": {
			{`{"db": {"password": "Tk8#mV3xQ7"}}`, patAssignment},    // JSON
			{"db:\n  password: Zx7#vM2qK9", patAssignment},           // YAML
			{"db:\n  password: |\n    Zx7#vM2qK9", patAssignment},    // YAML block
			{"[database]\npassword = \"Tk8#mV3xQ7\"", patAssignment}, // TOML
			{"[client]\npassword=Hx4!qM9vZ2", patAssignment},         // INI
			{`DB_PASS="Wq5#nK8xV3"`, patAssignment},                  // .env quoted
			{`DB_PASS=Wq5#nK8xV3`, patAssignment},                    // .env unquoted
			{`<password>Qk4!mV9xZ3</password>`, patAssignment},       // XML
			{"[database]\npassword = \"\"", ""},
			{`<password>${env.NEXUS_PASSWORD}</password>`, ""},
			{"db:\n  password: |\n    ${DB_PASSWORD}", ""},
		},
		"PrivateKey": {
			{"-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAw7nX2vL9mK4pR8wZ3t", patPrivateKey},
			{"-----BEGIN EC PRIVATE KEY-----\r\nMHcCAQEEIBq7nX2vL9mK4pR8wZ3tY6u", patPrivateKey},
			{"-----BEGIN DSA PRIVATE KEY-----\nMIIBuwIBAAKBgQCHmZ3vX8nqvW2PfT6r", patPrivateKey},
			{"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUA", patPrivateKey},
			{"-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIFHDBOBgkqhkiG9w0BBQ0wQTApBgkq", patPrivateKey},
			{"-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\nlQOYBGX1O1dfG88+uK4e92Py", patPrivateKey},
			{"---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nComment: \"k\"\nP2/56wAAAi4AAAA3aWYtbW9k", patPrivateKey},
			{"-----BEGIN RSA PRIVATE KEY-----\n...\n-----END RSA PRIVATE KEY-----", ""},
			{"-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A", ""},
		},
		"Prose": {
			{`the prod secret key is 9dK2vLq8XmP4wZ`, patProse},
			{`use password Xq7!mK2pLz for the admin`, patProse},
			{`the root password for the staging db is now Hm4!xZ9qV2`, patProse},
			{`ALTER USER app WITH PASSWORD 'Rp6#vN3xK8';`, patProse},
			{`CREATE USER 'etl'@'%' IDENTIFIED BY 'Et5!mQ8vX2';`, patProse},
			{`the password policy requires 12 characters`, ""},
			{`the password file is secrets2.txt`, ""},
			{`fixed the token refresh bug in 457a165b`, ""},
			{`the next token is CiAKGjBpNDd2`, ""},
			{`the password is required`, ""},
		},
	}
	for name, cases := range shapes {
		t.Run(name, func(t *testing.T) {
			for _, c := range cases {
				_, err := Check("content", c.text)
				var r *Refusal
				switch {
				case c.pattern == "" && err != nil:
					t.Errorf("%q: got %v, want pass", c.text, err)
				case c.pattern != "" && !errors.As(err, &r):
					t.Errorf("%q: got pass, want refusal %s", c.text, c.pattern)
				case c.pattern != "" && r.Pattern != c.pattern:
					t.Errorf("%q: got pattern %s, want %s", c.text, r.Pattern, c.pattern)
				}
			}
		})
	}
}

// TestFindCLIPassword_Span checks that the span is the password, also
// when quotes were removed from its word.
func TestFindCLIPassword_Span(t *testing.T) {
	for text, want := range map[string]string{
		`mysql -pXw7!kM3qZ9 shop`:            "Xw7!kM3qZ9",
		`sshpass -p 'Tq9mZ2xV7k' ssh host`:   "Tq9mZ2xV7k",
		`curl -u "admin:Pk7!zQ2wX9" https:x`: "Pk7!zQ2wX9",
		`htpasswd -nb admin Rx9#mT4qV2`:      "Rx9#mT4qV2",
		`sqlplus system/Hq3#vN8xK5@ORCL`:     "Hq3#vN8xK5",
	} {
		start, end := findCLIPassword(newText(text))
		if start < 0 || text[start:end] != want {
			t.Errorf("%q: got span [%d,%d), want %q", text, start, end, want)
		}
	}
}

func TestShellWords(t *testing.T) {
	s := `mysql -p'a b' "c\"d" e\ f  g`
	var buf [8]arg
	var got []string
	for _, a := range shellWords(s, 0, len(s), buf[:0]) {
		got = append(got, a.text)
	}
	if want := []string{"mysql", "-pa b", `c"d`, "e f", "g"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestFinders_HintOrder checks that the command-line and prose finders do
// not depend on the order hints arrive in (keywordSet reports a long
// keyword when its prefix ends, which may be after a shorter one that
// starts later).
func TestFinders_HintOrder(t *testing.T) {
	for _, s := range []string{
		`sshpass -p "$P" ssh h && mysql -u r -pXw7!kM3qZ9 db`,
		"the admin password is Wv8#qK3mX5 and the token budget is 4000",
	} {
		want := newText(s)
		ws1, we1 := findCLIPassword(want)
		ps1, pe1 := findProse(want)
		got := newText(s)
		slices.Reverse(got.cli)
		slices.Reverse(got.prose)
		ws2, we2 := findCLIPassword(got)
		ps2, pe2 := findProse(got)
		if ws1 != ws2 || we1 != we2 || ps1 != ps2 || pe1 != pe2 {
			t.Errorf("%q: got %d,%d %d,%d reversed, want %d,%d %d,%d", s, ws2, we2, ps2, pe2, ws1, we1, ps1, pe1)
		}
		if ws1 < 0 && ps1 < 0 {
			t.Errorf("%q: got no hit, want one", s)
		}
	}
}

// TestPlaceholderWords holds maxPlaceholderWord to the longest word, so
// placeholderRun can split every run the words make.
func TestPlaceholderWords(t *testing.T) {
	t.Parallel()
	for w := range placeholderWords {
		if len(w) > maxPlaceholderWord || strings.ToLower(w) != w {
			t.Errorf("placeholder word %q: longer than %d or not lower-case", w, maxPlaceholderWord)
		}
	}
	for run, want := range map[string]bool{"mysecretpassword": true, "supersecret": true, "yourpassword": true,
		"correcthorsebatterystaple": false, "welcome": false, "": true} {
		if got := placeholderRun(run); got != want {
			t.Errorf("placeholderRun(%q) = %v, want %v", run, got, want)
		}
	}
}
