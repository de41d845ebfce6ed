package index_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/volplane/volplane/internal/index"
)

func freePV(name, size string) *v1.PersistentVolume {
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeSpec{
			Capacity:    v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)},
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
		},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumePending},
	}
}

func rwoClaim(ns, name, size string) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:   v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)}},
		},
	}
}

func TestAReservedVolumeIsSkippedByOtherClaimsOnly(t *testing.T) {
	idx := index.New()
	idx.Upsert(freePV("small", "1Gi"))
	idx.Upsert(freePV("big", "5Gi"))
	a, b := rwoClaim("ns", "a", "1Gi"), rwoClaim("ns", "b", "1Gi")

	if !idx.Reserve("small", "ns/a") {
		t.Fatal("reserve failed")
	}
	if idx.Reserve("small", "ns/b") {
		t.Error("a second claim could reserve a held PV")
	}
	if !idx.Reserve("small", "ns/a") {
		t.Error("re-reserving for the same claim failed")
	}
	if idx.Reserve("missing", "ns/a") {
		t.Error("reserved an unknown PV")
	}
	if got := name(idx.FindBest(a, false)); got != "small" {
		t.Errorf("holder finds %q, want its reservation small", got)
	}
	if got := name(idx.FindBest(b, false)); got != "big" {
		t.Errorf("other claim finds %q, want big", got)
	}
	idx.Release("small")
	if got := name(idx.FindBest(b, false)); got != "small" {
		t.Errorf("after release other claim finds %q, want small", got)
	}
	if holder, ok := idx.ReservedBy("small"); ok {
		t.Errorf("still reserved by %s", holder)
	}
}

func TestUpsertMovesAVolumeOutOfTheFreeTrees(t *testing.T) {
	idx := index.New()
	pv := freePV("pv1", "1Gi")
	idx.Upsert(pv)
	claim := rwoClaim("ns", "c", "1Gi")
	if name(idx.FindBest(claim, false)) != "pv1" {
		t.Fatal("free PV not found")
	}
	bound := pv.DeepCopy()
	bound.Spec.ClaimRef = &v1.ObjectReference{Namespace: "ns", Name: "other", UID: "x"}
	idx.Upsert(bound)
	if got := idx.FindBest(claim, false); got != nil {
		t.Errorf("bound PV still found: %s", got.Name)
	}
	idx.Delete("pv1")
	if idx.Len() != 0 || idx.Get("pv1") != nil {
		t.Errorf("deleted PV still held")
	}
}

// A write's answer can be handled after the informer delivered a later
// change of the same PV; the older copy must not make a PV being deleted
// free again.
func TestUpsertIgnoresAnOlderCopyOfTheVolumeHeld(t *testing.T) {
	idx := index.New()
	available := freePV("doomed", "1Gi")
	available.UID, available.ResourceVersion = "uid-doomed", "10"
	deleting := available.DeepCopy()
	deleting.ResourceVersion = "11"
	deleting.DeletionTimestamp = &metav1.Time{}
	idx.Upsert(deleting)
	idx.Upsert(available)
	if got := idx.Get("doomed"); got.ResourceVersion != "11" {
		t.Errorf("index holds version %s, want 11", got.ResourceVersion)
	}
	if got := idx.FindBest(rwoClaim("ns", "c", "1Gi"), false); got != nil {
		t.Errorf("a PV being deleted is offered: %s", got.Name)
	}
	recreated := freePV("doomed", "1Gi")
	recreated.UID, recreated.ResourceVersion = "uid-again", "5"
	idx.Upsert(recreated)
	if got := name(idx.FindBest(rwoClaim("ns", "c", "1Gi"), false)); got != "doomed" {
		t.Errorf("a re-created PV (new UID, any version) is not taken in: found %q", got)
	}
}

func TestCandidatesAreTheClaimsClassPlusItsPreBoundVolumes(t *testing.T) {
	idx := index.New()
	gold := freePV("gold", "1Gi")
	gold.Spec.StorageClassName = "gold"
	mine := freePV("mine", "1Gi")
	mine.Spec.StorageClassName = "gold"
	mine.Spec.ClaimRef = &v1.ObjectReference{Namespace: "ns", Name: "c"}
	for _, pv := range []*v1.PersistentVolume{freePV("b", "1Gi"), freePV("a", "1Gi"), gold, mine} {
		idx.Upsert(pv)
	}
	var got []string
	for _, pv := range idx.Candidates(rwoClaim("ns", "c", "1Gi")) {
		got = append(got, pv.Name)
	}
	if want := []string{"a", "b", "mine"}; !equal(got, want) {
		t.Errorf("candidates %v, want %v", got, want)
	}
	if len(idx.All()) != 4 {
		t.Errorf("All() has %d PVs, want 4", len(idx.All()))
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
