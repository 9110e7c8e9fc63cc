package storage

import (
	"context"
	"sync"
	"sync/atomic"

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
// The row never carries the token or its hash. ActionTokenGenerate stores
// a client's first digest only: when one is stored already (another front
// end generated it first) it returns Exists (Field "client"), changing
// nothing.
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
	return db.tokens.write(func() error {
		return db.writeGrouped(ctx, opStoreClientToken, func(tx *txn) error {
			store := tokens.Store
			if action == ActionTokenGenerate {
				store = tokens.StoreNew
			}
			if err := store(ctx, tx, client, hash); err != nil {
				return lift(err)
			}
			return insertAuditTx(ctx, tx, AuditEntry{
				Client: by, Action: action, Detail: screen.Redact(detail),
			})
		})
	})
}

// ClientTokens lists the stored generated tokens, by client name, as the
// database holds them now: every front end's interceptor reads them on
// each call with a token (docs/operations.md, "Tokens"), so that a
// rotation committed through any front end counts on all of them from the
// next call. The caller must not change the list.
//
// On PostgreSQL another front end may write them at any moment, so each
// call reads them: one statement outside a transaction, one round trip. On
// SQLite this process holds the file's lock and is the only writer, so
// the list read after the last token write answers until the next one
// (tokenCache).
func (db *DB) ClientTokens(ctx context.Context) ([]ClientToken, error) {
	if db.lite == nil {
		out, err := tokens.List(ctx, db.pg.DB())
		return out, lift(err)
	}
	return db.tokens.get(func() ([]ClientToken, error) {
		out, err := tokens.List(ctx, db.lite.Reader())
		return out, lift(err)
	})
}

// tokenCache keeps the stored tokens read while no token write ran, valid
// until one starts: a seqlock over StoreClientToken. A writer bumps gen
// before and after its transaction and counts itself in writing meanwhile;
// a read that met a write, or a gen that moved, is not kept, and while a
// write runs every reader reads the table. So no read that starts after a
// write committed gets the list from before it.
type tokenCache struct {
	writing atomic.Int64
	gen     atomic.Uint64

	mu   sync.Mutex
	at   uint64 // the gen list was read in
	list []ClientToken
	ok   bool
}

// get returns the kept list, or read's, keeping it when no write ran.
func (c *tokenCache) get(read func() ([]ClientToken, error)) ([]ClientToken, error) {
	g := c.gen.Load()
	if c.writing.Load() == 0 {
		c.mu.Lock()
		list, ok := c.list, c.ok && c.at == g
		c.mu.Unlock()
		if ok {
			return list, nil
		}
	}
	list, err := read()
	if err == nil && c.writing.Load() == 0 && c.gen.Load() == g {
		c.mu.Lock()
		c.at, c.list, c.ok = g, list, true
		c.mu.Unlock()
	}
	return list, err
}

// write runs a token write, making the kept list stale from before it
// starts until after it ends.
func (c *tokenCache) write(fn func() error) error {
	c.writing.Add(1)
	c.gen.Add(1)
	defer func() {
		c.gen.Add(1)
		c.writing.Add(-1)
	}()
	return fn()
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
