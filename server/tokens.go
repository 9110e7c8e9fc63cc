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

	"github.com/hearth-memory/hearth/server/auth"
	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/fileio"
)

// TokenPrefix starts every token Hearth generates, so a leaked one is easy
// to recognise (and the screen refuses it as a secret).
const TokenPrefix = "hearth_"

// Provisioned is the outcome of ProvisionTokens.
type Provisioned struct {
	Clients []auth.Client
	// Generated names the clients whose tokens were made on this start.
	Generated []string
	// Dir is where generated tokens are written, one file per client.
	Dir string
}

// ProvisionTokens turns configured clients into auth clients. A client with
// token_sha256 uses that digest; a client with only an ip is an address
// client; any other client gets a generated token: 32 random bytes, stored
// as its SHA-256 digest in the database and written once, in plain text, to
// dir/<client> (mode 0600) for the admin, with an audit row
// "token.generate". A token generated on an earlier start is kept, and its
// file decides when it disagrees with the stored digest (generatedToken).
// Tokens are never logged.
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
			sum, generated, err := generatedToken(ctx, db, c.Name, dir)
			if err != nil {
				return nil, fmt.Errorf("client %s: %w", c.Name, err)
			}
			ac.TokenSHA256 = sum
			if generated {
				p.Generated = append(p.Generated, c.Name)
			}
		}
		p.Clients = append(p.Clients, ac)
	}
	return p, nil
}

// generatedToken returns the digest of client name's generated token. The
// token file is the admin's copy and decides: a file whose token differs
// from the stored digest (a database restored from a backup older than a
// rotation, or a rotation cut short between the file and the database)
// has its digest stored; a file without a stored digest (a client added
// after the backup) is kept and its digest stored; only a client with
// neither gets a new token. Each change is audited.
func generatedToken(ctx context.Context, db *storage.DB, name, dir string) ([]byte, bool, error) {
	hash, stored, err := db.ClientTokenHash(ctx, name)
	if err != nil {
		return nil, false, err
	}
	if token, ok := readTokenFile(filepath.Join(dir, name)); ok {
		sum := sha256.Sum256([]byte(token))
		file := hex.EncodeToString(sum[:])
		switch {
		case stored && file == hash:
			return sum[:], false, nil
		case stored:
			err = db.StoreClientToken(ctx, name, file, storage.ActionTokenRotate, storage.SystemClient,
				"the token file differs from the stored digest; the file's token is kept")
		default:
			err = db.StoreClientToken(ctx, name, file, storage.ActionTokenGenerate, storage.SystemClient,
				"taken from the existing token file")
		}
		return sum[:], false, err
	}
	if stored {
		// The file is gone; the token stays valid for whoever holds it
		// until the admin rotates it.
		sum, err := hex.DecodeString(hash)
		return sum, false, err
	}
	token, err := NewToken()
	if err != nil {
		return nil, false, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, false, err
	}
	// Write the file first: a token whose digest is stored but whose text was
	// lost would lock the client out.
	if err := writeTokenFile(filepath.Join(dir, name), token); err != nil {
		return nil, false, err
	}
	sum := sha256.Sum256([]byte(token))
	if err := db.StoreClientToken(ctx, name, hex.EncodeToString(sum[:]), storage.ActionTokenGenerate, storage.SystemClient, ""); err != nil {
		return nil, false, err
	}
	return sum[:], true, nil
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
