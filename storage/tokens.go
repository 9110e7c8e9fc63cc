package storage

import (
	"context"

	"github.com/hearth-memory/hearth/storage/internal/tokens"
	"github.com/hearth-memory/hearth/storage/screen"
)

// ClientToken is a stored generated token: its client, the SHA-256 (hex)
// of the token and when it was last set (package tokens).
type ClientToken = tokens.Token

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
	hash, err := tokens.Check(client, hash)
	switch {
	case err != nil:
		return lift(err)
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
		if err := tokens.Store(ctx, tx, client, hash); err != nil {
			return lift(err)
		}
		return insertAuditTx(ctx, tx, AuditEntry{
			Client: by, Action: action, Detail: screen.Redact(detail),
		})
	})
}

// ClientTokens lists the stored generated tokens, by client name.
func (db *DB) ClientTokens(ctx context.Context) ([]ClientToken, error) {
	var out []ClientToken
	err := db.read(ctx, "client tokens", func(tx *txn) (err error) {
		out, err = tokens.List(ctx, tx)
		return lift(err)
	})
	return out, err
}

// ClientTokenHash returns the stored SHA-256 (lower-case hex) of client's
// generated token; ok is false when none is stored.
func (db *DB) ClientTokenHash(ctx context.Context, client string) (hash string, ok bool, err error) {
	err = db.read(ctx, "client token", func(tx *txn) (err error) {
		hash, ok, err = tokens.Hash(ctx, tx, client)
		return lift(err)
	})
	if err != nil || !ok {
		return "", false, err
	}
	return hash, true, nil
}
