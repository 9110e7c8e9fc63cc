package homeassistant_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/server/homeassistant"
	"github.com/hearth-memory/hearth/server/homeassistant/hatest"
)

const token = "supervisor-token-7f3a9c"

func client(tb testing.TB, url, tok string, timeout time.Duration) *homeassistant.Client {
	tb.Helper()
	c, err := homeassistant.New(homeassistant.Config{URL: url, Token: tok, Timeout: timeout})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// unreachable fails the test unless err is an *Unreachable with status
// whose text holds want and never the token.
func unreachable(tb testing.TB, err error, status int, want string) {
	tb.Helper()
	var u *homeassistant.Unreachable
	if !errors.As(err, &u) {
		tb.Fatalf("error %v (%T), want *Unreachable", err, err)
	}
	if u.Status != status || !strings.Contains(u.Error(), want) {
		tb.Errorf("got %d %q, want %d and %q", u.Status, u.Error(), status, want)
	}
	if strings.Contains(u.Error(), token) {
		tb.Errorf("the error shows the token: %s", u.Error())
	}
}

func TestClient_States(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("OK", func(t *testing.T) {
		ha := hatest.New(t, token)
		ha.Set("binary_sensor.garage_door", "off")
		ha.Set("light.kitchen", "unavailable")
		ha.Set("sensor.outdoor", "21.5")
		got, err := client(t, ha.URL, token, 0).States(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"binary_sensor.garage_door": "off", "light.kitchen": "unavailable", "sensor.outdoor": "21.5"}
		if len(got) != len(want) {
			t.Fatalf("got %v, want %v", got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: got %q, want %q", k, got[k], v)
			}
		}
		if reqs := ha.Requests(); !slices.Equal(reqs, []string{homeassistant.StatesPath}) {
			t.Errorf("requests %v, want one GET %s", reqs, homeassistant.StatesPath)
		}
	})

	t.Run("FiveThousandInOneRequest", func(t *testing.T) {
		ha := hatest.New(t, token)
		for i := range 5000 {
			ha.Set(fmt.Sprintf("sensor.s%04d", i), "on")
		}
		got, err := client(t, ha.URL, token, 0).States(ctx)
		if err != nil || len(got) != 5000 {
			t.Fatalf("got %d states, %v; want 5000", len(got), err)
		}
		if n := len(ha.Requests()); n != 1 {
			t.Errorf("%d requests, want 1", n)
		}
	})

	t.Run("Slow", func(t *testing.T) {
		ha := hatest.New(t, token)
		ha.Set("light.kitchen", "on")
		ha.Delay(50 * time.Millisecond)
		if got, err := client(t, ha.URL, token, 10*time.Second).States(ctx); err != nil || got["light.kitchen"] != "on" {
			t.Errorf("slow answer: %v, %v", got, err)
		}
	})

	t.Run("ErrToken", func(t *testing.T) {
		ha := hatest.New(t, token)
		ha.Set("light.kitchen", "on")
		_, err := client(t, ha.URL, "wrong-token", 0).States(ctx)
		unreachable(t, err, 401, "homeassistant_api")
	})

	t.Run("Err502", func(t *testing.T) {
		ha := hatest.New(t, token)
		ha.Fail(http.StatusBadGateway)
		_, err := client(t, ha.URL, token, 0).States(ctx)
		unreachable(t, err, 502, "not answering")
	})

	t.Run("Err404", func(t *testing.T) {
		// The list route itself missing is a broken proxy, never "every
		// entity is gone".
		ha := hatest.New(t, token)
		ha.Fail(http.StatusNotFound)
		_, err := client(t, ha.URL, token, 0).States(ctx)
		unreachable(t, err, 404, "HTTP 404")
	})

	t.Run("ErrHung", func(t *testing.T) {
		ha := hatest.New(t, token)
		ha.Hang(true)
		start := time.Now()
		_, err := client(t, ha.URL, token, 200*time.Millisecond).States(ctx)
		unreachable(t, err, 0, "no answer within 200ms")
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("gave up after %v", d)
		}
	})

	t.Run("ErrConnection", func(t *testing.T) {
		ha := hatest.New(t, token)
		url := ha.URL
		ha.Close()
		_, err := client(t, url, token, 0).States(ctx)
		unreachable(t, err, 0, "cannot connect")
	})

	for _, c := range []struct{ name, body, want string }{
		{"ErrMalformed", `[{"entity_id": "light.kitchen", "state": "on"`, "could not be read"},
		{"ErrNotArray", `{"message": "API running."}`, "not a JSON array"},
		{"ErrNoEntityID", `[{"state": "on"}]`, "without entity_id"},
		{"ErrEmpty", `[]`, "no entity states"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ha := hatest.New(t, token)
			ha.Body(c.body)
			_, err := client(t, ha.URL, token, 0).States(ctx)
			unreachable(t, err, 200, c.want)
		})
	}

	t.Run("ErrRedirect", func(t *testing.T) {
		var leaked string
		elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			leaked = r.Header.Get("Authorization")
			w.Write([]byte(`[{"entity_id":"light.x","state":"on"}]`))
		}))
		defer elsewhere.Close()
		redirect := httptest.NewServer(http.RedirectHandler(elsewhere.URL+"/core/api/states", http.StatusFound))
		defer redirect.Close()
		_, err := client(t, redirect.URL, token, 0).States(ctx)
		unreachable(t, err, 302, "HTTP 302")
		if leaked != "" {
			t.Errorf("the token followed a redirect")
		}
	})
}

func TestNew(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		if _, err := homeassistant.New(homeassistant.Config{Token: token}); err != nil {
			t.Errorf("default URL: %v", err)
		}
	})
	for _, c := range []struct{ name, url, tok string }{
		{"ErrNoToken", "", ""},
		{"ErrRelative", "supervisor", token},
		{"ErrScheme", "ftp://supervisor", token},
		{"ErrUserinfo", "http://u:p@supervisor", token},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := homeassistant.New(homeassistant.Config{URL: c.url, Token: c.tok}); err == nil {
				t.Errorf("New(%q) accepted", c.url)
			}
		})
	}
}

// TestServer_Entity holds the test server to the Supervisor's single-entity
// route: the state object's real shape, 404 with Home Assistant's body for
// an unknown entity, 401 without the token.
func TestServer_Entity(t *testing.T) {
	t.Parallel()
	ha := hatest.New(t, token)
	ha.Set("light.kitchen", "on")
	get := func(path, tok string) (int, []byte) {
		req, _ := http.NewRequest(http.MethodGet, ha.URL+path, nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	t.Run("OK", func(t *testing.T) {
		code, b := get("/core/api/states/light.kitchen", token)
		var obj map[string]any
		if code != 200 || json.Unmarshal(b, &obj) != nil {
			t.Fatalf("HTTP %d %s", code, b)
		}
		for _, k := range []string{"entity_id", "state", "attributes", "last_changed", "last_reported", "last_updated", "context"} {
			if _, ok := obj[k]; !ok {
				t.Errorf("state object lacks %s: %s", k, b)
			}
		}
		if obj["entity_id"] != "light.kitchen" || obj["state"] != "on" {
			t.Errorf("got %s", b)
		}
	})
	t.Run("Err404", func(t *testing.T) {
		if code, b := get("/core/api/states/light.gone", token); code != 404 || string(b) != `{"message":"Entity not found."}` {
			t.Errorf("HTTP %d %s", code, b)
		}
	})
	t.Run("Err401", func(t *testing.T) {
		if code, b := get("/core/api/states/light.kitchen", ""); code != 401 || string(b) != "401: Unauthorized" {
			t.Errorf("HTTP %d %s", code, b)
		}
	})
}
