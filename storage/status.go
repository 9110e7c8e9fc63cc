package storage

import (
	"context"
	"database/sql"
	"strings"
)

// Status is a summary of the store for memory_status and the page.
type Status struct {
	Counts     []Count          // records by type and status, every status included
	Namespaces []NamespaceCount // records that are not deleted, per namespace
}

// Count is the number of records of one type in one status.
type Count struct {
	Type   string
	Status string
	N      int
}

// NamespaceCount is the number of records not deleted in one namespace.
type NamespaceCount struct {
	Namespace string
	Records   int
}

// Status counts records by type and status (sorted by type, then status) and
// by namespace (sorted by name).
func (db *DB) Status(ctx context.Context) (*Status, error) {
	var st *Status
	err := db.read(ctx, "status", func(tx *txn) (err error) {
		st, err = statusTx(ctx, tx)
		return err
	})
	return st, err
}

// statusTx counts what Status reports, from record_counts (migration 0009),
// which triggers keep in step with records.
func statusTx(ctx context.Context, tx *txn) (*Status, error) {
	var st Status
	rows, err := tx.QueryContext(ctx, `
		SELECT type, status, SUM(n) FROM record_counts GROUP BY type, status ORDER BY type, status`)
	if err != nil {
		return nil, classify("status", err)
	}
	defer rows.Close()
	for rows.Next() {
		var c Count
		if err := rows.Scan(&c.Type, &c.Status, &c.N); err != nil {
			return nil, classify("status", err)
		}
		st.Counts = append(st.Counts, c)
	}
	if err := rows.Err(); err != nil {
		return nil, classify("status", err)
	}

	rows, err = tx.QueryContext(ctx, `
		SELECT namespace, SUM(n) FROM record_counts WHERE status <> 'deleted'
		GROUP BY namespace ORDER BY namespace`)
	if err != nil {
		return nil, classify("status", err)
	}
	defer rows.Close()
	for rows.Next() {
		var n NamespaceCount
		if err := rows.Scan(&n.Namespace, &n.Records); err != nil {
			return nil, classify("status", err)
		}
		st.Namespaces = append(st.Namespaces, n)
	}
	if err := rows.Err(); err != nil {
		return nil, classify("status", err)
	}
	return &st, nil
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

// SetClientTokenHash stores (or replaces) the SHA-256 of client's token, given
// as 64 hex digits and kept lower-case. The caller audits the rotation.
//
// It returns Invalid for an empty client (Field "client") or a hash that is
// not 64 hex digits (Field "token_sha256").
func (db *DB) SetClientTokenHash(ctx context.Context, client, hash string) error {
	if client == "" {
		return errorf(Invalid, "client", "is required")
	}
	hash = strings.ToLower(hash)
	if !isHex64(hash) {
		return errorf(Invalid, "token_sha256", "must be 64 hex digits")
	}
	return db.write(ctx, "set client token", func(tx *txn) error {
		if _, err := tx.ExecContext(ctx, `
			INSERT INTO client_tokens (client, token_sha256, updated_at) VALUES (?, ?, ?)
			ON CONFLICT (client) DO UPDATE SET
				token_sha256 = excluded.token_sha256, updated_at = excluded.updated_at`,
			client, hash, tx.now.UnixMilli(),
		); err != nil {
			return classify("set client token", err)
		}
		return nil
	})
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
