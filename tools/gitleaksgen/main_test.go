package main

import (
	"bytes"
	"os"
	"testing"
)

// TestGenerate_Current fails when storage/screen's upstream_rules.go
// differs from what the gitleaks version in this module's go.mod generates:
// run go generate ./storage/screen.
func TestGenerate_Current(t *testing.T) {
	got, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../../storage/screen/upstream_rules.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("upstream_rules.go is stale (%d bytes, generator gives %d): run go generate ./storage/screen", len(want), len(got))
	}
}

// TestGenerate_Deterministic guards the sort of gitleaks' map-ordered parts.
func TestGenerate_Deterministic(t *testing.T) {
	a, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		b, err := generate()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Fatal("got different output on a second run, want the same")
		}
	}
}
