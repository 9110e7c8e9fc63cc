// Package anchor is Hearth's anchor vocabulary (docs/design.md §11): the one parser of
// the things a record depends on — entity:<entity_id>, path:<relative path>,
// host:<name> and url:<url> — and their kinds.
//
// Parse is strict and never rewrites: it accepts an anchor only in the form
// it is stored and compared in (lower-case kind, a clean relative path, a
// lower-case host name), so an accepted anchor's String is exactly the input
// and two spellings of one thing cannot both be stored. Its errors are fixed
// texts that say what is wrong without repeating the value (a caller's
// value may be a secret); callers prefix the field.
//
// Parse judges form only. Whether a url: anchor carries credentials is the
// screen's call (screen.Anchor, docs/design.md R-S3), so that rule lives in one place.
package anchor

import (
	"net/netip"
	"net/url"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Kind is what an anchor points at: the text before its first colon.
type Kind string

// The anchor kinds.
const (
	// Entity is a Home Assistant entity, checked by the sweep.
	Entity Kind = "entity"
	// Path is a path relative to the record's repository checkout.
	Path Kind = "path"
	// Host is a host name or IP address on the LAN.
	Host Kind = "host"
	// URL is an absolute URL with a host.
	URL Kind = "url"
)

// Kinds lists every kind, in the order documentation names them.
var Kinds = []Kind{Entity, Path, Host, URL}

// Limits of the things anchors name.
const (
	// MaxEntityID is Home Assistant's limit on an entity id
	// (MAX_LENGTH_STATE_ENTITY_ID).
	MaxEntityID = 255
	// MaxHostName is the longest DNS name (RFC 1035), in bytes.
	MaxHostName = 253
	maxLabel    = 63
)

// Anchor is a parsed anchor. The zero Anchor is not valid.
type Anchor struct {
	kind  Kind
	value string
}

// Kind returns the anchor's kind.
func (a Anchor) Kind() Kind { return a.kind }

// Value returns what follows the kind: the entity id, path, host or URL.
func (a Anchor) Value() string { return a.value }

// String returns the anchor as stored: kind, a colon, the value.
func (a Anchor) String() string {
	if a.kind == "" {
		return ""
	}
	return string(a.kind) + ":" + a.value
}

// Error is why Parse refused an anchor: one of a fixed set of texts, so it
// never carries the anchor.
type Error struct{ msg string }

func (e *Error) Error() string { return e.msg }

// Parse's refusals.
var (
	errUTF8       = &Error{"is not valid UTF-8"}
	errSpace      = &Error{"must not contain spaces or control characters"}
	errForm       = &Error{"must be entity:<entity_id>, path:<relative path>, host:<name> or url:<url>"}
	errKindCase   = &Error{"kind must be written in lower case (entity:, path:, host: or url:)"}
	errEmpty      = &Error{"names nothing after the kind"}
	errEntityLong = &Error{"entity id is longer than 255 characters"}
	errEntityForm = &Error{"entity id must be <domain>.<object_id> of lower-case letters, digits and '_', such as binary_sensor.garage_door"}
	errEntityEdge = &Error{"entity id parts must not start or end with '_'"}
	errEntityDup  = &Error{"entity id must not contain '__'"}
	errPathAbs    = &Error{"path must be relative to the repository root, not absolute"}
	errPathSlash  = &Error{"path must use forward slashes"}
	errPathUp     = &Error{"path must stay inside the repository (no ..)"}
	errPathHome   = &Error{"path must be relative to the repository root (no ~)"}
	errPathDrive  = &Error{"path must be relative to the repository root (no drive letter)"}
	errPathClean  = &Error{"path must be clean: no ./ or // and no trailing /"}
	errHostZone   = &Error{"host address must not carry a zone"}
	errHostAddr   = &Error{"host address must be in its shortest form, such as 192.168.1.10 or 2001:db8::1"}
	errHostPort   = &Error{"host must be a host name or an IP address, without a port"}
	errHostLong   = &Error{"host name is longer than 253 characters"}
	errHostCase   = &Error{"host name must be written in lower case"}
	errHostForm   = &Error{"host must be a host name (letters, digits, '-' and '.') or an IP address"}
	errURLParse   = &Error{"url does not parse as a URL"}
	errURLAbs     = &Error{"url must be absolute, such as url:https://host/path"}
	errURLCase    = &Error{"url scheme must be written in lower case"}
	errURLHost    = &Error{"url must name a host, such as url:https://host/path"}
)

// Parse parses s, returning an *Error when s is not an anchor in its stored
// form.
func Parse(s string) (Anchor, error) {
	if !utf8.ValidString(s) {
		return Anchor{}, errUTF8
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return Anchor{}, errSpace
		}
	}
	k, v, ok := strings.Cut(s, ":")
	if !ok {
		return Anchor{}, errForm
	}
	kind := Kind(k)
	var check func(string) *Error
	switch kind {
	case Entity:
		check = checkEntity
	case Path:
		check = checkPath
	case Host:
		check = checkHost
	case URL:
		check = checkURL
	default:
		for _, known := range Kinds {
			if strings.EqualFold(k, string(known)) {
				return Anchor{}, errKindCase
			}
		}
		return Anchor{}, errForm
	}
	if v == "" {
		return Anchor{}, errEmpty
	}
	if err := check(v); err != nil {
		return Anchor{}, err
	}
	return Anchor{kind: kind, value: v}, nil
}

// checkEntity holds an entity id to Home Assistant's rule
// (homeassistant.core.valid_entity_id): <domain>.<object_id>, each of
// a-z, 0-9 and '_', neither starting nor ending with '_', and no "__".
func checkEntity(id string) *Error {
	if len(id) > MaxEntityID {
		return errEntityLong
	}
	domain, object, ok := strings.Cut(id, ".")
	if !ok || domain == "" || object == "" {
		return errEntityForm
	}
	for _, part := range []string{domain, object} {
		for i := 0; i < len(part); i++ {
			c := part[i]
			if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
				return errEntityForm
			}
		}
		if part[0] == '_' || part[len(part)-1] == '_' {
			return errEntityEdge
		}
	}
	if strings.Contains(id, "__") {
		return errEntityDup
	}
	return nil
}

// checkPath holds a path to what a client can resolve under a repository's
// root and nowhere else: relative, forward slashes, clean (path.Clean leaves
// it as it is: no ./, //, trailing / or ..), not the root itself and not
// starting with ~ or a drive letter.
func checkPath(p string) *Error {
	switch {
	case strings.HasPrefix(p, "/"):
		return errPathAbs
	case strings.Contains(p, `\`):
		return errPathSlash
	case p == "." || p == ".." || strings.HasPrefix(p, "../") || strings.Contains(p, "/../") || strings.HasSuffix(p, "/.."):
		return errPathUp
	case strings.HasPrefix(p, "~"):
		return errPathHome
	case len(p) >= 2 && p[1] == ':' && isLetter(p[0]):
		return errPathDrive
	case path.Clean(p) != p:
		return errPathClean
	}
	return nil
}

// checkHost accepts a host name (RFC 1123 labels, lower case, no trailing
// dot) or an IP address in its canonical form.
func checkHost(h string) *Error {
	if a, err := netip.ParseAddr(h); err == nil {
		switch {
		case a.Zone() != "":
			return errHostZone
		case a.String() != h:
			return errHostAddr
		}
		return nil
	}
	switch {
	case strings.ContainsAny(h, ":[]"):
		return errHostPort
	case len(h) > MaxHostName:
		return errHostLong
	case isHostName(h):
		return nil
	case isHostName(strings.ToLower(h)):
		return errHostCase
	}
	return errHostForm
}

// isHostName reports whether h is a lower-case RFC 1123 host name whose
// last label is not all digits (that would be a malformed address).
func isHostName(h string) bool {
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if l == "" || len(l) > maxLabel || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
				return false
			}
		}
	}
	return strings.Trim(labels[len(labels)-1], "0123456789") != ""
}

// checkURL accepts an absolute URL with a lower-case scheme and a host.
func checkURL(s string) *Error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return errURLParse
	case u.Scheme == "" || u.Opaque != "":
		return errURLAbs
	case !strings.HasPrefix(s, u.Scheme+":"): // url.Parse lower-cases the scheme
		return errURLCase
	case u.Host == "" || u.Hostname() == "":
		return errURLHost
	}
	return nil
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
