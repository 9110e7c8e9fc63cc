package storage

import (
	"context"
	"database/sql"
	"encoding/binary"
	"math"
)

// Embedding is a record's stored vector (docs/design.md R-M9). Digest keys it to the
// model, the model snapshot and the text it was made from; the caller
// computes it, storage only keeps it.
type Embedding struct {
	RecordID, Digest, Model, Snapshot string
	// Vector has unit length; it is kept as little-endian float32.
	Vector []float32
}

// MaxEmbeddingDim bounds a stored vector's dimension.
const MaxEmbeddingDim = 8192

// PutEmbeddings stores vectors in one transaction, each replacing any
// earlier vector of its record. A vector for a record that is no longer
// live (forgotten or purged while it was embedded) is not stored. It
// returns how many were stored.
//
// It returns Invalid (Field "vector") for an empty vector, one longer than
// MaxEmbeddingDim or one holding a value that is not finite, and (Field
// "digest") for an empty digest.
func (db *DB) PutEmbeddings(ctx context.Context, es []Embedding) (int, error) {
	blobs := make([][]byte, len(es))
	for i, e := range es {
		if e.Digest == "" {
			return 0, errorf(Invalid, "digest", "is required")
		}
		b, err := encodeVector(e.Vector)
		if err != nil {
			return 0, err
		}
		blobs[i] = b
	}
	var n int
	err := db.writeGrouped(ctx, opPutEmbeddings, func(tx *txn) error {
		n = 0
		for i, e := range es {
			res, err := tx.ExecContext(ctx, `
				INSERT INTO embeddings (record_id, digest, model, snapshot, vector, embedded_at)
				SELECT id, ?2, ?3, ?4, ?5, ?6 FROM records WHERE id = ?1 AND status IN ('active', 'candidate')
				ON CONFLICT (record_id) DO UPDATE SET digest = excluded.digest, model = excluded.model,
					snapshot = excluded.snapshot, vector = excluded.vector, embedded_at = excluded.embedded_at`,
				e.RecordID, e.Digest, e.Model, e.Snapshot, blobs[i], tx.Now.UnixMilli())
			if err != nil {
				return classify("put embeddings", err)
			}
			n += rowsAffected(res)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// Embeddings returns the stored vectors of the records ids names, by record
// id; a record without a vector is absent.
func (db *DB) Embeddings(ctx context.Context, ids []string) (map[string]Embedding, error) {
	out := make(map[string]Embedding, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	err := db.read(ctx, "embeddings", func(tx *txn) error {
		clear(out)
		rows, err := tx.QueryContext(ctx, `
			SELECT record_id, digest, model, snapshot, vector FROM embeddings
			WHERE record_id IN (SELECT value FROM json_each(?))`, jsonList(ids))
		if err != nil {
			return classify("embeddings", err)
		}
		defer rows.Close()
		for rows.Next() {
			var e Embedding
			var blob []byte
			if err := rows.Scan(&e.RecordID, &e.Digest, &e.Model, &e.Snapshot, &blob); err != nil {
				return classify("embeddings", err)
			}
			e.Vector = decodeVector(blob)
			out[e.RecordID] = e
		}
		return classify("embeddings", rows.Err())
	})
	return out, err
}

// VectorChange is one entry of the vector change feed: a record as it now
// stands, with its vector's key, or the news that it is gone.
type VectorChange struct {
	// Seq is the record's internal key; Version the change's place in the
	// feed.
	Seq, Version int64
	// Gone is set when the record was purged; nothing below is then.
	Gone                                        bool
	ID, Namespace, Type, Status, Title, Content string
	// Digest, Model and Snapshot key the record's vector; all "" when it
	// has none.
	Digest, Model, Snapshot string
	// Vector is the record's vector, when the feed was read with vectors.
	Vector []float32
}

// VectorChanges reads the change feed above version since in one read
// transaction, oldest first, calling fn for each entry, and returns the
// version it read up to (since when nothing changed). withVectors reads
// each vector too. An fn error stops the read and is returned.
//
// The feed is how a copy of the vectors outside the store keeps in step:
// every change that matters to vector search (a record created, its text,
// status, namespace or type changed, the record purged, its vector put or
// dropped) moves the record to the feed's end, in the transaction that
// made it.
func (db *DB) VectorChanges(ctx context.Context, since int64, withVectors bool, fn func(VectorChange) error) (int64, error) {
	upTo := since
	err := db.read(ctx, "vector changes", func(tx *txn) error {
		upTo = since
		var top sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT MAX(version) FROM vector_changes`).Scan(&top); err != nil {
			return classify("vector changes", err)
		}
		if !top.Valid || top.Int64 <= since {
			return nil
		}
		vec := `NULL`
		if withVectors {
			vec = `e.vector`
		}
		rows, err := tx.QueryContext(ctx, `
			SELECT c.record_seq, c.version, r.id IS NULL,
				coalesce(r.id, ''), coalesce(r.namespace, ''), coalesce(r.type, ''), coalesce(r.status, ''),
				coalesce(r.title, ''), coalesce(r.content, ''),
				coalesce(e.digest, ''), coalesce(e.model, ''), coalesce(e.snapshot, ''), `+vec+`
			FROM vector_changes AS c
			LEFT JOIN records AS r ON r.seq = c.record_seq
			LEFT JOIN embeddings AS e ON e.record_id = r.id
			WHERE c.version > ?
			ORDER BY c.version`, since)
		if err != nil {
			return classify("vector changes", err)
		}
		defer rows.Close()
		for rows.Next() {
			var c VectorChange
			var blob []byte
			if err := rows.Scan(&c.Seq, &c.Version, &c.Gone, &c.ID, &c.Namespace, &c.Type, &c.Status,
				&c.Title, &c.Content, &c.Digest, &c.Model, &c.Snapshot, &blob); err != nil {
				return classify("vector changes", err)
			}
			if blob != nil {
				c.Vector = decodeVector(blob)
			}
			if err := fn(c); err != nil {
				return err
			}
			upTo = c.Version
		}
		return classify("vector changes", rows.Err())
	})
	if err != nil {
		return since, err
	}
	return upTo, nil
}

// VectorVersion returns the change feed's latest version.
func (db *DB) VectorVersion(ctx context.Context) (int64, error) {
	var v sql.NullInt64
	err := db.read(ctx, "vector version", func(tx *txn) error {
		return classify("vector version", tx.QueryRowContext(ctx, `SELECT MAX(version) FROM vector_changes`).Scan(&v))
	})
	return v.Int64, err
}

func encodeVector(v []float32) ([]byte, error) {
	if len(v) == 0 || len(v) > MaxEmbeddingDim {
		return nil, errorf(Invalid, "vector", "has %d values; want 1 to %d", len(v), MaxEmbeddingDim)
	}
	b := make([]byte, 4*len(v))
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, errorf(Invalid, "vector", "value %d is not finite", i)
		}
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b, nil
}

func decodeVector(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}
