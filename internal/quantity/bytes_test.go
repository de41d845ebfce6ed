package quantity

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

func TestBytesIsTheRequestOfACSICallOrNothing(t *testing.T) {
	for s, want := range map[string]int64{"1Gi": 1 << 30, "0.5": 1, "1m": 1, "9223372036854775807": 1<<63 - 1, "0": 0} {
		if got, ok := Bytes(resource.MustParse(s)); !ok || got != want {
			t.Errorf("Bytes(%s) = %d, %v; want %d", s, got, ok, want)
		}
	}
	for _, s := range []string{"18446744074783293440", "9223372036854775808", "9223372036854775807.5", "1e30", "-1"} {
		if got, ok := Bytes(resource.MustParse(s)); ok {
			t.Errorf("Bytes(%s) = %d, want no size", s, got)
		}
	}
}
