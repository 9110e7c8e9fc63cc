package screen

import (
	"slices"
	"strings"
)

// A cliFlag is a flag that takes a password on a command line.
type cliFlag struct {
	flag     string
	attached bool   // -p<pw>: the value follows the flag in the same word
	spaced   bool   // -p <pw>: the value is the next word
	prefix   string // a prefix of the value to drop: pass: in openssl's pass:<pw>
	sep      byte   // the password follows this byte: user:<pw>, user%<pw>
}

// A cliCommand names the flags by which a command takes a password on its
// command line. With sub set, the flags count only after that subcommand
// (docker login -p …, not docker run -p 8080:80).
type cliCommand struct {
	names []string
	sub   string
	flags []cliFlag
}

var (
	attachedP = cliFlag{flag: "-p", attached: true}
	spacedP   = cliFlag{flag: "-p", attached: true, spaced: true}
)

// cliCommands are the commands screened for command-line passwords. A bare
// -p is taken as a password only where the command reads it so: mysql's
// -p<pw> is attached (mysql -p db prompts, and db is a database), ssh -p,
// docker run -p and mkdir -p are ports and paths. --password <pw> and
// --password=<pw> are credential-assignment for every command.
var cliCommands = []cliCommand{
	{names: []string{"mysql", "mysqldump", "mysqladmin", "mysqlimport", "mysqlshow", "mysqlcheck", "mysqlpump", "mysqlslap", "mariadb", "mariadb-dump", "mariadb-admin"}, flags: []cliFlag{attachedP}},
	{names: []string{"sshpass"}, flags: []cliFlag{spacedP}},
	{names: []string{"docker", "podman", "nerdctl", "buildah", "skopeo", "helm", "oras", "crane", "az", "oc", "cf"}, sub: "login", flags: []cliFlag{spacedP}},
	{names: []string{"mongo", "mongosh", "mongodump", "mongorestore", "mongoexport", "mongoimport", "mongostat", "mongotop", "mongofiles"}, flags: []cliFlag{spacedP}},
	{names: []string{"psexec", "psexec64", "paexec", "rdesktop", "hdbsql"}, flags: []cliFlag{spacedP}},
	{names: []string{"redis-cli", "valkey-cli", "keydb-cli"}, flags: []cliFlag{{flag: "-a", attached: true, spaced: true}, {flag: "--pass", spaced: true}}},
	{names: []string{"sqlcmd", "bcp", "osql", "isql", "mssql-cli", "zip", "unzip", "mosquitto_pub", "mosquitto_sub", "mosquitto_rr"}, flags: []cliFlag{{flag: "-P", attached: true, spaced: true}}},
	{names: []string{"7z", "7za", "7zz", "7zr"}, flags: []cliFlag{attachedP}},
	{names: []string{"ldapsearch", "ldapadd", "ldapmodify", "ldapdelete", "ldapwhoami", "ldappasswd", "ldapcompare", "ldapmodrdn", "ldapexop"}, flags: []cliFlag{{flag: "-w", attached: true, spaced: true}}},
	{names: []string{"keytool", "jarsigner"}, flags: []cliFlag{{flag: "-storepass", spaced: true}, {flag: "-keypass", spaced: true}, {flag: "-srcstorepass", spaced: true}, {flag: "-deststorepass", spaced: true}, {flag: "-srckeypass", spaced: true}, {flag: "-destkeypass", spaced: true}}},
	{names: []string{"openssl"}, flags: []cliFlag{{flag: "-passin", spaced: true, prefix: "pass:"}, {flag: "-passout", spaced: true, prefix: "pass:"}, {flag: "-pass", spaced: true, prefix: "pass:"}, {flag: "-password", spaced: true, prefix: "pass:"}, {flag: "-k", spaced: true}}},
	{names: []string{"curl"}, flags: []cliFlag{{flag: "-u", attached: true, spaced: true, sep: ':'}, {flag: "--user", spaced: true, sep: ':'}, {flag: "-U", attached: true, spaced: true, sep: ':'}, {flag: "--proxy-user", spaced: true, sep: ':'}}},
	{names: []string{"lftp"}, flags: []cliFlag{{flag: "-u", spaced: true, sep: ','}}},
	{names: []string{"smbclient", "rpcclient", "smbmap", "net"}, flags: []cliFlag{{flag: "-U", attached: true, spaced: true, sep: '%'}, {flag: "--user", spaced: true, sep: '%'}}},
	{names: []string{"pscp", "plink", "putty", "psftp"}, flags: []cliFlag{{flag: "-pw", spaced: true}}},
	{names: []string{"xfreerdp", "wlfreerdp", "sdl-freerdp"}, flags: []cliFlag{{flag: "/p:", attached: true}}},
	{names: []string{"influx"}, flags: []cliFlag{{flag: "-password", spaced: true}}},
	{names: []string{"snmpwalk", "snmpget", "snmpset", "snmpbulkwalk", "snmpbulkget", "snmptrap"}, flags: []cliFlag{{flag: "-A", spaced: true}, {flag: "-X", spaced: true}}},
}

// cliIndex maps a command name to its entry.
var cliIndex = func() map[string]*cliCommand {
	m := map[string]*cliCommand{}
	for i := range cliCommands {
		for _, n := range cliCommands[i].names {
			m[n] = &cliCommands[i]
		}
	}
	return m
}()

// An arg is one shell word of a command line: its text with quotes
// removed, its span in the line, and whether any of it was quoted.
type arg struct {
	text       string
	start, end int // span of the word in the value, quotes included
	quoted     bool
}

// positionalCommands take a password as a plain argument; see
// positionalPassword.
var positionalCommands = []string{"htpasswd", "rabbitmqctl", "aws", "sqlplus", "sqlldr", "expdp", "impdp", "rman", "convertto-securestring"}

// cliNameList are the names of cliCommands and positionalCommands. They
// are hints (hints.go), so that only the commands holding one are split
// into words.
var cliNameList = func() []string {
	var names []string
	for _, c := range cliCommands {
		names = append(names, c.names...)
	}
	return append(names, positionalCommands...)
}()

// findCLIPassword finds a password passed on a command line (see
// cliCommands), and the positional passwords of htpasswd -b, rabbitmqctl
// add_user / change_password, sqlplus user/pw@db, aws configure set and
// ConvertTo-SecureString. The words after each command name are read up to
// the end of the command (a line break that is not escaped, |, ; or &) or
// the next command name, at most maxArgs words and maxCommand bytes.
func findCLIPassword(t *text) (int, int) {
	s := t.s
	// The command names that stand as words of their own, by start.
	var buf [8]int
	starts := buf[:0]
	for _, h := range t.cli {
		e := h.end
		lo := e - len(hints.words[h.id])
		if lo > 0 && !isBlank(s[lo-1]) && s[lo-1] != '/' && !isQuote(s[lo-1]) && s[lo-1] != '(' || e < len(s) && !isBlank(s[e]) {
			continue // part of a longer word
		}
		starts = append(starts, lo)
	}
	slices.Sort(starts)
	for k, lo := range starts {
		// A command ends where the next one starts, so that every byte
		// is split into words once.
		limit := len(s)
		if k+1 < len(starts) {
			limit = starts[k+1]
		}
		hi := lo
		for hi < limit && hi-lo < maxCommand && !commandBreak(s, hi) {
			hi++
		}
		if start, end := findCLIIn(s, lo, hi); start >= 0 {
			return start, end
		}
	}
	return -1, -1
}

// maxCommand bounds the bytes of one command that are read.
const maxCommand = 1024

// commandBreak reports whether s[i] ends a command: a line break that is
// not escaped, |, ; or &.
func commandBreak(s string, i int) bool {
	switch s[i] {
	case '|', ';', '&':
		return true
	case '\n':
		return i == 0 || s[i-1] != '\\'
	}
	return false
}

// maxArgs bounds the words of one command that are read.
const maxArgs = 64

// findCLIIn judges the command whose name starts at lo.
func findCLIIn(s string, lo, hi int) (int, int) {
	var buf [maxArgs]arg
	args := shellWords(s, lo, hi, buf[:0])
	if len(args) < 2 {
		return -1, -1
	}
	name := args[0].text
	if k := strings.LastIndexByte(name, '/'); k >= 0 {
		name = name[k+1:]
	}
	if strings.EqualFold(name, "ConvertTo-SecureString") {
		name = "convertto-securestring" // PowerShell ignores case
	}
	if cmd, ok := cliIndex[name]; ok {
		return cmd.find(s, args[1:])
	}
	return positionalPassword(name, s, args[1:])
}

func (cmd *cliCommand) find(s string, args []arg) (int, int) {
	if cmd.sub != "" {
		i := 0
		for i < len(args) && args[i].text != cmd.sub {
			i++
		}
		if i == len(args) {
			return -1, -1
		}
		args = args[i+1:]
	}
	for i, a := range args {
		for _, f := range cmd.flags {
			var v arg
			switch {
			case a.text == f.flag && f.spaced && i+1 < len(args):
				v = args[i+1]
			case f.attached && len(a.text) > len(f.flag) && strings.HasPrefix(s[a.start:a.end], f.flag):
				v = a
				v.text = a.text[len(f.flag):]
				v.start += len(f.flag)
			default:
				continue
			}
			if start, end := v.password(s, f.prefix, f.sep); start >= 0 {
				return start, end
			}
		}
	}
	return -1, -1
}

// password judges the value of a password flag and returns its span in s.
// With prefix, only a value starting with it holds a password (pass:…);
// with sep, the password follows the first sep (user:pw).
func (v arg) password(s, prefix string, sep byte) (int, int) {
	p := v.text
	if prefix != "" {
		var ok bool
		if p, ok = strings.CutPrefix(p, prefix); !ok {
			return -1, -1
		}
	}
	if sep != 0 {
		k := strings.IndexByte(p, sep)
		if k < 0 {
			return -1, -1
		}
		p = p[k+1:]
	}
	if p == "" || strings.HasPrefix(v.text, "-") || !realValue(p, !v.quoted) {
		return -1, -1
	}
	// The span: the password's bytes within the word when it is found
	// there verbatim, else the whole word (quotes were removed).
	if k := strings.Index(s[v.start:v.end], p); k >= 0 {
		return v.start + k, v.start + k + len(p)
	}
	return v.start, v.end
}

// positionalPassword handles commands that take a password as a plain
// argument.
func positionalPassword(name, s string, args []arg) (int, int) {
	var pos []arg // the arguments that are not flags
	flags := ""
	for _, a := range args {
		if strings.HasPrefix(a.text, "-") && !a.quoted {
			flags += a.text
			continue
		}
		pos = append(pos, a)
	}
	var pw *arg
	switch name {
	case "htpasswd":
		// htpasswd -b file user pw; htpasswd -nb user pw.
		if !strings.Contains(flags, "b") {
			return -1, -1
		}
		n := 2
		if strings.Contains(flags, "n") {
			n = 1
		}
		if n < len(pos) {
			pw = &pos[n]
		}
	case "rabbitmqctl":
		// rabbitmqctl add_user user pw; change_password user pw.
		if len(pos) >= 3 && (pos[0].text == "add_user" || pos[0].text == "change_password") {
			pw = &pos[2]
		}
	case "aws":
		// aws configure set aws_secret_access_key …
		if len(pos) >= 4 && pos[0].text == "configure" && pos[1].text == "set" && hasStem(pos[2].text) && credentialName(pos[2].text, false) {
			pw = &pos[3]
		}
	case "convertto-securestring":
		// ConvertTo-SecureString '…' -AsPlainText -Force
		if len(pos) > 0 && strings.Contains(strings.ToLower(flags), "-asplaintext") {
			pw = &pos[0]
		}
	case "sqlplus", "sqlldr", "expdp", "impdp", "rman":
		// sqlplus user/pw@db; the first word that is not a flag.
		if len(pos) > 0 && !strings.HasPrefix(pos[0].text, "/") {
			if u, rest, ok := strings.Cut(pos[0].text, "/"); ok && u != "" {
				rest, _, _ = strings.Cut(rest, "@")
				a := pos[0]
				a.text = rest
				pw = &a
			}
		}
	}
	if pw == nil {
		return -1, -1
	}
	return pw.password(s, "", 0)
}

// shellWords splits s[lo:hi] into at most cap(out) shell words: blanks
// separate them, '…' and "…" quote, and \ escapes outside single quotes.
func shellWords(s string, lo, hi int, out []arg) []arg {
	i := lo
	for i < hi && len(out) < cap(out) {
		for i < hi && (isBlank(s[i]) || s[i] == '\\' && i+1 < hi && s[i+1] == '\n') {
			i++
		}
		if i >= hi {
			break
		}
		a := arg{start: i}
		j := i
		for j < hi && !isBlank(s[j]) && s[j] != '\'' && s[j] != '"' && s[j] != '\\' {
			j++
		}
		if j == hi || isBlank(s[j]) {
			// A plain word: no copy.
			a.end, a.text = j, s[i:j]
			out = append(out, a)
			i = j
			continue
		}
		var b strings.Builder
		b.WriteString(s[i:j])
		i = j
		for i < hi && !isBlank(s[i]) {
			switch c := s[i]; c {
			case '\'':
				a.quoted = true
				k := strings.IndexByte(s[i+1:hi], '\'')
				if k < 0 {
					k = hi - i - 1
				}
				b.WriteString(s[i+1 : i+1+k])
				i += k + 2
			case '"':
				a.quoted = true
				i++
				for i < hi && s[i] != '"' {
					if s[i] == '\\' && i+1 < hi {
						i++
					}
					b.WriteByte(s[i])
					i++
				}
				i++
			case '\\':
				if i+1 < hi {
					i++
				}
				b.WriteByte(s[i])
				i++
			default:
				b.WriteByte(c)
				i++
			}
		}
		a.end = min(i, hi)
		a.text = b.String()
		out = append(out, a)
	}
	return out
}
