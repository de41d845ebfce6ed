package invariants

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const (
	local   = "local.csi"
	network = "network.csi"
	topo    = "topology/node"
)

func claim(name string, uid types.UID, pv string) v1.PersistentVolumeClaim {
	c := v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid}}
	c.Spec.VolumeName = pv
	c.Status.Phase = v1.ClaimBound
	return c
}

func pv(name, driver, handle, node string, policy v1.PersistentVolumeReclaimPolicy, claimUID types.UID) v1.PersistentVolume {
	p := v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}}
	p.Spec.PersistentVolumeReclaimPolicy = policy
	p.Spec.CSI = &v1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: handle}
	if claimUID != "" {
		p.Spec.ClaimRef = &v1.ObjectReference{Namespace: "ns", Name: "c-" + string(claimUID), UID: claimUID}
	}
	if node != "" {
		p.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: topo, Operator: v1.NodeSelectorOpIn, Values: []string{node}}}}}}}
	}
	return p
}

// healthy is a cluster that keeps every promise: a local and a network
// volume bound, a Released Retain volume, each backed where its PV says.
func healthy() State {
	return State{
		Claims: []v1.PersistentVolumeClaim{claim("a", "ua", "pv-a"), claim("b", "ub", "pv-b")},
		PVs: []v1.PersistentVolume{
			pv("pv-a", local, "vol-a", "node-1", v1.PersistentVolumeReclaimDelete, "ua"),
			pv("pv-b", network, "vol-b", "", v1.PersistentVolumeReclaimDelete, "ub"),
			pv("pv-r", network, "vol-r", "", v1.PersistentVolumeReclaimRetain, "gone"),
		},
		Backends: []Backend{
			{Driver: local, Node: "node-1", TopologyKey: topo, VolumeIDs: []string{"vol-a"}},
			{Driver: local, Node: "node-2", TopologyKey: topo},
			{Driver: network, VolumeIDs: []string{"vol-b", "vol-r"}, Attaches: true, Published: map[string][]string{"vol-b": {"node-1"}}},
		},
		Attachments: []storagev1.VolumeAttachment{attachment("pv-b", "node-1", true)},
	}
}

func attachment(pv, node string, attached bool) storagev1.VolumeAttachment {
	va := storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va-" + pv + "-" + node}}
	va.Spec.Attacher, va.Spec.NodeName, va.Spec.Source.PersistentVolumeName = network, node, &pv
	va.Status.Attached = attached
	return va
}

func TestAHealthyClusterBreaksNoInvariant(t *testing.T) {
	e := Expect{Retained: []Volume{{network, "vol-r"}}, Deleted: []DeletedClaim{
		{Namespace: "ns", Name: "d", UID: "ud", PV: "pv-d", Volume: Volume{local, "vol-d"}, Policy: v1.PersistentVolumeReclaimDelete}}}
	if got := Check(healthy(), e); len(got) != 0 {
		t.Fatalf("violations in a healthy cluster: %q", got)
	}
}

func TestEachBrokenPromiseIsReportedWithItsObjects(t *testing.T) {
	for name, tc := range map[string]struct {
		breakIt func(*State, *Expect)
		want    string
	}{
		"two claims on one PV": {func(s *State, _ *Expect) { s.Claims = append(s.Claims, claim("x", "ux", "pv-a")) },
			"PV pv-a is the volume of two Bound claims: ns/a and ns/x"},
		"a Bound claim without its PV": {func(s *State, _ *Expect) { s.Claims[0].Spec.VolumeName = "pv-none" },
			`Bound claim ns/a names PV "pv-none", which does not exist`},
		"a PV not pointing back": {func(s *State, _ *Expect) { s.PVs[0].Spec.ClaimRef.UID = "other" },
			"Bound claim ns/a: its PV pv-a does not point back"},
		"a backend volume without a PV": {func(s *State, _ *Expect) { s.Backends[2].VolumeIDs = append(s.Backends[2].VolumeIDs, "vol-x") },
			"backend volume vol-x of network.csi has no PV"},
		"a volume on the wrong node": {func(s *State, _ *Expect) { s.Backends[1].VolumeIDs = []string{"vol-a"} },
			"backend volume vol-a of local.csi on node-2 has no PV"},
		"a PV whose volume is gone": {func(s *State, _ *Expect) { s.Backends[0].VolumeIDs = nil },
			"PV pv-a (phase , claim ns/c-ua (uid ua)): its backend volume vol-a of local.csi is gone on node-1"},
		"a Retain volume deleted": {func(s *State, e *Expect) { e.Retained = append(e.Retained, Volume{network, "vol-old"}) },
			"Retain volume vol-old of network.csi was deleted"},
		"a deleted claim's Delete PV left": {func(s *State, e *Expect) {
			s.Claims = s.Claims[1:]
			e.Deleted = append(e.Deleted, DeletedClaim{Namespace: "ns", Name: "a", UID: "ua", PV: "pv-a", Volume: Volume{local, "vol-a"}, Policy: v1.PersistentVolumeReclaimDelete})
		}, "claim ns/a was deleted, yet its Delete PV pv-a is still there"},
		"a Delete PV whose claim is gone": {func(s *State, _ *Expect) { s.Claims = s.Claims[1:] },
			"PV pv-a (Delete, phase ): its claim ns/c-ua (uid ua) is gone, yet it was not reclaimed"},
		"an attachment without a VolumeAttachment": {func(s *State, _ *Expect) { s.Backends[2].Published["vol-r"] = []string{"node-2"} },
			"backend volume vol-r of network.csi is attached to node-2, yet no VolumeAttachment is there for it"},
		"a VolumeAttachment the driver does not know": {func(s *State, _ *Expect) { s.Backends[2].Published = nil },
			"VolumeAttachment va-pv-b-node-1 says PV pv-b is attached to node-1, yet network.csi has it not attached there"},
		"a claim stuck Terminating": {func(s *State, _ *Expect) { s.Claims[1].DeletionTimestamp = &metav1.Time{} },
			"claim ns/b is still Terminating"},
	} {
		t.Run(name, func(t *testing.T) {
			s, e := healthy(), Expect{}
			tc.breakIt(&s, &e)
			got := Check(s, e)
			if !containsPrefix(got, tc.want) {
				t.Errorf("violations %q, want one starting %q", got, tc.want)
			}
		})
	}
}

func containsPrefix(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// A volume the driver held before the test is not the test's: that the
// driver says it is attached where the test made no VolumeAttachment is
// not the test's doing (the e2e mock driver reports every volume it was
// born with as attached to its node).
func TestAnAttachmentOfAVolumeFromBeforeIsNotTheTests(t *testing.T) {
	s := healthy()
	s.Backends[2].VolumeIDs = append(s.Backends[2].VolumeIDs, "vol-old")
	s.Backends[2].Published["vol-old"] = []string{"node-2"}
	if got := Check(s, Expect{}); !containsPrefix(got, "backend volume vol-old of network.csi is attached to node-2, yet no VolumeAttachment") {
		t.Fatalf("without leftovers: %q, want the attachment reported", got)
	}
	left := Leftovers{Volumes: []Volume{{Driver: network, Handle: "vol-old"}}}
	if got := Check(s, Expect{Left: left}); len(got) != 0 {
		t.Errorf("with vol-old left from before: %q", got)
	}
}
