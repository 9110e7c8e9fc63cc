// Package harness measures Hearth's retrieval (docs/design.md R-K7): it loads an
// eval set into a real hearth daemon through the public REST API, runs the
// set's queries under each ranking mode, and reports recall@5, recall@10
// and MRR per mode and per query kind, with wins and losses against
// full-text ranking.
package harness

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Query kinds.
const (
	// KindKeywords is a query that shares its key words with its answer.
	KindKeywords = "keywords"
	// KindParaphrase is a query that says the same thing in other words.
	KindParaphrase = "paraphrase"
	// KindMulti is a query that needs two or more records.
	KindMulti = "multi"
)

// KindNone is a query no record of the set answers (its answers are
// empty): the prompt hook should inject nothing for it.
const KindNone = "none"

// Kinds lists the kinds of answerable query in report order.
var Kinds = []string{KindKeywords, KindParaphrase, KindMulti}

// Files of an eval set directory.
const (
	RecordsFile = "records.jsonl"
	QueriesFile = "queries.jsonl"
	OptionsFile = "options.json"
)

// Record is one memory record of the set, stored with memory_store. Key is
// the set's own name for it (the server assigns the id).
type Record struct {
	Key       string   `json:"key"`
	Namespace string   `json:"namespace"`
	Type      string   `json:"type"`
	Title     string   `json:"title"`
	Content   string   `json:"content"`
	Topics    []string `json:"topics,omitempty"`
	// NearMiss names records this one was written to be confused with:
	// same subject, different answer. Documentation only.
	NearMiss []string `json:"near_miss,omitempty"`
}

// Query is one search of the set: the text, the namespace it is asked
// from, its kind, and the keys of the records that answer it.
type Query struct {
	ID        string   `json:"id"`
	Namespace string   `json:"namespace"`
	Kind      string   `json:"kind"`
	Query     string   `json:"query"`
	Answers   []string `json:"answers"`
}

// Set is an eval set: records, queries, and the daemon options the scope
// chains need (project_links, hubs), written as the daemon's options.json.
type Set struct {
	Records []Record
	Queries []Query
	// Options is the options.json the daemon starts with; nil for defaults.
	Options json.RawMessage
}

// LoadSet reads a set directory: records.jsonl and queries.jsonl (one JSON
// object per line; blank lines and lines starting with # are skipped) and
// an optional options.json. The set must pass Validate.
func LoadSet(dir string) (*Set, error) {
	s := &Set{}
	if err := readLines(filepath.Join(dir, RecordsFile), &s.Records); err != nil {
		return nil, err
	}
	if err := readLines(filepath.Join(dir, QueriesFile), &s.Queries); err != nil {
		return nil, err
	}
	opts, err := os.ReadFile(filepath.Join(dir, OptionsFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, err
	default:
		if !json.Valid(opts) {
			return nil, fmt.Errorf("%s: not valid JSON", OptionsFile)
		}
		s.Options = opts
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

func readLines[T any](path string, out *[]T) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return decodeLines(f, filepath.Base(path), out)
}

// decodeLines reads JSON Lines, each line one object with no unknown fields.
func decodeLines[T any](r io.Reader, name string, out *[]T) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		var v T
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("%s:%d: %w", name, n, err)
		}
		if dec.More() {
			return fmt.Errorf("%s:%d: more than one JSON value on the line", name, n)
		}
		*out = append(*out, v)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// Validate checks the set's own consistency: keys and ids present and
// unique, every record with a namespace, type, title and content, every
// query with a known kind and answers that name records (at least two for
// a multi query, each once). Whether an answer is in the query's scope
// chain is the server's to say; Run checks it through memory_namespace.
func (s *Set) Validate() error {
	if len(s.Records) == 0 {
		return errors.New("records: none")
	}
	if len(s.Queries) == 0 {
		return errors.New("queries: none")
	}
	keys := make(map[string]bool, len(s.Records))
	for i, r := range s.Records {
		at := fmt.Sprintf("records[%d]", i)
		switch {
		case r.Key == "":
			return fmt.Errorf("%s: key is required", at)
		case keys[r.Key]:
			return fmt.Errorf("%s: key %q appears twice", at, r.Key)
		case r.Namespace == "":
			return fmt.Errorf("%s (%s): namespace is required", at, r.Key)
		case r.Type == "":
			return fmt.Errorf("%s (%s): type is required", at, r.Key)
		case strings.TrimSpace(r.Title) == "":
			return fmt.Errorf("%s (%s): title is required", at, r.Key)
		case strings.TrimSpace(r.Content) == "":
			return fmt.Errorf("%s (%s): content is required", at, r.Key)
		}
		keys[r.Key] = true
	}
	for i, r := range s.Records {
		for _, k := range r.NearMiss {
			if !keys[k] || k == r.Key {
				return fmt.Errorf("records[%d] (%s): near_miss %q names no other record", i, r.Key, k)
			}
		}
	}
	ids := make(map[string]bool, len(s.Queries))
	for i, q := range s.Queries {
		at := fmt.Sprintf("queries[%d]", i)
		switch {
		case q.ID == "":
			return fmt.Errorf("%s: id is required", at)
		case ids[q.ID]:
			return fmt.Errorf("%s: id %q appears twice", at, q.ID)
		case q.Namespace == "":
			return fmt.Errorf("%s (%s): namespace is required", at, q.ID)
		case strings.TrimSpace(q.Query) == "":
			return fmt.Errorf("%s (%s): query is required", at, q.ID)
		case q.Kind == KindNone && len(q.Answers) > 0:
			return fmt.Errorf("%s (%s): a none query has no answers", at, q.ID)
		case q.Kind == KindNone:
		case !slices.Contains(Kinds, q.Kind):
			return fmt.Errorf("%s (%s): kind %q is not one of %s or %s", at, q.ID, q.Kind, strings.Join(Kinds, ", "), KindNone)
		case len(q.Answers) == 0:
			return fmt.Errorf("%s (%s): answers: none", at, q.ID)
		case q.Kind == KindMulti && len(q.Answers) < 2:
			return fmt.Errorf("%s (%s): a multi query needs at least 2 answers", at, q.ID)
		}
		ids[q.ID] = true
		seen := map[string]bool{}
		for _, k := range q.Answers {
			if !keys[k] {
				return fmt.Errorf("%s (%s): answer %q names no record", at, q.ID, k)
			}
			if seen[k] {
				return fmt.Errorf("%s (%s): answer %q appears twice", at, q.ID, k)
			}
			seen[k] = true
		}
	}
	return nil
}

// Digest identifies the set's content: the sha256 of its records, queries
// and options in canonical JSON, so results from different sets are never
// compared as if they were the same.
func (s *Set) Digest() string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	enc.Encode(s.Records)
	enc.Encode(s.Queries)
	h.Write(s.Options)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Slice returns a smaller set: up to maxQueries queries taken in turn
// from each kind (in file order within a kind) as long as their answers
// fit, the records they need, then the set's other records in file order
// up to maxRecords. Records and queries keep their file order. It is how
// `make test` runs the harness on the real set without loading all of it.
func (s *Set) Slice(maxRecords, maxQueries int) (*Set, error) {
	if maxRecords < 1 || maxQueries < 1 {
		return nil, errors.New("slice: want at least 1 record and 1 query")
	}
	keep := map[string]bool{}
	taken := map[string]bool{}
	// next[k] is the index in s.Queries to look at next for kind k.
	next := make(map[string]int, len(Kinds))
	fits := func(q Query) bool {
		extra := 0
		for _, k := range q.Answers {
			if !keep[k] {
				extra++
			}
		}
		return len(keep)+extra <= maxRecords
	}
	for len(taken) < maxQueries {
		progress := false
		for _, kind := range Kinds {
			if len(taken) == maxQueries {
				break
			}
			for i := next[kind]; i < len(s.Queries); i++ {
				q := s.Queries[i]
				if q.Kind != kind || !fits(q) {
					continue
				}
				next[kind] = i + 1
				for _, k := range q.Answers {
					keep[k] = true
				}
				taken[q.ID] = true
				progress = true
				break
			}
		}
		if !progress {
			break
		}
	}
	out := &Set{Options: s.Options}
	for _, q := range s.Queries {
		if taken[q.ID] {
			out.Queries = append(out.Queries, q)
		}
	}
	for _, r := range s.Records {
		if len(keep) == maxRecords {
			break
		}
		keep[r.Key] = true
	}
	for _, r := range s.Records {
		if keep[r.Key] {
			r.NearMiss = slices.DeleteFunc(slices.Clone(r.NearMiss), func(k string) bool { return !keep[k] })
			out.Records = append(out.Records, r)
		}
	}
	if err := out.Validate(); err != nil {
		return nil, fmt.Errorf("slice: %w", err)
	}
	return out, nil
}

// Count returns how many queries there are of each kind.
func (s *Set) Count() map[string]int {
	m := map[string]int{}
	for _, q := range s.Queries {
		m[q.Kind]++
	}
	return m
}
