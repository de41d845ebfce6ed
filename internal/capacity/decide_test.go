package capacity

import (
	"fmt"
	"slices"
	"testing"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

const gi = int64(1) << 30

var (
	owner = &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "volplane-controller", UID: "owner-uid", Controller: ptr.To(true)}
	id    = Identity{Driver: driver, ManagedBy: "volplane", Namespace: "kube-system", Owner: owner}
	segA  = SegmentOf(map[string]string{"topology.volplane.io/node": "a"})
	segB  = SegmentOf(map[string]string{"topology.volplane.io/node": "b"})
)

// object is a published object for class on seg; mods change it.
func object(name, class string, seg Segment, capBytes int64, mods ...func(*storagev1.CSIStorageCapacity)) *storagev1.CSIStorageCapacity {
	o := newObject(id, Item{Segment: seg, Class: class}, capBytes, ptr.To(capBytes))
	o.Name, o.UID = name, types.UID(name+"-uid")
	o.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, len(name), 0, time.UTC))
	for _, m := range mods {
		m(o)
	}
	return o
}

func answer(avail int64) Answer { return Answer{Available: avail, Maximum: ptr.To(avail)} }

func summary(p Plan) []string {
	var out []string
	for _, c := range p.Create {
		out = append(out, fmt.Sprintf("create %s@%s %d", c.StorageClassName, c.NodeTopology.MatchLabels["topology.volplane.io/node"], c.Capacity.Value()/gi))
	}
	for _, u := range p.Update {
		out = append(out, fmt.Sprintf("update %s %d", u.Name, u.Capacity.Value()/gi))
	}
	for _, d := range p.Delete {
		out = append(out, fmt.Sprintf("delete %s %s", d.Object.Name, d.Reason))
	}
	return out
}

func TestDecide(t *testing.T) {
	items := []Item{{Segment: segA, Class: "wffc"}, {Segment: segB, Class: "wffc"}}
	both := map[string]Answer{items[0].Key(): answer(4 * gi), items[1].Key(): answer(2 * gi)}
	cases := []struct {
		name     string
		items    []Item
		answers  map[string]Answer
		inFlight map[string]int64
		existing []*storagev1.CSIStorageCapacity
		want     []string
	}{
		{"nothing yet: one object per answered item", items, both, nil, nil,
			[]string{"create wffc@a 4", "create wffc@b 2"}},
		{"an item without an answer is not created", items, map[string]Answer{items[0].Key(): answer(4 * gi)}, nil, nil,
			[]string{"create wffc@a 4"}},
		{"objects that publish the answer are not written", items, both, nil,
			[]*storagev1.CSIStorageCapacity{object("x", "wffc", segA, 4*gi), object("y", "wffc", segB, 2*gi)}, nil},
		{"a changed answer updates its object only", items, both, nil,
			[]*storagev1.CSIStorageCapacity{object("x", "wffc", segA, 5*gi), object("y", "wffc", segB, 2*gi)},
			[]string{"update x 4"}},
		{"bytes in flight are taken off what is published", items, both, map[string]int64{items[0].Key(): gi},
			[]*storagev1.CSIStorageCapacity{object("x", "wffc", segA, 4*gi), object("y", "wffc", segB, 2*gi)},
			[]string{"update x 3"}},
		{"a class or segment gone: its object is deleted", items[:1], both, nil,
			[]*storagev1.CSIStorageCapacity{object("x", "wffc", segA, 4*gi), object("y", "wffc", segB, 2*gi), object("z", "gone", segA, gi)},
			[]string{"delete y Obsolete", "delete z Obsolete"}},
		{"the older object of an item stays, the younger is a duplicate", items, both, nil,
			[]*storagev1.CSIStorageCapacity{object("yy", "wffc", segB, 2*gi), object("x", "wffc", segA, 4*gi), object("y", "wffc", segB, 2*gi)},
			[]string{"delete yy Duplicate"}},
		{"an object without an answer yet is kept as it is", items, map[string]Answer{}, nil,
			[]*storagev1.CSIStorageCapacity{object("x", "wffc", segA, 9*gi)}, nil},
		{"objects of another driver, manager or namespace are never touched", items, both, nil,
			[]*storagev1.CSIStorageCapacity{
				object("o1", "wffc", segA, gi, func(o *storagev1.CSIStorageCapacity) { o.Labels[DriverNameLabel] = "other" }),
				object("o2", "wffc", segA, gi, func(o *storagev1.CSIStorageCapacity) { o.Labels[ManagedByLabel] = "external-provisioner" }),
				object("o3", "wffc", segA, gi, func(o *storagev1.CSIStorageCapacity) { o.Namespace = "tenant" }),
			},
			[]string{"create wffc@a 4", "create wffc@b 2"}},
		{"an object with our labels and another controller is deleted, not adopted", items[:1], both, nil,
			[]*storagev1.CSIStorageCapacity{object("f", "wffc", segA, 100*gi, func(o *storagev1.CSIStorageCapacity) {
				o.OwnerReferences = []metav1.OwnerReference{{Kind: "Deployment", Name: "evil", UID: "evil", Controller: ptr.To(true)}}
			})},
			[]string{"create wffc@a 4", "delete f ForeignOwner"}},
		{"an object of ours without the owner is adopted (owner added), as the reference does", items[:1], both, nil,
			[]*storagev1.CSIStorageCapacity{object("x", "wffc", segA, 4*gi, func(o *storagev1.CSIStorageCapacity) { o.OwnerReferences = nil })},
			[]string{"update x 4"}},
		{"a nodeTopology with expressions matches no item", items[:1], both, nil,
			[]*storagev1.CSIStorageCapacity{object("x", "wffc", segA, 4*gi, func(o *storagev1.CSIStorageCapacity) {
				o.NodeTopology.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "k", Operator: metav1.LabelSelectorOpExists}}
			})},
			[]string{"create wffc@a 4", "delete x Obsolete"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := Decide(Facts{Identity: id, Items: tc.items, Answers: tc.answers, InFlight: tc.inFlight, Existing: tc.existing})
			if got := summary(p); !slices.Equal(got, tc.want) {
				t.Errorf("plan = %q, want %q", got, tc.want)
			}
		})
	}
}

// The created object has the reference's shape.
func TestDecideCreatesTheReferenceShape(t *testing.T) {
	it := Item{Segment: segA, Class: "wffc"}
	p := Decide(Facts{Identity: id, Items: []Item{it}, Answers: map[string]Answer{it.Key(): {Available: 3 * gi, Maximum: ptr.To(2 * gi)}}})
	if len(p.Create) != 1 {
		t.Fatalf("plan = %q", summary(p))
	}
	o := p.Create[0]
	switch {
	case o.Name != "" || o.GenerateName != "csisc-" || o.Namespace != "kube-system":
		t.Errorf("name %q generateName %q namespace %q", o.Name, o.GenerateName, o.Namespace)
	case o.Labels[DriverNameLabel] != driver || o.Labels[ManagedByLabel] != "volplane" || len(o.Labels) != 2:
		t.Errorf("labels = %v", o.Labels)
	case len(o.OwnerReferences) != 1 || o.OwnerReferences[0].UID != owner.UID:
		t.Errorf("owners = %v", o.OwnerReferences)
	case o.StorageClassName != "wffc" || len(o.NodeTopology.MatchLabels) != 1 || o.NodeTopology.MatchLabels["topology.volplane.io/node"] != "a":
		t.Errorf("class %q topology %v", o.StorageClassName, o.NodeTopology)
	case o.Capacity.Cmp(*resource.NewQuantity(3*gi, resource.BinarySI)) != 0 || o.MaximumVolumeSize.Value() != 2*gi:
		t.Errorf("capacity %v maximum %v", o.Capacity, o.MaximumVolumeSize)
	}
	noMax := Decide(Facts{Identity: Identity{Driver: driver, ManagedBy: "volplane", Namespace: "ns"}, Items: []Item{it},
		Answers: map[string]Answer{it.Key(): {Available: gi}}})
	if o := noMax.Create[0]; o.MaximumVolumeSize != nil || o.OwnerReferences != nil {
		t.Errorf("without a maximum or an owner: maximum %v owners %v", o.MaximumVolumeSize, o.OwnerReferences)
	}
}

func TestPublishedAndCheck(t *testing.T) {
	cases := []struct {
		name             string
		a                Answer
		inFlight, bytes  int64
		wantCap, wantMax int64
		fit              Fit
	}{
		{"nothing in flight: the driver's answer", Answer{Available: 4 * gi, Maximum: ptr.To(4 * gi)}, 0, 4 * gi, 4 * gi, 4 * gi, Fits},
		{"in flight: both less", Answer{Available: 4 * gi, Maximum: ptr.To(4 * gi)}, 3 * gi, 2 * gi, gi, gi, NoRoom},
		{"a maximum below the capacity stays until the capacity left is lower", Answer{Available: 4 * gi, Maximum: ptr.To(gi)}, 2 * gi, gi, 2 * gi, gi, Fits},
		{"a maximum above the capacity (overcommit) goes down by what is in flight", Answer{Available: gi, Maximum: ptr.To(8 * gi)}, 2 * gi, 6 * gi, 0, 6 * gi, Fits},
		{"never below zero", Answer{Available: gi, Maximum: ptr.To(gi)}, 5 * gi, 1, 0, 0, NoRoom},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, m := Published(tc.a, tc.inFlight)
			if c != tc.wantCap || m == nil || *m != tc.wantMax {
				t.Errorf("published = %d, %v; want %d, %d", c, m, tc.wantCap, tc.wantMax)
			}
			if v := Check(tc.a, true, tc.inFlight, tc.bytes); v.Fit != tc.fit {
				t.Errorf("check = %s, want %s", v, tc.fit)
			}
		})
	}
	if v := Check(Answer{}, false, 0, gi); v.Fit != Unknown {
		t.Errorf("without an answer: %s, want %s", v, Unknown)
	}
	if c, m := Published(Answer{Available: 2 * gi}, gi); c != gi || m != nil {
		t.Errorf("no maximum: %d %v", c, m)
	}
	if v := Check(Answer{Available: 2 * gi}, true, gi, 2*gi); v.Fit != NoRoom || v.Room != gi {
		t.Errorf("no maximum: room is the capacity left: %s", v)
	}
}
