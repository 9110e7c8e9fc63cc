package embeddings

import (
	"errors"
	"math"
	"testing"

	"github.com/hearth-memory/hearth/storage/internal/errs"
)

// TestEncode checks the stored form of a vector (little-endian float32,
// read back as it was) and what is refused before anything is written.
// Storing and reading vectors is tested through storage's DB
// (storage/embeddings_test.go), which both engines run.
func TestEncode(t *testing.T) {
	t.Parallel()
	v := []float32{0.5, -1, float32(math.SmallestNonzeroFloat32), 3e38}
	blobs, err := Encode([]Embedding{{RecordID: "r", Digest: "d", Vector: v}})
	if err != nil {
		t.Fatal(err)
	}
	if len(blobs[0]) != 4*len(v) || blobs[0][3] != 0x3f || blobs[0][7] != 0xbf {
		t.Errorf("stored form % x, want little-endian float32", blobs[0])
	}
	got := decodeVector(blobs[0])
	for i := range v {
		if got[i] != v[i] {
			t.Errorf("value %d read back as %v, want %v", i, got[i], v[i])
		}
	}
	for _, tc := range []struct {
		name  string
		e     Embedding
		field string
	}{
		{"no digest", Embedding{Vector: v}, "digest"},
		{"empty", Embedding{Digest: "d"}, "vector"},
		{"too long", Embedding{Digest: "d", Vector: make([]float32, MaxDim+1)}, "vector"},
		{"NaN", Embedding{Digest: "d", Vector: []float32{1, float32(math.NaN())}}, "vector"},
		{"infinite", Embedding{Digest: "d", Vector: []float32{float32(math.Inf(-1))}}, "vector"},
	} {
		var e *errs.Error
		_, err := Encode([]Embedding{{Digest: "d", Vector: v}, tc.e})
		if !errors.As(err, &e) || e.Code != errs.Invalid || e.Field != tc.field {
			t.Errorf("%s: %v, want Invalid on %s", tc.name, err, tc.field)
		}
	}
	if _, err := Encode([]Embedding{{Digest: "d", Vector: make([]float32, MaxDim)}}); err != nil {
		t.Errorf("a vector of MaxDim values: %v", err)
	}
}
