package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// maxResponseBytes bounds a reply the hooks read: the largest budgeted
// answer (a 2,000-token memory_get) is far below it.
const maxResponseBytes = 1 << 20

// Client calls Hearth's REST routes (POST /api/<tool>).
type Client struct {
	// URL is the server's base URL, e.g. http://127.0.0.1:8765.
	URL string
	// Token is the bearer token, "" for none (an address client).
	Token string
	HTTP  *http.Client
}

// dialTimeout bounds connecting to the server. A server on the LAN answers
// a connection in milliseconds; one that is down and silent (no refusal)
// must not hold a session start for its whole deadline.
const dialTimeout = 300 * time.Millisecond

// NewClient returns a client for base URL u with its own transport: a hook
// is a short process, so nothing is shared.
func NewClient(u, token string) *Client {
	d := &net.Dialer{Timeout: dialTimeout}
	return &Client{
		URL:   strings.TrimRight(u, "/"),
		Token: token,
		HTTP: &http.Client{
			Transport: &http.Transport{
				Proxy:               http.ProxyFromEnvironment,
				DialContext:         d.DialContext,
				MaxIdleConnsPerHost: 2,
				IdleConnTimeout:     10 * time.Second,
			},
			// A redirect would carry the token somewhere else.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// APIError is a call Hearth answered with an error body, or with a status
// that is not 200.
type APIError struct {
	Status  int
	Code    string // gRPC code name, e.g. INVALID_ARGUMENT; "" when the body was not Hearth's
	Field   string
	Message string
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("HTTP %d", e.Status)
	if e.Code != "" {
		s += " " + e.Code
	}
	if e.Field != "" {
		s += " (" + e.Field + ")"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// RouteMissing reports whether err says the server has no such route: a
// server older than the tool. Hearth answers an unknown /api/ path with 404
// NOT_FOUND "no route …"; anything that is not Hearth's JSON with 404 is
// taken the same way (a proxy, or an older server).
func RouteMissing(err error) bool {
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
		return false
	}
	return ae.Code == "" || strings.HasPrefix(ae.Message, "no route")
}

// Call posts args to /api/<tool> and decodes a 200 reply into out (which
// may be nil). Other answers become an *APIError.
func (c *Client) Call(ctx context.Context, tool string, args, out any) error {
	body, err := json.Marshal(args)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL+"/api/"+tool, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return scrub(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return fmt.Errorf("%s: read reply: %w", tool, scrub(err))
	}
	if len(raw) > maxResponseBytes {
		return fmt.Errorf("%s: reply larger than %d bytes", tool, maxResponseBytes)
	}
	if resp.StatusCode != http.StatusOK {
		ae := &APIError{Status: resp.StatusCode}
		var eb struct {
			Error struct {
				Code    string `json:"code"`
				Field   string `json:"field"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(raw, &eb) == nil && eb.Error.Code != "" {
			ae.Code, ae.Field, ae.Message = eb.Error.Code, eb.Error.Field, eb.Error.Message
		}
		return ae
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s: reply is not the expected JSON: %w", tool, err)
	}
	return nil
}

// scrub drops the URL from a transport error: HEARTH_URL may hold user
// information, and the log needs only what went wrong.
func scrub(err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

// CallScoped calls tool with args plus the scope: first with the remote;
// when the server cannot turn that remote into a namespace (a host that is
// neither GitHub nor a forge host), again with the fallback namespace.
func (c *Client) CallScoped(ctx context.Context, tool string, sc Scope, args map[string]any, out any) error {
	if sc.Remote != "" {
		args["remote"] = sc.Remote
		err := c.Call(ctx, tool, args, out)
		var ae *APIError
		if !errors.As(err, &ae) || ae.Code != "INVALID_ARGUMENT" || ae.Field != "remote" || sc.Namespace == "" {
			return err
		}
		delete(args, "remote")
	}
	args["namespace"] = sc.Namespace
	return c.Call(ctx, tool, args, out)
}
