package storage

import (
	"context"

	"github.com/hearth-memory/hearth/storage/internal/embeddings"
)

// The records' vectors are package embeddings (docs/design.md, "Storage
// layout"); these are its names as the server uses them.
type (
	// Embedding is a record's stored vector (docs/design.md R-M9).
	Embedding = embeddings.Embedding
	// VectorChange is one entry of the vector change feed.
	VectorChange = embeddings.Change
)

// MaxEmbeddingDim bounds a stored vector's dimension.
const MaxEmbeddingDim = embeddings.MaxDim

// PutEmbeddings stores vectors in one transaction (embeddings.Put) and
// returns how many were stored. It returns Invalid for an embedding
// embeddings.Encode refuses.
func (db *DB) PutEmbeddings(ctx context.Context, es []Embedding) (int, error) {
	blobs, err := embeddings.Encode(es)
	if err != nil {
		return 0, lift(err)
	}
	var n int
	if err := db.writeGrouped(ctx, opPutEmbeddings, func(tx *txn) (err error) {
		n, err = embeddings.Put(ctx, tx, es, blobs)
		return err
	}); err != nil {
		return 0, err
	}
	return n, nil
}

// Embeddings returns the stored vectors of the records ids names, by record
// id; a record without a vector is absent.
func (db *DB) Embeddings(ctx context.Context, ids []string) (map[string]Embedding, error) {
	var out map[string]Embedding
	err := db.read(ctx, "embeddings", func(tx *txn) (err error) {
		out, err = embeddings.Get(ctx, tx, ids)
		return err
	})
	if err != nil {
		return map[string]Embedding{}, err
	}
	return out, nil
}

// VectorChanges reads the change feed above version since in one read
// transaction (embeddings.Changes), calling fn for each entry, and returns
// the version it read up to. The feed is how a copy of the vectors outside
// the store keeps in step.
func (db *DB) VectorChanges(ctx context.Context, since int64, withVectors bool, fn func(VectorChange) error) (int64, error) {
	upTo := since
	err := db.read(ctx, "vector changes", func(tx *txn) (err error) {
		upTo, err = embeddings.Changes(ctx, tx, since, withVectors, fn)
		return err
	})
	if err != nil {
		return since, err
	}
	return upTo, nil
}

// VectorVersion returns the change feed's latest version.
func (db *DB) VectorVersion(ctx context.Context) (int64, error) {
	var v int64
	err := db.read(ctx, "vector version", func(tx *txn) (err error) {
		v, err = embeddings.Version(ctx, tx)
		return err
	})
	return v, err
}
