package resourceversion

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestOlder(t *testing.T) {
	obj := func(uid, rv string) metav1.Object {
		return &metav1.ObjectMeta{UID: types.UID(uid), ResourceVersion: rv}
	}
	for _, c := range []struct {
		name string
		a, b metav1.Object
		want bool
	}{
		{"smaller version of the same object", obj("u", "9"), obj("u", "10"), true},
		{"numeric, not lexical", obj("u", "10"), obj("u", "9"), false},
		{"same version", obj("u", "7"), obj("u", "7"), false},
		{"another object (re-created)", obj("u1", "1"), obj("u2", "5"), false},
		{"unparsable version is never older", obj("u", "x"), obj("u", "5"), false},
		{"nothing is older than an unparsable version", obj("u", "5"), obj("u", ""), false},
	} {
		if got := Older(c.a, c.b); got != c.want {
			t.Errorf("%s: Older = %v, want %v", c.name, got, c.want)
		}
	}
}
