package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
)

// client calls a daemon's public REST API (/api/<tool>) as one token client.
type client struct {
	base, token string
	http        *http.Client
}

// call posts args to /api/<tool> and decodes a 200 reply into out. Any
// other status is an error carrying the reply's body.
func (c *client) call(ctx context.Context, tool string, args, out any) error {
	body, err := json.Marshal(args)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/api/"+tool, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", tool, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return fmt.Errorf("%s: %w", tool, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d: %s", tool, resp.StatusCode, bytes.TrimSpace(raw))
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s: reply: %w", tool, err)
	}
	return nil
}

// version reads GET /health.
func (c *client) version(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/health", nil)
	if err != nil {
		return "", err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return "", fmt.Errorf("health: %w", err)
	}
	defer resp.Body.Close()
	var h struct {
		Version string `json:"version"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		return "", fmt.Errorf("health: %w", err)
	}
	return h.Version, nil
}

// load stores the records in order and returns their ids by key.
func (c *client) load(ctx context.Context, records []Record) (map[string]string, error) {
	ids := make(map[string]string, len(records))
	for _, r := range records {
		var out struct {
			Record struct {
				ID string `json:"id"`
			} `json:"record"`
		}
		args := map[string]any{"namespace": r.Namespace, "type": r.Type, "title": r.Title, "content": r.Content}
		if len(r.Topics) > 0 {
			args["topics"] = r.Topics
		}
		if err := c.call(ctx, "memory_store", args, &out); err != nil {
			return nil, fmt.Errorf("record %s: %w", r.Key, err)
		}
		if out.Record.ID == "" {
			return nil, fmt.Errorf("record %s: memory_store returned no id", r.Key)
		}
		ids[r.Key] = out.Record.ID
	}
	return ids, nil
}

// checkScopes asks memory_namespace for the scope chain of every query's
// namespace and fails when an answer lives outside it: such a query could
// never be answered, and the set is wrong.
func (c *client) checkScopes(ctx context.Context, s *Set) error {
	nsOf := make(map[string]string, len(s.Records))
	for _, r := range s.Records {
		nsOf[r.Key] = r.Namespace
	}
	chains := map[string][]string{}
	for _, q := range s.Queries {
		chain, ok := chains[q.Namespace]
		if !ok {
			var out struct {
				Scopes []string `json:"scopes"`
			}
			if err := c.call(ctx, "memory_namespace", map[string]any{"name": q.Namespace}, &out); err != nil {
				return fmt.Errorf("query %s: %w", q.ID, err)
			}
			chain = out.Scopes
			chains[q.Namespace] = chain
		}
		for _, k := range q.Answers {
			if !slices.Contains(chain, nsOf[k]) {
				return fmt.Errorf("query %s: answer %s is in %s, outside the scope chain of %s (%v)", q.ID, k, nsOf[k], q.Namespace, chain)
			}
		}
	}
	return nil
}

type searchReply struct {
	Hits []struct {
		ID string `json:"id"`
	} `json:"hits"`
	Ranking string `json:"ranking"`
	LeftOut int    `json:"left_out"`
}

func (c *client) searchRaw(ctx context.Context, q Query, m Mode) (searchReply, error) {
	args := map[string]any{"query": q.Query, "namespace": q.Namespace, "limit": DefaultLimit,
		// A measurement is not a question anyone asked (docs/design.md R-K4, R-W2).
		"recall": true}
	maps.Copy(args, m.Args)
	var out searchReply
	if err := c.call(ctx, "memory_search", args, &out); err != nil {
		return out, fmt.Errorf("query %s: %w", q.ID, err)
	}
	return out, nil
}

// ranking runs q under m and returns only the ranking the server reported.
func (c *client) ranking(ctx context.Context, q Query, m Mode) (string, error) {
	out, err := c.searchRaw(ctx, q, m)
	return out.Ranking, err
}

// search runs q under m and places its answers among the hits. ids maps
// set keys to record ids; keys maps back.
func (c *client) search(ctx context.Context, q Query, m Mode, ids, keys map[string]string) (QueryResult, error) {
	out, err := c.searchRaw(ctx, q, m)
	if err != nil {
		return QueryResult{}, err
	}
	pos := make(map[string]int, len(out.Hits))
	res := QueryResult{ID: q.ID, Kind: q.Kind, Ranking: out.Ranking, Hits: len(out.Hits), LeftOut: out.LeftOut}
	for i, h := range out.Hits {
		if _, dup := pos[h.ID]; !dup {
			pos[h.ID] = i + 1
		}
		k, ok := keys[h.ID]
		if !ok {
			k = h.ID
		}
		res.Top = append(res.Top, k)
	}
	res.Ranks = make([]int, len(q.Answers))
	for i, k := range q.Answers {
		res.Ranks[i] = pos[ids[k]]
	}
	return res, nil
}
