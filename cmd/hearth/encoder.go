package main

import (
	"context"
	"fmt"

	"github.com/hearth-memory/hearth/server/encoder"
	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/server/retrieval"
	"github.com/hearth-memory/hearth/server/workers"
	"github.com/hearth-memory/hearth/storage"
)

// openEncoder makes the encoder of embed_url and the in-memory vector index
// it ranks over; both nil when embed_url is unset (full-text search only).
func (d *Daemon) openEncoder() (*encoder.Encoder, *retrieval.Index, error) {
	if d.Config.Options.EmbedURL == "" {
		return nil, nil, nil
	}
	enc, err := encoder.New(encoder.FromOptions(d.Config.Options))
	if err != nil {
		return nil, nil, fmt.Errorf("embed_url: %w", err)
	}
	return enc, retrieval.NewPrefixIndex(d.db, d.Config.Options.EmbedIndexDims), nil
}

// embed_index_dims reaches the longest vector the store takes, no further
// (a compile error when the two part: one difference is negative).
const _ = uint(options.MaxEmbedIndexDims-storage.MaxEmbeddingDim) + uint(storage.MaxEmbeddingDim-options.MaxEmbedIndexDims)

// startEmbedder starts the worker that keeps vectors current, kicked by the
// job runner's poll (docs/design.md R-M10); call it before the runner starts.
// Nothing without an encoder.
func (d *Daemon) startEmbedder(ctx context.Context, enc *encoder.Encoder, index *retrieval.Index) {
	if enc == nil {
		return
	}
	d.embedder = workers.NewEmbedder(workers.EmbedderConfig{DB: d.db, Encoder: enc, Index: index, Log: d.Log})
	d.workers.OnPoll(d.embedder.Kick)
	d.embedder.Start(ctx)
}
