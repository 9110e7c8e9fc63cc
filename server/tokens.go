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

	"github.com/hearth-memory/hearth/server/auth"
	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/storage"
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
// dir/<client> (mode 0600) for the admin. A token generated on an earlier
// start is kept. Tokens are never logged.
func ProvisionTokens(ctx context.Context, db *storage.DB, clients []options.Client, dir string) (*Provisioned, error) {
	p := &Provisioned{Dir: dir}
	for _, c := range clients {
		ac := auth.Client{Name: c.Name, IP: c.IP}
		for _, s := range c.Scopes {
			ac.Scopes = append(ac.Scopes, auth.Scope(s))
		}
		switch {
		case c.TokenSHA256 != "":
			sum, err := hex.DecodeString(c.TokenSHA256)
			if err != nil {
				return nil, fmt.Errorf("client %s: token_sha256: %w", c.Name, err)
			}
			ac.TokenSHA256 = sum
		case c.IP.IsValid():
			// An address client: no token.
		default:
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

func generatedToken(ctx context.Context, db *storage.DB, name, dir string) ([]byte, bool, error) {
	hash, ok, err := db.ClientTokenHash(ctx, name)
	if err != nil {
		return nil, false, err
	}
	if ok {
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
	if err := db.SetClientTokenHash(ctx, name, hex.EncodeToString(sum[:])); err != nil {
		return nil, false, err
	}
	return sum[:], true, nil
}

// NewToken returns a fresh token: the prefix and 32 random bytes, base64url.
func NewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return TokenPrefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

func writeTokenFile(path, token string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(token+"\n"), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
