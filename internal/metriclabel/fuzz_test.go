package metriclabel

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzValue: any annotation or driver name becomes a label value the
// Prometheus client accepts (valid UTF-8), at most MaxLen bytes, a prefix
// of the cleaned input; a valid value under the cap is kept as it is, and
// cleaning twice changes nothing.
func FuzzValue(f *testing.F) {
	for _, s := range []string{"", "hostpath.csi.volplane.io", "bad\xffbyte", strings.Repeat("é", MaxLen), strings.Repeat("a", MaxLen+1)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Value(s)
		if !utf8.ValidString(got) || len(got) > MaxLen {
			t.Fatalf("Value(%q) = %q: invalid or longer than %d", s, got, MaxLen)
		}
		if !strings.HasPrefix(strings.ToValidUTF8(s, string(utf8.RuneError)), got) {
			t.Fatalf("Value(%q) = %q: not a prefix of the cleaned input", s, got)
		}
		if utf8.ValidString(s) && len(s) <= MaxLen && got != s {
			t.Fatalf("Value(%q) = %q: a valid value was changed", s, got)
		}
		if Value(got) != got {
			t.Fatalf("Value is not idempotent on %q", s)
		}
	})
}
