package textcheck

import "testing"

func TestFind(t *testing.T) {
	t.Parallel()
	cases := []struct {
		s         string
		multiline bool
		want      int
	}{
		{"Deploy runbook", false, -1},
		{"héllo — 世界 مرحبا", false, -1},
		{"line one\nline two\ttabbed\r\n", true, -1},
		{"line one\nline two", false, 8},
		{"tab\there", false, 3},
		{"nul\x00", true, 3},
		{"esc \x1b[31mred", true, 4},
		{"bell\a", true, 4},
		{"del\x7f", true, 3},
		{"c1 \u0085", true, 3},
		{"invoice \u202egnp.exe", true, 8},
		{"\u202aembed", false, 0},
		{"isolate \u2066x\u2069", true, 8},
		{"\u2069", true, 0},
	}
	for _, c := range cases {
		if _, got := Find(c.s, c.multiline); got != c.want {
			t.Errorf("Find(%q, %v) = %d, want %d", c.s, c.multiline, got, c.want)
		}
	}
}

func TestFold(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"plain\nlines\tand tabs":  "plain\nlines\tand tabs",
		"esc \x1b[2Jcleared":      "esc \uFFFD[2Jcleared",
		"nul\x00bell\a":           "nul\uFFFDbell\uFFFD",
		"invoice \u202egnp.exe":   "invoice \uFFFDgnp.exe",
		"bad \xff byte":           "bad \uFFFD byte",
		"\u2066isolated\u2069 ok": "\uFFFDisolated\uFFFD ok",
	} {
		if got := Fold(in); got != want {
			t.Errorf("Fold(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzFold(f *testing.F) {
	for _, s := range []string{"", "plain", "esc \x1b[31m", "\u202e", "bad \xff", "a\nb\tc\r"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Fold(s)
		if _, i := Find(out, true); i >= 0 {
			t.Fatalf("Fold(%q) = %q keeps an unsafe character at %d", s, out, i)
		}
		if Fold(out) != out {
			t.Fatalf("Fold is not idempotent on %q", s)
		}
	})
}
