package encoder

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"
)

// fixture is a wink-format file of seven 4-dimensional words.
const fixture = "testdata/vectors.json"

// loadFixture reads testdata/vectors.json.
func loadFixture(tb testing.TB) *Vectors {
	tb.Helper()
	f, err := os.Open(fixture)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	v, err := Load(f)
	if err != nil {
		tb.Fatalf("Load(%s): %v", fixture, err)
	}
	return v
}

func TestLoad(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		v := loadFixture(t)
		raw, err := os.ReadFile(fixture)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(raw)
		if got, want := v.Snapshot, hex.EncodeToString(sum[:])[:40]; got != want {
			t.Errorf("Snapshot = %s, want %s (the file's sha256)", got, want)
		}
		if got, want := v.Dimensions, 4; got != want {
			t.Errorf("Dimensions = %d, want %d", got, want)
		}
		if got, want := v.Len(), 7; got != want {
			t.Errorf("Len = %d, want %d", got, want)
		}
		// The norm and index after the dimensions are not part of the vector.
		if got, want := v.Word("webhook"), []float32{3, 4, 0, 0}; !equal(got, want) {
			t.Errorf(`Word("webhook") = %v, want %v`, got, want)
		}
		if got := v.Word("absent"); got != nil {
			t.Errorf(`Word("absent") = %v, want nil`, got)
		}
	})
	head := `{"dimensions":2,"l2NormIndex":2,"wordIndex":3,`
	for _, tc := range []struct {
		name, in, want string
	}{
		{"ErrNotObject", `[1,2]`, `want "{", got [`},
		{"ErrEmpty", ``, "EOF"},
		{"ErrNoVectors", `{"dimensions":2}`, `no "vectors"`},
		{"ErrEmptyVectors", head + `"vectors":{}}`, `"vectors" is empty`},
		{"ErrVectorsFirst", `{"vectors":{"a":[1,2,3,4]},"dimensions":2}`, `"dimensions" must come first`},
		{"ErrDimensionsZero", `{"dimensions":0,"l2NormIndex":0,"wordIndex":1,"vectors":{}}`, `"dimensions" must come first and be 1`},
		{"ErrDimensionsHuge", `{"dimensions":5000,"l2NormIndex":5000,"wordIndex":5001,"vectors":{}}`, `be 1 to 4096`},
		{"ErrIndexes", `{"dimensions":2,"l2NormIndex":3,"wordIndex":2,"vectors":{}}`, `"l2NormIndex" and "wordIndex"`},
		{"ErrShortEntry", head + `"vectors":{"a":[1,2,3]}}`, `word "a": 3 numbers, want 4`},
		{"ErrLongEntry", head + `"vectors":{"a":[1,2,3,4,5]}}`, `word "a": 5 numbers, want 4`},
		{"ErrNotNumbers", head + `"vectors":{"a":[1,"x",3,4]}}`, `word "a": item 1: "\"x\"" is not a finite number`},
		{"ErrNotArray", head + `"vectors":{"a":{"b":1}}}`, `word "a": not an array of numbers`},
		{"ErrNested", head + `"vectors":{"a":[[1,2],3,4]}}`, `word "a": item 0`},
		{"ErrNormNotNumber", head + `"vectors":{"a":[1,2,true,4]}}`, `item 2: "true"`},
		{"ErrOverflow", head + `"vectors":{"a":[1e300,2,3,4]}}`, `"1e300" is not a finite number`},
		{"ErrDuplicate", head + `"vectors":{"a":[1,2,3,4],"a":[1,2,3,4]}}`, `"a" appears twice`},
		{"ErrVectorsTwice", head + `"vectors":{"a":[1,2,3,4]},"vectors":{"b":[1,2,3,4]}}`, `"vectors" appears twice`},
		{"ErrTrailing", head + `"vectors":{"a":[1,2,3,4]}} {}`, "data after"},
		{"ErrTruncated", head + `"vectors":{"a":[1,2,3,4]`, truncated(t)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load(%q) error = %v, want one containing %q", tc.in, err, tc.want)
			}
		})
	}
}

func TestVectors_Embed(t *testing.T) {
	t.Parallel()
	v := loadFixture(t)
	s := float32(1 / math.Sqrt2)
	for _, tc := range []struct {
		name, text string
		want       []float32
		words      int
	}{
		{"OneWord", "retry", []float32{1, 0, 0, 0}, 1},
		// The mean of [1,0,0,0] and [0,1,0,0], made unit length.
		{"Mean", "retry backoff", []float32{s, s, 0, 0}, 2},
		// Words are vectors, not unit vectors: webhook is [3,4,0,0].
		{"NotNormalisedFirst", "webhook retry", unit(4, 4, 0, 0), 2},
		{"StopwordLeftOut", "the retry", []float32{1, 0, 0, 0}, 2},
		{"OnlyStopwords", "the the", []float32{0, 0, 0, 1}, 2},
		{"UnknownLeftOut", "retry zyzzyva", []float32{1, 0, 0, 0}, 2},
		{"CaseFolded", "RETRY Backoff", []float32{s, s, 0, 0}, 2},
		{"CamelCase", "retryBackoff", []float32{s, s, 0, 0}, 2},
		{"SnakeCase", "retry_backoff", []float32{s, s, 0, 0}, 2},
		{"Punctuation", "retry, (backoff)!", []float32{s, s, 0, 0}, 2},
		// Hearth's query form: the instruction is not embedded.
		{"Instruction", "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery:kitchen", []float32{0, 0, 1, 0}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, n := v.Embed(tc.text)
			if !near(got, tc.want) {
				t.Errorf("Embed(%q) = %v, want %v", tc.text, got, tc.want)
			}
			if n != tc.words {
				t.Errorf("Embed(%q) read %d words, want %d", tc.text, n, tc.words)
			}
		})
	}
	t.Run("NoKnownWord", func(t *testing.T) {
		a, _ := v.Embed("zyzzyva quux")
		b, _ := v.Embed("zyzzyva quux")
		c, _ := v.Embed("frobnicate")
		if !equal(a, b) {
			t.Errorf("Embed is not deterministic for unknown words: %v, then %v", a, b)
		}
		if equal(a, c) {
			t.Errorf("two unknown texts got the same vector %v", a)
		}
		for _, x := range [][]float32{a, c} {
			if n := norm(x); math.Abs(n-1) > 1e-5 {
				t.Errorf("unknown-text vector %v has length %v, want 1", x, n)
			}
		}
	})
}

func TestWords(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"Retry webhooks with backoff":  "retry webhooks with backoff",
		"memory_store(retryBackoff)":   "memory store retry backoff",
		"HTTPServer v1.2":              "httpserver v1 2",
		"billing-api/internal/webhook": "billing api internal webhook",
		"Größe ändern":                 "größe ändern",
		"":                             "",
	} {
		if got := strings.Join(Words(in), " "); got != want {
			t.Errorf("Words(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestQueryText(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"Instruct: task\nQuery:how do we retry": "how do we retry",
		"Instruct: task without a query":        "Instruct: task without a query",
		"plain\nQuery:text":                     "plain\nQuery:text",
	} {
		if got := QueryText(in); got != want {
			t.Errorf("QueryText(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzLoad(f *testing.F) {
	raw, err := os.ReadFile(fixture)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	f.Add([]byte(`{"dimensions":1,"l2NormIndex":1,"wordIndex":2,"vectors":{"a":[1,1,0]}}`))
	f.Add([]byte(`{"vectors":{}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		v, err := Load(bytes.NewReader(in))
		if err != nil {
			return
		}
		if v.Dimensions < 1 || v.Dimensions > MaxDimensions || v.Len() == 0 || len(v.Snapshot) != 40 {
			t.Fatalf("Load accepted a table with %d dimensions, %d words, snapshot %q", v.Dimensions, v.Len(), v.Snapshot)
		}
		for w, vec := range v.words {
			if len(vec) != v.Dimensions {
				t.Fatalf("word %q has %d dimensions, want %d", w, len(vec), v.Dimensions)
			}
		}
	})
}

func FuzzEmbed(f *testing.F) {
	v := loadFixture(f)
	f.Add("retry backoff")
	f.Add("Instruct: x\nQuery:the kitchen light")
	f.Add("")
	f.Add("\xff\xfe retryBackoff_webhook")
	f.Fuzz(func(t *testing.T, text string) {
		vec, _ := v.Embed(text)
		if len(vec) != v.Dimensions {
			t.Fatalf("Embed(%q) has %d dimensions, want %d", text, len(vec), v.Dimensions)
		}
		if n := norm(vec); math.IsNaN(n) || math.Abs(n-1) > 1e-4 {
			t.Fatalf("Embed(%q) = %v has length %v, want 1", text, vec, n)
		}
	})
}

func unit(x ...float64) []float32 {
	normalise(x)
	out := make([]float32, len(x))
	for i, f := range x {
		out[i] = float32(f)
	}
	return out
}

func norm(x []float32) float64 {
	var ss float64
	for _, f := range x {
		ss += float64(f) * float64(f)
	}
	return math.Sqrt(ss)
}

func equal(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func near(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > 1e-6 {
			return false
		}
	}
	return true
}

// truncated is the error encoding/json's Decoder gives when an object's
// members run out mid-document, read as Load reads them (More, a name, a
// value, then the closing brace): "EOF" up to Go 1.26, "unexpected end of
// JSON input" from Go 1.27.
func truncated(t *testing.T) string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(`{"a":[1]`))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	for dec.More() {
		if _, err := dec.Token(); err != nil {
			return err.Error()
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err.Error()
		}
	}
	_, err := dec.Token()
	if err == nil {
		t.Fatal("a truncated object decoded whole")
	}
	return err.Error()
}
