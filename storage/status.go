package storage

import (
	"context"
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

// statusTx reads what Status reports from type_status_counts and
// namespace_counts (migration 0073), which triggers keep in step with
// record_counts and so with records: a row per line of the answer, in the
// order of their keys.
func statusTx(ctx context.Context, tx *txn) (*Status, error) {
	var st Status
	rows, err := tx.QueryContext(ctx, `
		SELECT type, status, n FROM type_status_counts WHERE n > 0 ORDER BY type, status`)
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
		SELECT namespace, n FROM namespace_counts WHERE n > 0 ORDER BY namespace`)
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
