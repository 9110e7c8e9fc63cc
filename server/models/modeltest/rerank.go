package modeltest

import (
	"cmp"
	"net/http"
	"slices"
	"strings"
	"unicode"
)

// RerankPath is the rerank route of the OpenAI-style flavors (llama-server
// started with --reranking).
const RerankPath = "/v1/rerank"

// openAIRerank answers llama-server's POST /v1/rerank: {"model","query",
// "documents":[…],"top_n"} gets {"model","object":"list","usage",
// "results":[{"index":i,"relevance_score":s},…]}, best first, top_n of them.
// A document's score is OverlapScore(query, document): a test server's
// stand-in for a cross-encoder, whose order a test can predict.
func openAIRerank(w http.ResponseWriter, req Request) {
	var in struct {
		Model     string   `json:"model"`
		Query     string   `json:"query"`
		Documents []string `json:"documents"`
		TopN      int      `json:"top_n"`
	}
	if err := decodeBody(req.Body, &in); err != nil {
		llamaError(w, http.StatusBadRequest, err.Error())
		return
	}
	if in.Query == "" || len(in.Documents) == 0 {
		llamaError(w, http.StatusBadRequest, `"query" and "documents" are required`)
		return
	}
	type result struct {
		Index int     `json:"index"`
		Score float64 `json:"relevance_score"`
	}
	results := make([]result, len(in.Documents))
	for i, d := range in.Documents {
		results[i] = result{Index: i, Score: OverlapScore(in.Query, d)}
	}
	// Best first, as llama-server sorts them; equal scores keep document order.
	slices.SortStableFunc(results, func(a, b result) int { return cmp.Compare(b.Score, a.Score) })
	if in.TopN > 0 && in.TopN < len(results) {
		results = results[:in.TopN]
	}
	writeJSON(w, http.StatusOK, map[string]any{"model": in.Model, "object": "list",
		"usage":   map[string]any{"prompt_tokens": 9 * len(in.Documents), "total_tokens": 9 * len(in.Documents)},
		"results": results})
}

// OverlapScore is the stand-in rerank score: the share of the query's
// distinct words (runs of letters and digits, lower-cased) that the
// document holds, 0 to 1.
func OverlapScore(query, doc string) float64 {
	q := words(query)
	if len(q) == 0 {
		return 0
	}
	d := words(doc)
	held := 0
	for w := range q {
		if d[w] {
			held++
		}
	}
	return float64(held) / float64(len(q))
}

func words(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		out[w] = true
	}
	return out
}
