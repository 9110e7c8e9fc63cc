// Package homeassistant reads entity states from Home Assistant's REST API
// through the Supervisor's proxy, as an add-on may (shared/ADDON.md): one
// GET <supervisor>/core/api/states with the add-on's SUPERVISOR_TOKEN as
// bearer token returns every entity's state. It only reads; Hearth never
// writes to Home Assistant.
//
// Any answer but a 200 with a JSON array of state objects is an
// *Unreachable error: 401 (a bad token, or homeassistant_api off), 502 (Home
// Assistant's API is down), a timeout, a connection error, a redirect or a
// body that does not read. None of them means an entity is gone.
package homeassistant

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Defaults for Config.
const (
	// DefaultURL is the Supervisor as an add-on reaches it.
	DefaultURL = "http://supervisor"
	// DefaultTimeout bounds one read of every state, body included.
	DefaultTimeout = 30 * time.Second
	// MaxBody bounds the states document: some thousands of entities with
	// their attributes take a few MB.
	MaxBody = 64 << 20
)

// StatesPath is the Supervisor's route to Home Assistant's GET /api/states.
const StatesPath = "/core/api/states"

// Config is what a Client needs.
type Config struct {
	// URL is the Supervisor's base URL; "" means DefaultURL.
	URL string
	// Token is SUPERVISOR_TOKEN. Required.
	Token string
	// Timeout bounds one States call; 0 means DefaultTimeout.
	Timeout time.Duration
	// HTTP is the client to use; nil makes one that never follows
	// redirects.
	HTTP *http.Client
}

// Client reads Home Assistant's entity states.
type Client struct {
	states  string
	token   string
	timeout time.Duration
	http    *http.Client
}

// New returns a Client. It fails without a token or with a URL that is not
// an absolute http(s) URL.
func New(cfg Config) (*Client, error) {
	if cfg.Token == "" {
		return nil, errors.New("homeassistant: a token is required")
	}
	base := cfg.URL
	if base == "" {
		base = DefaultURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return nil, errors.New("homeassistant: the Supervisor URL must be an absolute http(s) URL without credentials")
	}
	c := &Client{
		states:  strings.TrimRight(base, "/") + StatesPath,
		token:   cfg.Token,
		timeout: cfg.Timeout,
		http:    cfg.HTTP,
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.http == nil {
		c.http = &http.Client{
			// The token must go to the Supervisor alone.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	return c, nil
}

// Unreachable is a States call that got no usable answer. Status is the
// HTTP status when there was one.
type Unreachable struct {
	Status int
	Reason string
}

func (e *Unreachable) Error() string { return "Home Assistant unreachable: " + e.Reason }

// State is one entity's state object, the fields the sweep reads.
type State struct {
	EntityID string `json:"entity_id"`
	State    string `json:"state"`
}

// States reads every entity's state with one request and returns them by
// entity id. Every failure is an *Unreachable.
func (c *Client) States(ctx context.Context) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.states, nil)
	if err != nil {
		return nil, &Unreachable{Reason: "bad request: " + err.Error()}
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.failed(ctx, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, &Unreachable{Status: resp.StatusCode, Reason: fmt.Sprintf(
			"the Supervisor refused the token (HTTP %d); the add-on needs homeassistant_api", resp.StatusCode)}
	case resp.StatusCode == http.StatusBadGateway || resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusGatewayTimeout:
		return nil, &Unreachable{Status: resp.StatusCode, Reason: fmt.Sprintf("Home Assistant's API is not answering (HTTP %d)", resp.StatusCode)}
	case resp.StatusCode != http.StatusOK:
		return nil, &Unreachable{Status: resp.StatusCode, Reason: fmt.Sprintf("the Supervisor answered HTTP %d", resp.StatusCode)}
	}
	states, err := decode(io.LimitReader(resp.Body, MaxBody+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, c.failed(ctx, err)
		}
		return nil, &Unreachable{Status: resp.StatusCode, Reason: "the states could not be read: " + err.Error()}
	}
	if len(states) == 0 {
		// A running Home Assistant has entities; an empty list is a
		// starting or broken one, and must not make every anchor gone.
		return nil, &Unreachable{Status: resp.StatusCode, Reason: "Home Assistant listed no entity states"}
	}
	return states, nil
}

// failed describes a request that got no answer, without its URL.
func (c *Client) failed(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &Unreachable{Reason: fmt.Sprintf("no answer within %s", c.timeout)}
	}
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		err = ue.Err
	}
	return &Unreachable{Reason: "cannot connect: " + err.Error()}
}

// decode reads a JSON array of state objects one at a time, keeping only
// entity ids and states, so the document is never held whole.
func decode(r io.Reader) (map[string]string, error) {
	lr := &countingReader{r: r}
	dec := json.NewDecoder(lr)
	tok, err := dec.Token()
	if err != nil {
		return nil, tooLarge(lr, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, errors.New("not a JSON array")
	}
	out := map[string]string{}
	for dec.More() {
		var s State
		if err := dec.Decode(&s); err != nil {
			return nil, tooLarge(lr, err)
		}
		if s.EntityID == "" {
			return nil, errors.New("a state object without entity_id")
		}
		out[s.EntityID] = s.State
	}
	if _, err := dec.Token(); err != nil {
		return nil, tooLarge(lr, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("text after the array")
	}
	return out, nil
}

// countingReader counts the bytes read, to tell a cut-off body from a
// malformed one.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func tooLarge(r *countingReader, err error) error {
	if r.n > MaxBody {
		return fmt.Errorf("the states are larger than %d MiB", MaxBody>>20)
	}
	return err
}
