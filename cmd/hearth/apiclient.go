package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// defaultURL is where the CLI, the hooks and `hearth connect` find a
// server when not told (no --url, no HEARTH_URL): serve's default listen
// address.
const defaultURL = "http://127.0.0.1:8765"

// apiClient calls the REST API (POST /api/<tool>) as one client, with the
// token it read from a file. The token is never printed.
type apiClient struct {
	base  string
	token string
	http  *http.Client
}

// apiFlags are the flags of every subcommand that talks to a server.
type apiFlags struct {
	url, tokenFile *string
}

func addAPIFlags(fs *flag.FlagSet, need string) apiFlags {
	return apiFlags{
		url:       fs.String("url", defaultURL, "the server's address (MCP, REST and gRPC port)"),
		tokenFile: fs.String("token-file", "", "a file holding the token of a client with "+need+" scope (e.g. DIR/tokens/<client> on the server)"),
	}
}

func (f apiFlags) client() (*apiClient, error) {
	if *f.tokenFile == "" {
		return nil, errors.New("--token-file is required")
	}
	tok, _, err := readToken(*f.tokenFile, os.Getenv)
	if err != nil {
		return nil, err
	}
	// Long enough for a backup of a large store; the server bounds the rest.
	return &apiClient{base: strings.TrimRight(*f.url, "/"), token: tok, http: &http.Client{Timeout: 30 * time.Minute}}, nil
}

// ask calls tool on the server for subcommand cmd ("hearth backup") and
// decodes the reply into resp. It prints why it failed and returns the
// exit status: 0 when the call succeeded, 2 for bad flags, 1 otherwise.
// heldErr, when not nil, is why the subcommand could not work on the data
// directory itself (a server holds it): without --token-file it says how to
// ask that server instead.
func (f apiFlags) ask(ctx context.Context, stderr io.Writer, cmd, data string, heldErr error, tool string, req any, resp proto.Message) int {
	if heldErr != nil && *f.tokenFile == "" {
		fmt.Fprintf(stderr, "%s: a server holds %s (%v);\nask it with --token-file FILE (a client with admin scope) and --url if it does not listen on %s\n", cmd, data, heldErr, defaultURL)
		return 1
	}
	c, err := f.client()
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		return 2
	}
	if err := c.call(ctx, tool, req, resp); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		return 1
	}
	return 0
}

// apiError is a refused call, as the error body says.
type apiError struct {
	Tool, Code, Field, Message string
	Status                     int
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%s: %s (%s, HTTP %d)", e.Tool, e.Message, e.Code, e.Status)
}

// call posts req (JSON) to tool and decodes the reply into resp.
func (c *apiClient) call(ctx context.Context, tool string, req any, resp proto.Message) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/api/"+tool, bytes.NewReader(body))
	if err != nil {
		return err
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Authorization", "Bearer "+c.token)
	res, err := c.http.Do(r)
	if err != nil {
		return fmt.Errorf("%s: %w", tool, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s: %w", tool, err)
	}
	if res.StatusCode != http.StatusOK {
		var e struct {
			Error struct {
				Code, Field, Message string
			} `json:"error"`
		}
		if json.Unmarshal(raw, &e) != nil || e.Error.Code == "" {
			return &apiError{Tool: tool, Code: "UNKNOWN", Message: http.StatusText(res.StatusCode), Status: res.StatusCode}
		}
		return &apiError{Tool: tool, Code: e.Error.Code, Field: e.Error.Field, Message: e.Error.Message, Status: res.StatusCode}
	}
	return protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(raw, resp)
}
