package loop

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func pvAt(rv string, uid types.UID) *v1.PersistentVolume {
	return &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv", ResourceVersion: rv, UID: uid}}
}

func TestNewestKeepsTheNewerCopy(t *testing.T) {
	n := NewNewest[*v1.PersistentVolume]()
	n.Wrote("pv", pvAt("10", "a"))
	if got := n.Observe("pv", pvAt("9", "a")); got.ResourceVersion != "10" {
		t.Errorf("an older informer copy replaced our newer write: got rv %s", got.ResourceVersion)
	}
	if got := n.Observe("pv", pvAt("11", "a")); got.ResourceVersion != "11" {
		t.Errorf("a newer copy was ignored: got rv %s", got.ResourceVersion)
	}
	n.Wrote("pv", pvAt("12", "a"))
	if got := n.Observe("pv", pvAt("3", "b")); got.UID != "b" {
		t.Error("a re-created object (new UID) must replace the old one whatever its version")
	}
	n.Wrote("pv", pvAt("4", "b"))
	if got := n.Observe("pv", pvAt("x", "b")); got.ResourceVersion != "x" {
		t.Error("an unparsable version must not pin the held copy")
	}
}

// Only the exact version our last write returned counts as our own write,
// and forgetting the key forgets that too.
func TestOwnWritesAreRecognisedByVersion(t *testing.T) {
	n := NewNewest[*v1.PersistentVolume]()
	n.Wrote("pv", pvAt("5", "a"))
	if !n.IsOwnWrite("pv", pvAt("5", "a")) || n.IsOwnWrite("pv", pvAt("6", "a")) {
		t.Error("own write not told apart by resourceVersion")
	}
	if got, ok := n.Get("pv"); !ok || got.ResourceVersion != "5" {
		t.Errorf("held copy %v, %v; want rv 5", got, ok)
	}
	n.Forget("pv")
	if _, ok := n.Get("pv"); ok || n.IsOwnWrite("pv", pvAt("5", "a")) {
		t.Error("a forgotten key is still held")
	}
}

// Newer prefers the held copy when it is newer but never records what it
// is shown: a read must not bring back a forgotten (deleted) object.
func TestNewerReadsWithoutRecording(t *testing.T) {
	n := NewNewest[*v1.PersistentVolume]()
	n.Wrote("pv", pvAt("10", "a"))
	if got := n.Newer("pv", pvAt("9", "a")); got.ResourceVersion != "10" {
		t.Errorf("got rv %s, want our newer write 10", got.ResourceVersion)
	}
	n.Forget("pv")
	if got := n.Newer("pv", pvAt("9", "a")); got.ResourceVersion != "9" {
		t.Errorf("got rv %s, want the copy shown", got.ResourceVersion)
	}
	if _, ok := n.Get("pv"); ok {
		t.Error("Newer recorded the copy it was shown")
	}
}

// Once the informer delivers the version we hold, or a newer one, the held
// copy is dropped: the lister has it, and holding a second copy of every
// object we wrote doubled the binder's memory.
func TestTheHeldCopyIsDroppedOnceTheInformerCaughtUp(t *testing.T) {
	n := NewNewest[*v1.PersistentVolume]()
	n.Wrote("pv", pvAt("5", "a"))
	if got := n.Observe("pv", pvAt("5", "a")); got.ResourceVersion != "5" {
		t.Errorf("got rv %s, want 5", got.ResourceVersion)
	}
	if _, ok := n.Get("pv"); ok {
		t.Error("the written copy is still held after the informer delivered its version")
	}
	if !n.IsOwnWrite("pv", pvAt("5", "a")) {
		t.Error("the own write is no longer recognised")
	}
}
