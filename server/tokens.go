package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hearth-memory/hearth/server/auth"
	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/fileio"
	"github.com/hearth-memory/hearth/storage/screen"
)

// TokenPrefix starts every token Hearth generates, so a leaked one is easy
// to recognise (and the screen refuses it as a secret).
const TokenPrefix = "hearth_"

// Provisioned is the outcome of ProvisionTokens.
type Provisioned struct {
	Clients []auth.Client
	// Generated names the clients whose tokens were made on this start.
	Generated []string
	// Stale names the clients whose token file this start removed: a
	// token another front end's rotation had replaced (generatedToken).
	Stale []string
	// Dir is where generated tokens are written, one file per client.
	Dir string
}

// ProvisionTokens turns configured clients into auth clients. A client with
// token_sha256 uses that digest; a client with only an ip is an address
// client; any other client gets a generated token: 32 random bytes, stored
// as its SHA-256 digest in the database and written once, in plain text, to
// dir/<client> (mode 0600) for the admin, with an audit row
// "token.generate". A generated client is Stored: the interceptor compares
// its callers with the database's digest of the moment. A token generated
// on an earlier start is kept; when its file disagrees with the stored
// digest, generatedToken says which decides. Tokens are never logged.
func ProvisionTokens(ctx context.Context, db *storage.DB, clients []options.Client, dir string) (*Provisioned, error) {
	p := &Provisioned{Dir: dir}
	for _, c := range clients {
		ac := auth.Client{Name: c.Name, IP: c.IP, Scopes: slices.Clone(c.Scopes)}
		switch c.Kind() {
		case options.KindSupplied:
			sum, err := hex.DecodeString(c.TokenSHA256)
			if err != nil {
				return nil, fmt.Errorf("client %s: token_sha256: %w", c.Name, err)
			}
			ac.TokenSHA256 = sum
		case options.KindAddress:
			// Identified by its ip: no token.
		case options.KindGenerated:
			sum, how, err := generatedToken(ctx, db, c.Name, dir)
			if err != nil {
				return nil, fmt.Errorf("client %s: %w", c.Name, err)
			}
			ac.TokenSHA256, ac.Stored = sum, true
			switch how {
			case tokenGenerated:
				p.Generated = append(p.Generated, c.Name)
			case tokenFileStale:
				p.Stale = append(p.Stale, c.Name)
			}
		}
		p.Clients = append(p.Clients, ac)
	}
	return p, nil
}

// What generatedToken did beyond keeping a token.
const (
	tokenKept = iota
	tokenGenerated
	tokenFileStale
)

// generatedToken returns the digest of client name's generated token. The
// token file is the admin's copy. When it holds the stored digest's token,
// both stand. When it differs:
//   - on SQLite the file decides: the database sits beside it in the same
//     data directory, so a difference comes from a database restored from a
//     backup older than a rotation, or a rotation cut short between the
//     file and the database; the file's digest is stored;
//   - on PostgreSQL, shared by several front ends each with its own files,
//     the more recent decides: a digest stored after the file was last
//     written is another front end's rotation, which the file must not
//     undo, so the stale file is removed and the stored token stands; a
//     file written after the digest was stored (a database restored from an
//     older dump) decides as on SQLite.
//
// A file without a stored digest (a client added after the backup) is kept
// and its digest stored; only a client with neither gets a new token. A
// token is stored as a client's first only if it still has none: when
// another front end starting beside this one stored its own first, this
// one's new token and file go, and the stored token stands. Each change
// is audited, never with the token.
func generatedToken(ctx context.Context, db *storage.DB, name, dir string) ([]byte, int, error) {
	stored, ok, err := storedToken(ctx, db, name)
	if err != nil {
		return nil, tokenKept, err
	}
	path := filepath.Join(dir, name)
	if token, found := readTokenFile(path); found {
		sum := sha256.Sum256([]byte(token))
		file := hex.EncodeToString(sum[:])
		switch {
		case ok && file == stored.SHA256:
			return sum[:], tokenKept, nil
		case ok && db.Backend() == storage.BackendPostgres && storedAfterFile(stored, path):
			return removeStaleTokenFile(ctx, db, name, path, stored)
		case ok:
			err = db.StoreClientToken(ctx, name, file, storage.ActionTokenRotate, storage.SystemClient,
				"the token file differs from the stored digest; the file's token is kept")
		default:
			err = db.StoreClientToken(ctx, name, file, storage.ActionTokenGenerate, storage.SystemClient,
				"taken from the existing token file")
			if storage.ErrorCode(err) == storage.Exists {
				// Another front end stored one meanwhile: settle with it.
				return generatedToken(ctx, db, name, dir)
			}
		}
		return sum[:], tokenKept, err
	}
	if ok {
		// The file is gone; the token stays valid for whoever holds it
		// until the admin rotates it.
		sum, err := hex.DecodeString(stored.SHA256)
		return sum, tokenKept, err
	}
	token, err := NewToken()
	if err != nil {
		return nil, tokenKept, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, tokenKept, err
	}
	// Write the file first: a token whose digest is stored but whose text was
	// lost would lock the client out.
	if err := writeTokenFile(path, token); err != nil {
		return nil, tokenKept, err
	}
	sum := sha256.Sum256([]byte(token))
	err = db.StoreClientToken(ctx, name, hex.EncodeToString(sum[:]), storage.ActionTokenGenerate, storage.SystemClient, "")
	if storage.ErrorCode(err) == storage.Exists {
		// Another front end starting at the same time generated and stored
		// the client's token first: that one stands, and this one, never
		// stored, goes (its admin takes the token from the other's files).
		if err := os.Remove(path); err != nil {
			return nil, tokenKept, err
		}
		return generatedToken(ctx, db, name, dir)
	}
	if err != nil {
		return nil, tokenKept, err
	}
	return sum[:], tokenGenerated, nil
}

// storedToken returns client name's stored token, if the database has one.
func storedToken(ctx context.Context, db *storage.DB, name string) (storage.ClientToken, bool, error) {
	list, err := db.ClientTokens(ctx)
	if err != nil {
		return storage.ClientToken{}, false, err
	}
	for _, t := range list {
		if t.Client == name {
			return t, true, nil
		}
	}
	return storage.ClientToken{}, false, nil
}

// storedAfterFile reports whether t was stored after the token file at
// path was last written. The stored time is the rotating front end's
// clock and the file's this machine's: front ends whose clocks disagree by
// more than the time between a rotation and the file it is compared with
// may be misjudged (docs/operations.md, "Tokens").
func storedAfterFile(t storage.ClientToken, path string) bool {
	fi, err := os.Stat(path)
	return err == nil && t.UpdatedAt.After(fi.ModTime())
}

// removeStaleTokenFile removes the token file at path, which a rotation
// stored after it was written has replaced, and audits it; the stored
// token stands.
func removeStaleTokenFile(ctx context.Context, db *storage.DB, name, path string, stored storage.ClientToken) ([]byte, int, error) {
	sum, err := hex.DecodeString(stored.SHA256)
	if err != nil {
		return nil, tokenKept, err
	}
	if err := os.Remove(path); err != nil {
		return nil, tokenKept, err
	}
	err = db.Audit(ctx, storage.AuditEntry{Client: storage.SystemClient, Action: storage.ActionTokenRotate,
		Detail: screen.Redact("client " + name + ": the token file was older than the digest a rotation stored at " +
			stored.UpdatedAt.Format(time.RFC3339Nano) + " (another front end's); the file is removed and the stored token stands")})
	return sum, tokenFileStale, err
}

// readTokenFile returns the token in a token file, if it holds one.
func readTokenFile(path string) (string, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", false
	}
	t := strings.TrimSpace(string(b))
	return t, t != ""
}

// NewToken returns a fresh token: the prefix and 32 random bytes, base64url.
func NewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return TokenPrefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// writeTokenFile replaces the token file at path atomically (0600).
func writeTokenFile(path, token string) error {
	return fileio.WriteAtomic(path, []byte(token+"\n"), 0o600)
}
