// Package metriclabel makes label values taken from API objects or from CSI
// drivers safe for Prometheus.
//
// Nouns: a label Value. The Prometheus client panics on a label value that
// is not valid UTF-8 (WithLabelValues, MustNewConstMetric), and a panic in a
// collector kills the whole process at scrape time. Object fields such as
// annotations and a driver's self-reported name are not ours to trust, so
// every such value passes through Value on its way into a metric.
package metriclabel

import (
	"strings"
	"unicode/utf8"
)

// MaxLen caps a label value in bytes: far above any valid Kubernetes name
// (253) or CSI driver name (63), low enough that a hostile annotation cannot
// bloat every scrape.
const MaxLen = 256

// Value returns s with every invalid UTF-8 sequence replaced by U+FFFD and
// cut to at most MaxLen bytes on a rune boundary. Valid values under the cap
// come back unchanged.
func Value(s string) string {
	s = strings.ToValidUTF8(s, string(utf8.RuneError))
	if len(s) <= MaxLen {
		return s
	}
	cut := MaxLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// Values applies Value to each of vs, in place, and returns vs.
func Values(vs ...string) []string {
	for i, v := range vs {
		vs[i] = Value(v)
	}
	return vs
}
