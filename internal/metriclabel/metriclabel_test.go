package metriclabel

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestValueIsAlwaysValidUTF8AndCapped(t *testing.T) {
	long := strings.Repeat("é", MaxLen) // 2 bytes each: the cap falls inside a rune
	cases := []struct {
		name, in, want string
	}{
		{"valid value unchanged", "kubernetes.io/csi:hostpath.volplane.io", "kubernetes.io/csi:hostpath.volplane.io"},
		{"empty unchanged", "", ""},
		{"invalid bytes replaced", "fast\xff\xfeclass", "fast\uFFFDclass"},
		{"long value cut on a rune boundary", long, strings.Repeat("é", MaxLen/2)},
	}
	for _, c := range cases {
		got := Value(c.in)
		if got != c.want {
			t.Errorf("%s: Value(%q) = %q, want %q", c.name, c.in, got, c.want)
		}
		if !utf8.ValidString(got) || len(got) > MaxLen {
			t.Errorf("%s: Value returned %q (%d bytes), not valid UTF-8 under %d bytes", c.name, got, len(got), MaxLen)
		}
	}
}
