package namespace_test

import (
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/storage/namespace"
)

func TestValidate(t *testing.T) {
	ok := []string{"global", "github/acme/api", "gitea/acme/web.app", "projects/platform", "topics/billing", "local/my_repo-2", "github/a/" + strings.Repeat("r", 150)}
	for _, ns := range ok {
		if err := namespace.Validate(ns); err != nil {
			t.Errorf("Validate(%q) = %v, want nil", ns, err)
		}
	}
	bad := []string{"", "Global", "github/acme", "github/acme/api/x", "github/Acme/api", "projects/", "projects/a b", "topics/..", "nope/x", "local/x/y", "github/acme/" + strings.Repeat("r", 160), "global/x", "github//api"}
	for _, ns := range bad {
		err := namespace.Validate(ns)
		if err == nil {
			t.Errorf("Validate(%q) = nil, want an error", ns)
			continue
		}
		if ns != "" && len(ns) > 3 && strings.Contains(err.Error(), ns) {
			t.Errorf("Validate(%q) error repeats the value: %v", ns, err)
		}
	}
}

func TestValidateTopics(t *testing.T) {
	if err := namespace.ValidateTopics([]string{"billing", "infra.k8s", "a"}); err != nil {
		t.Errorf("got %v, want nil", err)
	}
	for _, ts := range [][]string{
		{""}, {strings.Repeat("a", 41)}, {"Billing"}, {"a", "a"},
		{"a", "b", "c", "d", "e", "f", "g", "h", "i"},
	} {
		if err := namespace.ValidateTopics(ts); err == nil {
			t.Errorf("ValidateTopics(%q) = nil, want an error", ts)
		}
	}
}
