package main

import (
	"net/http"
	"strings"
	"testing"
)

// TestPage_TokenRequired holds the page_token_required option with real
// HTTP requests to the ingress listener from loopback (not Home
// Assistant's ingress proxy): without a token, with a wrong one, or with
// one of a client that lacks admin scope the page answers 401 with a Basic
// challenge and shows nothing; with an admin client's token, as Bearer or
// as a Basic password, it is served. Off (the default), loopback is served
// without a token, as before.
func TestPage_TokenRequired(t *testing.T) {
	t.Parallel()
	o := pageOptions()
	o.PageTokenRequired = true
	td := startPageDaemon(t, t.TempDir(), o, nil)
	base := "http://" + td.IngressAddr() + "/"
	for _, c := range []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"ErrNoToken", nil, http.StatusUnauthorized},
		{"ErrWrongToken", map[string]string{"Authorization": "Bearer not-a-token-at-all-0123456789abcdef"}, http.StatusUnauthorized},
		{"ErrNoAdminScope", map[string]string{"Authorization": "Bearer " + td.tokens["codex"]}, http.StatusUnauthorized},
		{"ErrEmptyBasic", map[string]string{"Authorization": "Basic Og=="}, http.StatusUnauthorized},
		{"OKBearer", map[string]string{"Authorization": "Bearer " + adminToken}, http.StatusOK},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			code, body := getPage(t, http.DefaultClient, base, c.hdr)
			if code != c.want {
				t.Fatalf("GET / with %v: %d %.200s, want %d", c.hdr, code, body, c.want)
			}
			if code == http.StatusUnauthorized && (strings.Contains(body, "claude-code") || strings.Contains(body, "<svg")) {
				t.Errorf("a refused request saw the page: %.300s", body)
			}
			if code == http.StatusOK && !strings.Contains(body, "claude-code") {
				t.Errorf("the page lacks its clients: %.300s", body)
			}
		})
	}
	t.Run("OKBasic", func(t *testing.T) {
		t.Parallel()
		req, _ := http.NewRequest(http.MethodGet, base+"records", nil)
		req.SetBasicAuth("anyone", adminToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET /records with Basic: %d, want 200", resp.StatusCode)
		}
	})
	t.Run("ErrChallenge", func(t *testing.T) {
		t.Parallel()
		resp, err := http.Get(base)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if ch := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(ch, "Basic realm=") {
			t.Errorf("WWW-Authenticate = %q, want a Basic challenge a browser answers", ch)
		}
	})
	t.Run("OKOff", func(t *testing.T) {
		t.Parallel()
		off := startPageDaemon(t, t.TempDir(), pageOptions(), nil)
		if code, _ := getPage(t, http.DefaultClient, "http://"+off.IngressAddr()+"/", nil); code != http.StatusOK {
			t.Errorf("option off: GET / from loopback = %d, want 200", code)
		}
	})
}
