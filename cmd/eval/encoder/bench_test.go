package encoder

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// syntheticFile writes a wink-format file of n words with 100 dimensions,
// numbers printed the way the real file prints them.
func syntheticFile(n int) ([]byte, []string) {
	rng := rand.New(rand.NewPCG(1, 2))
	var b bytes.Buffer
	b.WriteString(`{"precision":8,"l2NormIndex":100,"wordIndex":101,"dimensions":100,"vectors":{`)
	words := make([]string, n)
	for i := range n {
		words[i] = fmt.Sprintf("w%d", i)
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q:[", words[i])
		for range 100 {
			fmt.Fprintf(&b, "%.6g,", rng.NormFloat64()*0.4)
		}
		fmt.Fprintf(&b, "4.12345678,%d]", i)
	}
	b.WriteString(`},"unkVector":[0]}`)
	return b.Bytes(), words
}

// BenchmarkLoad reads a 20,000-word file; MB/s scales to the real 307 MB,
// 341,479-word file.
func BenchmarkLoad(b *testing.B) {
	data, _ := syntheticFile(20000)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Load(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVectors_Embed embeds a record-sized text (about 60 words).
func BenchmarkVectors_Embed(b *testing.B) {
	data, words := syntheticFile(20000)
	v, err := Load(bytes.NewReader(data))
	if err != nil {
		b.Fatal(err)
	}
	text := strings.Join(words[:60], " ")
	for b.Loop() {
		v.Embed(text)
	}
}

// BenchmarkServer_Embeddings posts batches of 32 record-sized texts over
// HTTP, as an embedding backfill would; texts/s is the encoder's rate.
func BenchmarkServer_Embeddings(b *testing.B) {
	data, words := syntheticFile(20000)
	v, err := Load(bytes.NewReader(data))
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(&Server{Vectors: v})
	defer ts.Close()
	inputs := make([]string, 32)
	for i := range inputs {
		inputs[i] = fmt.Sprintf("%q", strings.Join(words[i*60:(i+1)*60], " "))
	}
	body := []byte(`{"input":[` + strings.Join(inputs, ",") + `]}`)
	for b.Loop() {
		resp, err := http.Post(ts.URL+"/v1/embeddings", "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("HTTP %d", resp.StatusCode)
		}
	}
	b.ReportMetric(float64(32*b.N)/b.Elapsed().Seconds(), "texts/s")
}
