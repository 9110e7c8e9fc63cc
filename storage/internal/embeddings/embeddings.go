// Package embeddings keeps the records' vectors (docs/design.md R-M9,
// "Storage layout"): a vector per live record, keyed by the digest its
// maker computed, and the change feed by which a copy of the vectors
// outside the store keeps in step. Making the vectors and searching them
// is the server's.
//
// It works inside the engine's transactions (*engine.Tx). Its refusals
// are *errs.Error.
package embeddings

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"math"

	"github.com/hearth-memory/hearth/storage/internal/engine"
	"github.com/hearth-memory/hearth/storage/internal/errs"
)

// Embedding is a record's stored vector. Digest keys it to the model, the
// model snapshot and the text it was made from; the caller computes it,
// storage only keeps it.
type Embedding struct {
	RecordID, Digest, Model, Snapshot string
	// Vector has unit length; it is kept as little-endian float32.
	Vector []float32
}

// MaxDim bounds a stored vector's dimension.
const MaxDim = 8192

// Encode returns the stored form of each embedding's vector. It returns
// Invalid (Field "vector") for an empty vector, one longer than MaxDim or
// one holding a value that is not finite, and (Field "digest") for an
// empty digest.
func Encode(es []Embedding) ([][]byte, error) {
	blobs := make([][]byte, len(es))
	for i, e := range es {
		if e.Digest == "" {
			return nil, errs.Errorf(errs.Invalid, "digest", "is required")
		}
		b, err := encodeVector(e.Vector)
		if err != nil {
			return nil, err
		}
		blobs[i] = b
	}
	return blobs, nil
}

// Put stores es with their vectors encoded (Encode's blobs), each
// replacing any earlier vector of its record. A vector for a record that
// is no longer live (forgotten or purged while it was embedded) is not
// stored. It returns how many were stored.
func Put(ctx context.Context, tx *engine.Tx, es []Embedding, blobs [][]byte) (int, error) {
	n := 0
	for i, e := range es {
		res, err := tx.ExecContext(ctx, sqlPut, e.RecordID, e.Digest, e.Model, e.Snapshot, blobs[i], tx.Now.UnixMilli())
		if err != nil {
			return 0, errs.Wrap("put embeddings", err)
		}
		k, _ := res.RowsAffected() // the driver always knows it
		n += int(k)
	}
	return n, nil
}

// Get returns the stored vectors of the records ids names, by record id;
// a record without a vector is absent.
func Get(ctx context.Context, tx *engine.Tx, ids []string) (map[string]Embedding, error) {
	out := make(map[string]Embedding, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	list, _ := json.Marshal(ids) // a []string always marshals
	rows, err := tx.QueryContext(ctx, sqlGet, string(list))
	if err != nil {
		return nil, errs.Wrap("embeddings", err)
	}
	defer rows.Close()
	for rows.Next() {
		var e Embedding
		var blob []byte
		if err := rows.Scan(&e.RecordID, &e.Digest, &e.Model, &e.Snapshot, &blob); err != nil {
			return nil, errs.Wrap("embeddings", err)
		}
		e.Vector = decodeVector(blob)
		out[e.RecordID] = e
	}
	return out, errs.Wrap("embeddings", rows.Err())
}

// Change is one entry of the vector change feed: a record as it now
// stands, with its vector's key, or the news that it is gone.
type Change struct {
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

// Changes reads the change feed above version since, oldest first,
// calling fn for each entry, and returns the version it read up to (since
// when nothing changed). withVectors reads each vector too. An fn error
// stops the read and is returned.
//
// Every change that matters to vector search (a record created, its text,
// status, namespace or type changed, the record purged, its vector put or
// dropped) moves the record to the feed's end, in the transaction that
// made it: the schema's triggers see to it.
func Changes(ctx context.Context, tx *engine.Tx, since int64, withVectors bool, fn func(Change) error) (int64, error) {
	top, err := Version(ctx, tx)
	if err != nil || top <= since {
		return since, err
	}
	query := sqlChanges
	if withVectors {
		query = sqlChangesWithVectors
	}
	rows, err := tx.QueryContext(ctx, query, since)
	if err != nil {
		return since, errs.Wrap("vector changes", err)
	}
	defer rows.Close()
	upTo := since
	for rows.Next() {
		var c Change
		var blob []byte
		if err := rows.Scan(&c.Seq, &c.Version, &c.Gone, &c.ID, &c.Namespace, &c.Type, &c.Status,
			&c.Title, &c.Content, &c.Digest, &c.Model, &c.Snapshot, &blob); err != nil {
			return since, errs.Wrap("vector changes", err)
		}
		if blob != nil {
			c.Vector = decodeVector(blob)
		}
		if err := fn(c); err != nil {
			return since, err
		}
		upTo = c.Version
	}
	if err := rows.Err(); err != nil {
		return since, errs.Wrap("vector changes", err)
	}
	return upTo, nil
}

// Version returns the change feed's latest version, 0 when it is empty.
func Version(ctx context.Context, tx *engine.Tx) (int64, error) {
	var v sql.NullInt64
	if err := tx.QueryRowContext(ctx, sqlVersion).Scan(&v); err != nil {
		return 0, errs.Wrap("vector version", err)
	}
	return v.Int64, nil
}

func encodeVector(v []float32) ([]byte, error) {
	if len(v) == 0 || len(v) > MaxDim {
		return nil, errs.Errorf(errs.Invalid, "vector", "has %d values; want 1 to %d", len(v), MaxDim)
	}
	b := make([]byte, 4*len(v))
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, errs.Errorf(errs.Invalid, "vector", "value %d is not finite", i)
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
