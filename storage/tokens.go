package storage

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/hearth-memory/hearth/storage/screen"
)

// ClientToken is a stored generated token: its client, the SHA-256 (hex)
// of the token and when it was last set.
type ClientToken struct {
	Client    string
	SHA256    string
	UpdatedAt time.Time
}

// StoreClientToken stores (or replaces) the SHA-256 of client's generated
// token, as 64 hex digits kept lower-case, and appends its audit row in the
// same transaction: action ActionTokenGenerate or ActionTokenRotate, by the
// client that asked (SystemClient at start), with note (if any) saying why.
// The row never carries the token or its hash.
//
// It returns Invalid for an empty client (Field "client"), a hash that is
// not 64 hex digits (Field "token_sha256") or another action (Field
// "action").
func (db *DB) StoreClientToken(ctx context.Context, client, hash string, action Action, by, note string) error {
	hash = strings.ToLower(hash)
	switch {
	case client == "":
		return errorf(Invalid, "client", "is required")
	case !isHex64(hash):
		return errorf(Invalid, "token_sha256", "must be 64 hex digits")
	case action != ActionTokenGenerate && action != ActionTokenRotate:
		return errorf(Invalid, "action", "%q is not a token action", action)
	}
	if by == "" {
		by = SystemClient
	}
	detail := "client " + client
	if note != "" {
		detail += ": " + note
	}
	return db.writeGrouped(ctx, opStoreClientToken, func(tx *txn) error {
		if _, err := tx.ExecContext(ctx, `
			INSERT INTO client_tokens (client, token_sha256, updated_at) VALUES (?, ?, ?)
			ON CONFLICT (client) DO UPDATE SET
				token_sha256 = excluded.token_sha256, updated_at = excluded.updated_at`,
			client, hash, tx.Now.UnixMilli(),
		); err != nil {
			return classify("store client token", err)
		}
		return insertAuditTx(ctx, tx, AuditEntry{
			Client: by, Action: action, Detail: screen.Redact(detail),
		})
	})
}

// ClientTokens lists the stored generated tokens, by client name.
func (db *DB) ClientTokens(ctx context.Context) ([]ClientToken, error) {
	var out []ClientToken
	err := db.read(ctx, "client tokens", func(tx *txn) error {
		rows, err := tx.QueryContext(ctx, `SELECT client, token_sha256, updated_at FROM client_tokens ORDER BY client`)
		if err != nil {
			return classify("client tokens", err)
		}
		defer rows.Close()
		var list []ClientToken
		for rows.Next() {
			var (
				c  ClientToken
				at int64
			)
			if err := rows.Scan(&c.Client, &c.SHA256, &at); err != nil {
				return classify("client tokens", err)
			}
			c.UpdatedAt = time.UnixMilli(at).UTC()
			list = append(list, c)
		}
		out = list
		return classify("client tokens", rows.Err())
	})
	return out, err
}

// ClientTokenHash returns the stored SHA-256 (lower-case hex) of client's
// generated token; ok is false when none is stored.
func (db *DB) ClientTokenHash(ctx context.Context, client string) (hash string, ok bool, err error) {
	err = db.read(ctx, "client token", func(tx *txn) error {
		err := tx.QueryRowContext(ctx, `SELECT token_sha256 FROM client_tokens WHERE client = ?`, client).Scan(&hash)
		if err == sql.ErrNoRows {
			return nil
		} else if err != nil {
			return classify("client token", err)
		}
		ok = true
		return nil
	})
	if err != nil || !ok {
		return "", false, err
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
