package namespace

import (
	"fmt"
	"net/netip"
	"net/url"
	"strings"
)

// MaxRemoteLen bounds the git remote URLs ParseRemote reads, in bytes.
const MaxRemoteLen = 2048

// Remote is a git remote URL reduced to what names a repository: the host
// (lower case, without user or port; an IPv6 address keeps its brackets) and
// the owner and repository (lower case, ".git" dropped). Path is owner/repo as
// written, case kept, for a secret screen that judges case. A Remote never
// holds the URL's user information.
type Remote struct {
	Host, Owner, Repo string
	Path              string
}

// Namespace returns the repository namespace of r on a forge kind ("github"
// or "gitea"): kind/owner/repo.
func (r Remote) Namespace(kind string) string {
	return kind + "/" + r.Owner + "/" + r.Repo
}

// RemoteError says why a remote was refused. Its message never repeats the
// remote's user information, nor any part of the path it could not read.
// Local, when set, is a local/<name> namespace to use instead (a path on
// disk rather than a URL).
type RemoteError struct {
	Reason string
	Local  string
}

func (e *RemoteError) Error() string {
	if e.Local != "" {
		return e.Reason + "; for a checkout without a forge remote use the namespace " + e.Local
	}
	return e.Reason
}

// remoteForms is the help appended to a remote that cannot be read at all.
const remoteForms = "want https://host/owner/repo(.git), git@host:owner/repo.git or ssh://git@host/owner/repo.git"

func refuse(format string, args ...any) (Remote, error) {
	return Remote{}, &RemoteError{Reason: fmt.Sprintf(format, args...)}
}

// ParseRemote reads a git remote URL in any of the forms git accepts for a
// forge repository:
//
//	https://github.com/Owner/Repo.git (also http://, with or without .git and a trailing slash)
//	git@github.com:owner/repo.git     (scp-like; also with a leading slash before owner)
//	ssh://git@github.com[:22]/owner/repo.git (also git+ssh:// and ssh+git://)
//	git://github.com/owner/repo.git
//
// Surrounding white space is ignored. The user information (a user name, or
// user:password) is dropped unread, as are a query and a fragment; the path
// must be exactly owner/repository; owner and repository are lower-cased and
// must then be valid segments, so that both github/owner/repo and
// gitea/owner/repo pass Validate. Whether the host is a forge Hearth knows is
// the caller's decision.
//
// A local path or file:// URL is refused with a RemoteError whose Local
// suggests a local/<name> namespace. Every error is a *RemoteError.
func ParseRemote(s string) (Remote, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return refuse("is empty; " + remoteForms)
	case len(s) > MaxRemoteLen:
		return refuse("is %d bytes; at most %d", len(s), MaxRemoteLen)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == 0x7f {
			return refuse("must not contain spaces or control characters")
		}
	}
	if i := strings.Index(s, "://"); i >= 0 {
		return parseURL(strings.ToLower(s[:i]), s[i+len("://"):])
	}
	if strings.Contains(s, `\`) {
		return local(strings.ReplaceAll(s, `\`, "/")) // a Windows path
	}
	return parseSCP(s)
}

// parseURL reads scheme://[userinfo@]host[:port]/owner/repo[.git][/][?query][#fragment].
func parseURL(scheme, rest string) (Remote, error) {
	switch scheme {
	case "https", "http", "ssh", "git", "git+ssh", "ssh+git":
	case "file":
		return local(rest)
	default:
		if schemeOK(scheme) {
			return refuse("scheme %s is not https, http, ssh or git; %s", scheme, remoteForms)
		}
		return refuse("is not a git remote URL; " + remoteForms)
	}
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest = rest[:i]
	}
	authority, path := rest, ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		authority, path = rest[:i], rest[i:]
	}
	// Everything up to the last '@' of the authority is user information:
	// dropped here and never looked at again.
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		authority = authority[i+1:]
	}
	host, err := hostPort(authority, true)
	if err != nil {
		return Remote{}, err
	}
	p, perr := url.PathUnescape(path)
	if perr != nil {
		return refuse("the path is not valid percent-encoding")
	}
	return fromPath(host, p)
}

// parseSCP reads git's scp-like form, [user@]host:path, which git recognises
// when a ':' comes before the first '/'. Anything else is a local path.
func parseSCP(s string) (Remote, error) {
	head := s
	if i := strings.IndexByte(s, '/'); i >= 0 {
		head = s[:i]
	}
	// User information ends at the last '@' before the first '/': a
	// password may itself hold ':' or '@'.
	if i := strings.LastIndexByte(head, '@'); i >= 0 {
		s = s[i+1:]
		head = head[i+1:]
	}
	var host, path string
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]:")
		if end < 0 {
			return refuse("is not a git remote URL; " + remoteForms)
		}
		host, path = s[:end+1], s[end+2:]
	} else {
		i := strings.IndexByte(head, ':')
		if i < 0 {
			return local(s)
		}
		host, path = s[:i], s[i+1:]
	}
	h, err := hostPort(host, false)
	if err != nil {
		return Remote{}, err
	}
	return fromPath(h, path)
}

// hostPort checks host[:port] (a port only when withPort) and returns the
// host in lower case, an IPv6 address in brackets.
func hostPort(s string, withPort bool) (string, error) {
	if s == "" {
		return "", &RemoteError{Reason: "has no host; " + remoteForms}
	}
	host, port := s, ""
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", &RemoteError{Reason: "has an unclosed [ in its host"}
		}
		host, port = s[:end+1], s[end+1:]
		if port != "" && port[0] != ':' {
			return "", &RemoteError{Reason: "has text after its IPv6 host"}
		}
		ip, err := netip.ParseAddr(host[1 : len(host)-1])
		if err != nil || !ip.Is6() || ip.Zone() != "" {
			return "", &RemoteError{Reason: "has an invalid IPv6 host"}
		}
		host = "[" + ip.String() + "]"
	} else {
		if i := strings.LastIndexByte(s, ':'); i >= 0 {
			host, port = s[:i], s[i:]
		}
		host = ASCIILower(host)
		if !hostName(host) {
			return "", &RemoteError{Reason: "has an invalid host name (letters, digits, '-' and '.')"}
		}
	}
	if port != "" {
		if !withPort {
			return "", &RemoteError{Reason: "has an invalid host"}
		}
		p := port[1:]
		if p == "" || len(p) > 5 || strings.Trim(p, "0123456789") != "" {
			return "", &RemoteError{Reason: "has an invalid port"}
		}
	}
	return host, nil
}

// hostName reports whether h is a DNS name: dot-separated labels of a-z,
// 0-9 and '-', not starting or ending with '-'.
func hostName(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// fromPath reads owner/repo[.git][/] (leading slashes allowed) on host.
func fromPath(host, path string) (Remote, error) {
	path = strings.TrimLeft(path, "/")
	path = strings.TrimRight(path, "/")
	path = strings.TrimSuffix(path, ".git")
	parts := strings.Split(path, "/")
	if path == "" {
		return refuse("must name owner/repository after the host; " + remoteForms)
	}
	if len(parts) != 2 {
		return refuse("must name exactly owner/repository after the host, not %d path segments", len(parts))
	}
	owner, repo := ASCIILower(parts[0]), ASCIILower(parts[1])
	if err := ValidateSegment(owner); err != nil {
		return refuse("the owner may hold only a-z, 0-9, '.', '_' and '-' and must not be empty or only dots")
	}
	if err := ValidateSegment(repo); err != nil {
		return refuse("the repository name may hold only a-z, 0-9, '.', '_' and '-' and must not be empty or only dots")
	}
	r := Remote{Host: host, Owner: owner, Repo: repo, Path: parts[0] + "/" + parts[1]}
	if n := len(r.Namespace("github")); n > MaxLen {
		return refuse("owner and repository make a %d-character namespace; at most %d", n, MaxLen)
	}
	return r, nil
}

// local refuses a path on disk, suggesting local/<its last segment> when
// that makes a valid namespace.
func local(path string) (Remote, error) {
	path = strings.TrimRight(path, "/")
	path = strings.TrimSuffix(path, "/.git")
	path = strings.TrimSuffix(path, ".git")
	name := ASCIILower(path[strings.LastIndexByte(path, '/')+1:])
	suggest := "local/<name>"
	if Validate("local/"+name) == nil {
		suggest = "local/" + name
	}
	return Remote{}, &RemoteError{Reason: "is a path on disk, not a forge remote", Local: suggest}
}

// schemeOK reports whether s reads as a URL scheme, and so may be echoed.
func schemeOK(s string) bool {
	if s == "" || len(s) > 16 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// ASCIILower lower-cases ASCII letters only, so that no other character
// folds into the a-z a namespace allows (the Kelvin sign into k).
func ASCIILower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}
