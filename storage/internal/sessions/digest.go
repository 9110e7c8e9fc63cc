package sessions

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"

	"github.com/ncruces/go-sqlite3"
)

// digestFunction is hearth_session_digest(key, session), the SQL face of
// Digest: migration 0090 digests the sessions recorded before it with it.
const digestFunction = "hearth_session_digest"

// digestPrefix starts every kept session: it marks the value as a digest,
// never an id.
const digestPrefix = "h1:"

// Digest is what a recorded search keeps of its session (issue 41,
// docs/questions.md): the first 128 bits of HMAC-SHA-256 under the
// database's key, in hex. A caller-chosen session id, which may be a token
// pasted by mistake, is never stored; equal ids still give equal digests,
// so a memory_get in the same session finds the searches it used.
func Digest(key []byte, session string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(session))
	return digestPrefix + hex.EncodeToString(m.Sum(nil)[:16])
}

// RegisterDigest registers hearth_session_digest on the writer's
// connection, for migration 0090.
func RegisterDigest(c *sqlite3.Conn) error {
	return c.CreateFunction(digestFunction, 2, sqlite3.DETERMINISTIC, func(ctx sqlite3.Context, arg ...sqlite3.Value) {
		ctx.ResultText(Digest(arg[0].RawBlob(), arg[1].Text()))
	})
}

// LoadKey reads the database's session digest key (migration 0090).
func LoadKey(ctx context.Context, conn *sql.Conn) ([]byte, error) {
	var key []byte
	err := conn.QueryRowContext(ctx, `SELECT key FROM digest_keys WHERE name = 'session'`).Scan(&key)
	if err == sql.ErrNoRows || err == nil && len(key) < 16 {
		return nil, fmt.Errorf("storage: open: the session digest key is missing")
	}
	if err != nil {
		return nil, fmt.Errorf("storage: open: %w", err)
	}
	return key, nil
}
