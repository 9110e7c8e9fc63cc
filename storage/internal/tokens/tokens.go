// Package tokens keeps the clients' generated tokens below the record
// domain (docs/design.md, "Storage layout"): the SHA-256 of each client's
// token, never the token, with when it was last set. It works inside the
// engine's transactions (*engine.Tx); the audit row a token's generation
// or rotation writes is the storage package's, in the same transaction.
// Its refusals are *errs.Error.
package tokens

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/hearth-memory/hearth/storage/internal/engine"
	"github.com/hearth-memory/hearth/storage/internal/errs"
)

// Token is a stored generated token: its client, the SHA-256 (hex) of the
// token and when it was last set.
type Token struct {
	Client    string
	SHA256    string
	UpdatedAt time.Time
}

// Check returns hash in lower case, or Invalid for an empty client (Field
// "client") or a hash that is not 64 hex digits (Field "token_sha256").
func Check(client, hash string) (string, error) {
	hash = strings.ToLower(hash)
	switch {
	case client == "":
		return "", errs.Errorf(errs.Invalid, "client", "is required")
	case !isHex64(hash):
		return "", errs.Errorf(errs.Invalid, "token_sha256", "must be 64 hex digits")
	}
	return hash, nil
}

// Store stores (or replaces) hash, as Check returned it, as client's.
func Store(ctx context.Context, tx *engine.Tx, client, hash string) error {
	_, err := tx.ExecContext(ctx, `
		INSERT INTO client_tokens (client, token_sha256, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (client) DO UPDATE SET
			token_sha256 = excluded.token_sha256, updated_at = excluded.updated_at`,
		client, hash, tx.Now.UnixMilli(),
	)
	return errs.Wrap("store client token", err)
}

// Querier runs a query: a transaction (*engine.Tx) or, for ListQuery, a
// pool (*sql.DB) when one statement outside a transaction will do.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// ListQuery is List's one statement. It takes no parameter, so its text
// is the same in SQLite's dialect and PostgreSQL's: it runs unrebound on
// either engine's pool.
const ListQuery = `SELECT client, token_sha256, updated_at FROM client_tokens ORDER BY client`

// List returns the stored tokens, by client name, in one statement on q.
func List(ctx context.Context, q Querier) ([]Token, error) {
	rows, err := q.QueryContext(ctx, ListQuery)
	if err != nil {
		return nil, errs.Wrap("client tokens", err)
	}
	defer rows.Close()
	var list []Token
	for rows.Next() {
		var (
			c  Token
			at int64
		)
		if err := rows.Scan(&c.Client, &c.SHA256, &at); err != nil {
			return nil, errs.Wrap("client tokens", err)
		}
		c.UpdatedAt = time.UnixMilli(at).UTC()
		list = append(list, c)
	}
	return list, errs.Wrap("client tokens", rows.Err())
}

// Hash returns the stored SHA-256 (lower-case hex) of client's token; ok
// is false when none is stored.
func Hash(ctx context.Context, tx *engine.Tx, client string) (hash string, ok bool, err error) {
	err = tx.QueryRowContext(ctx, `SELECT token_sha256 FROM client_tokens WHERE client = ?`, client).Scan(&hash)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", false, nil
	case err != nil:
		return "", false, errs.Wrap("client token", err)
	}
	return hash, true, nil
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
