package homeassistant

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzDecode feeds any body to the states decoder: it never panics, it
// accepts only a JSON array of state objects (what decoding it whole
// accepts), gives a non-empty entity id for every state, and agrees with
// decoding the whole array at once.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`[]`, `[{"entity_id":"light.kitchen","state":"on","attributes":{"brightness":180},"context":{"id":"x","parent_id":null}}]`,
		`[{"entity_id":"a.b","state":"on"},{"entity_id":"a.b","state":"off"}]`, `{"message":"x"}`, `[{"state":"on"}]`,
		`[{"entity_id":1}]`, `[`, `[{"entity_id":"a.b","state":"on"}] trailing`, `null`, "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		got, err := decode(strings.NewReader(body))
		if err != nil {
			return
		}
		var whole []State
		if err := json.Unmarshal([]byte(body), &whole); err != nil {
			t.Fatalf("accepted %q, which is no JSON array of states: %v", body, err)
		}
		for id := range got {
			if id == "" {
				t.Fatalf("accepted an empty entity id from %q", body)
			}
		}
		want := map[string]string{}
		for _, s := range whole {
			want[s.EntityID] = s.State
		}
		if len(want) != len(got) {
			t.Fatalf("%q: got %v, want %v", body, got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("%q: %s = %q, want %q", body, k, got[k], v)
			}
		}
	})
}
