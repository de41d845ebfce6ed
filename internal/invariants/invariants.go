package invariants

import (
	"fmt"
	"iter"
	"slices"
	"sort"

	groupv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
)

// State is what Check looks at.
type State struct {
	Claims      []v1.PersistentVolumeClaim
	PVs         []v1.PersistentVolume
	Attachments []storagev1.VolumeAttachment
	// Backends are the volumes each driver instance holds. A PV of a driver
	// with no Backend here is not compared with any backend.
	Backends []Backend
	// Snapshots and Contents are the cluster's VolumeSnapshots and
	// VolumeSnapshotContents; SnapshotsRead says they were read (empty
	// lists when the snapshot API is not installed): only then are the
	// snapshot promises checked.
	Snapshots     []snapv1.VolumeSnapshot
	Contents      []snapv1.VolumeSnapshotContent
	SnapshotsRead bool
	// GroupContents are the VolumeGroupSnapshotContents (their members'
	// backend snapshots are theirs).
	GroupContents []groupv1.VolumeGroupSnapshotContent
}

// Backend is one driver instance's volumes.
type Backend struct {
	Driver string
	// Node is the node a node-local driver serves ("" for a driver whose
	// volumes every node reaches): its volumes belong to PVs whose node
	// affinity names this node under TopologyKey.
	Node        string
	TopologyKey string
	VolumeIDs   []string
	// Attaches says the driver attaches volumes (ControllerPublish); then
	// Published are the nodes each volume is attached to, by volume ID.
	Attaches  bool
	Published map[string][]string
	// Capacity is each volume's size in bytes, by volume ID, as the driver
	// lists it (0: not reported).
	Capacity map[string]int64
	// Parameters are the mutable parameters the driver holds for each
	// volume, by volume ID, where the test knows them (CSI lists none).
	Parameters map[string]map[string]string
	// ListsSnapshots says the driver instance listed its snapshots
	// (LIST_SNAPSHOTS); Snapshots are then every one it holds.
	ListsSnapshots bool
	Snapshots      []BackendSnapshot
}

// Expect is what the test knows beyond the cluster's state.
type Expect struct {
	// Retained are the volume handles of Retain PVs the test created or saw
	// (by driver): each must still exist on its backend.
	Retained []Volume
	// Deleted are claims the test deleted, with the volume each was bound
	// to when deleted (if any).
	Deleted []DeletedClaim
	// Left is what the cluster already broke before the test began (an
	// earlier test's, which reported it): not reported again.
	Left Leftovers
	// DeletedSnapshots are VolumeSnapshots the test deleted.
	DeletedSnapshots []DeletedSnapshot
}

// Leftovers are the backend volumes there before a test, which it need not
// account for, and the PVs (by UID) whose backend volume was already gone.
type Leftovers struct {
	Volumes []Volume
	Broken  []types.UID
	// Snapshots are the backend snapshots there before the test (driver
	// and snapshot ID).
	Snapshots []Volume
}

// Volume is a backend volume (or snapshot): its driver and handle.
type Volume struct {
	Driver, Handle string
}

// DeletedClaim is a claim the test deleted.
type DeletedClaim struct {
	Namespace, Name string
	UID             types.UID
	// PV is the volume the claim was bound to ("" if none yet), Volume its
	// backend volume and Policy the PV's reclaim policy then.
	PV     string
	Volume Volume
	Policy v1.PersistentVolumeReclaimPolicy
}

// Check returns every broken invariant, one sentence each, sorted.
func Check(s State, e Expect) []string {
	var out []string
	out = append(out, bindings(s)...)
	out = append(out, terminating(s)...)
	out = append(out, Backends(s, e.Left)...)
	out = append(out, retained(s, e)...)
	out = append(out, reclaimed(s, e)...)
	out = append(out, attachments(s, e.Left)...)
	out = append(out, snapshots(s, e)...)
	sort.Strings(out)
	return out
}

// Bindings are the binder's invariants alone: no PV the volume of two
// Bound claims, every Bound claim's PV there and pointing back.
func Bindings(claims []v1.PersistentVolumeClaim, pvs []v1.PersistentVolume) []string {
	return bindings(State{Claims: claims, PVs: pvs})
}

func bindings(s State) []string {
	byName := pvsByName(s.PVs)
	var out []string
	owner := map[string]string{}
	for _, c := range s.Claims {
		if c.Status.Phase != v1.ClaimBound {
			continue
		}
		key := c.Namespace + "/" + c.Name
		if prev, dup := owner[c.Spec.VolumeName]; dup {
			out = append(out, fmt.Sprintf("PV %s is the volume of two Bound claims: %s and %s", c.Spec.VolumeName, prev, key))
		}
		owner[c.Spec.VolumeName] = key
		pv := byName[c.Spec.VolumeName]
		switch {
		case pv == nil:
			out = append(out, fmt.Sprintf("Bound claim %s names PV %q, which does not exist", key, c.Spec.VolumeName))
		case pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != c.UID:
			out = append(out, fmt.Sprintf("Bound claim %s: its PV %s does not point back (claimRef %s)", key, pv.Name, refString(pv.Spec.ClaimRef)))
		}
	}
	return out
}

// terminating reports objects whose deletion never finished.
func terminating(s State) []string {
	var out []string
	for _, c := range s.Claims {
		if c.DeletionTimestamp != nil {
			out = append(out, fmt.Sprintf("claim %s/%s is still Terminating (finalizers %v)", c.Namespace, c.Name, c.Finalizers))
		}
	}
	for _, pv := range s.PVs {
		if pv.DeletionTimestamp != nil {
			out = append(out, fmt.Sprintf("PV %s is still Terminating (finalizers %v)", pv.Name, pv.Finalizers))
		}
	}
	return out
}

// Before is what s already breaks, for a test beginning on it: every
// backend volume and every PV whose volume is gone.
func Before(s State) Leftovers {
	var out Leftovers
	for v := range s.held() {
		out.Volumes = append(out.Volumes, v)
	}
	for _, pv := range goneVolumes(s) {
		out.Broken = append(out.Broken, pv.UID)
	}
	for _, b := range s.Backends {
		for _, snap := range b.Snapshots {
			out.Snapshots = append(out.Snapshots, Volume{b.Driver, snap.ID})
		}
	}
	return out
}

// Backends are the backends' invariants alone: every PV's backend volume
// is there (on the node its affinity names), and every backend volume
// belongs to a PV, but for what left names. A PV being deleted may have
// lost its volume already (the provisioner deletes the volume first): one
// that stays is terminating's to report.
func Backends(s State, left Leftovers) []string {
	broken := map[types.UID]bool{}
	for _, uid := range left.Broken {
		broken[uid] = true
	}
	var out []string
	for _, g := range goneVolumes(s) {
		if !broken[g.UID] {
			out = append(out, fmt.Sprintf("PV %s (phase %s, claim %s): its backend volume %s of %s is gone%s",
				g.Name, g.Status.Phase, refString(g.Spec.ClaimRef), g.Spec.CSI.VolumeHandle, g.Spec.CSI.Driver, onNode(g.node)))
		}
	}
	earlier := map[Volume]bool{}
	for _, v := range left.Volumes {
		earlier[v] = true
	}
	want := wantedVolumes(s)
	for _, b := range s.Backends {
		for _, id := range b.VolumeIDs {
			v := Volume{b.Driver, id}
			if node, ok := want[v]; (!ok || node != b.Node) && !earlier[v] {
				out = append(out, fmt.Sprintf("backend volume %s of %s%s has no PV", id, b.Driver, onNode(b.Node)))
			}
		}
	}
	return out
}

// gone is a PV whose backend volume is not where it must be: on node (""
// for a driver whose volumes every node reaches).
type gone struct {
	*v1.PersistentVolume
	node string
}

// goneVolumes are the PVs, not being deleted, of a driver some Backend
// lists, whose volume that driver does not hold where the PV says.
func goneVolumes(s State) []gone {
	held := map[Volume][]string{} // where each volume is, by backend node
	for _, b := range s.Backends {
		for _, id := range b.VolumeIDs {
			v := Volume{b.Driver, id}
			held[v] = append(held[v], b.Node)
		}
	}
	var out []gone
	for i := range s.PVs {
		pv := &s.PVs[i]
		csi := pv.Spec.CSI
		if csi == nil || !s.lists(csi.Driver) || pv.DeletionTimestamp != nil {
			continue
		}
		node := pvNode(pv, s.Backends, csi.Driver)
		if !slices.Contains(held[Volume{csi.Driver, csi.VolumeHandle}], node) {
			out = append(out, gone{pv, node})
		}
	}
	return out
}

// wantedVolumes are the volumes the PVs of listed drivers name, each with
// the node it must be on.
func wantedVolumes(s State) map[Volume]string {
	want := map[Volume]string{}
	for i := range s.PVs {
		pv := &s.PVs[i]
		if csi := pv.Spec.CSI; csi != nil && s.lists(csi.Driver) {
			want[Volume{csi.Driver, csi.VolumeHandle}] = pvNode(pv, s.Backends, csi.Driver)
		}
	}
	return want
}

// lists says whether some Backend of s is driver's: only then are its PVs
// compared with backends.
func (s State) lists(driver string) bool {
	return slices.ContainsFunc(s.Backends, func(b Backend) bool { return b.Driver == driver })
}

// attachments compares the backends' attachments with the
// VolumeAttachments, both ways: a volume attached to a node without an
// attached VolumeAttachment for it there is a leaked attachment (a
// detach that never reached the driver), and an attached
// VolumeAttachment the driver does not know is a lie to the node. A
// volume there before the test (left) is not the test's: its attachments
// are not checked against VolumeAttachments the test never made.
func attachments(s State, left Leftovers) []string {
	attaches := map[string]bool{}
	published := map[attached]bool{}
	for _, b := range s.Backends {
		if !b.Attaches {
			continue
		}
		attaches[b.Driver] = true
		for id, nodes := range b.Published {
			for _, node := range nodes {
				published[attached{Volume{b.Driver, id}, node}] = true
			}
		}
	}
	handles := map[string]Volume{}
	for _, pv := range s.PVs {
		if pv.Spec.CSI != nil {
			handles[pv.Name] = Volume{pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle}
		}
	}
	var out []string
	recorded := map[attached]bool{}
	for _, va := range s.Attachments {
		src := va.Spec.Source.PersistentVolumeName
		if !attaches[va.Spec.Attacher] || src == nil {
			continue
		}
		a := attached{handles[*src], va.Spec.NodeName}
		if id := va.Annotations[nodeIDAnnotation]; id != "" {
			a.node = id
		}
		recorded[a] = true
		if va.Status.Attached && !published[a] {
			out = append(out, fmt.Sprintf("VolumeAttachment %s says PV %s is attached to %s, yet %s has it not attached there", va.Name, *src, a.node, va.Spec.Attacher))
		}
	}
	for a := range published {
		if !recorded[a] && !slices.Contains(left.Volumes, a.vol) {
			out = append(out, fmt.Sprintf("backend volume %s of %s is attached to %s, yet no VolumeAttachment is there for it", a.vol.Handle, a.vol.Driver, a.node))
		}
	}
	return out
}

// nodeIDAnnotation is the driver's ID of the node, which the attacher
// puts on a VolumeAttachment.
const nodeIDAnnotation = "csi.alpha.kubernetes.io/node-id"

// attached is a volume attached to a node (by the driver's ID of it).
type attached struct {
	vol  Volume
	node string
}

// retained reports Retain volumes that are gone from their backend.
func retained(s State, e Expect) []string {
	held := s.held()
	var out []string
	for _, v := range e.Retained {
		if !held[v] {
			out = append(out, fmt.Sprintf("Retain volume %s of %s was deleted", v.Handle, v.Driver))
		}
	}
	return out
}

// reclaimed reports claims deleted under a Delete policy whose PV or
// backend volume is still there, and any Delete PV whose claim is gone.
func reclaimed(s State, e Expect) []string {
	byName := pvsByName(s.PVs)
	claims := map[types.UID]bool{}
	for _, c := range s.Claims {
		claims[c.UID] = true
	}
	held := s.held()
	var out []string
	for _, d := range e.Deleted {
		if d.Policy != v1.PersistentVolumeReclaimDelete || d.PV == "" {
			continue
		}
		if pv := byName[d.PV]; pv != nil && pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.UID == d.UID {
			out = append(out, fmt.Sprintf("claim %s/%s was deleted, yet its Delete PV %s is still there (phase %s)", d.Namespace, d.Name, d.PV, pv.Status.Phase))
		}
		if d.Volume.Handle != "" && held[d.Volume] {
			out = append(out, fmt.Sprintf("claim %s/%s was deleted, yet the backend volume %s of its Delete PV %s is still there", d.Namespace, d.Name, d.Volume.Handle, d.PV))
		}
	}
	reported := map[string]bool{}
	for _, d := range e.Deleted {
		reported[d.PV] = true
	}
	for _, pv := range s.PVs {
		ref := pv.Spec.ClaimRef
		if pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete || ref == nil || ref.UID == "" || claims[ref.UID] || reported[pv.Name] {
			continue
		}
		out = append(out, fmt.Sprintf("PV %s (Delete, phase %s): its claim %s is gone, yet it was not reclaimed", pv.Name, pv.Status.Phase, refString(ref)))
	}
	return out
}

// pvNode is the node of pv's volume among driver's node-local backends:
// the value of the backends' topology key in its node affinity, "" when
// the driver's backend serves every node.
func pvNode(pv *v1.PersistentVolume, backends []Backend, driver string) string {
	key := ""
	for _, b := range backends {
		if b.Driver == driver && b.Node != "" {
			key = b.TopologyKey
		}
	}
	if key == "" || pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return ""
	}
	for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, expr := range term.MatchExpressions {
			if expr.Key == key && expr.Operator == v1.NodeSelectorOpIn && len(expr.Values) == 1 {
				return expr.Values[0]
			}
		}
	}
	return ""
}

// held is every volume some backend holds.
func (s State) held() map[Volume]bool {
	out := map[Volume]bool{}
	for _, b := range s.Backends {
		for _, id := range b.VolumeIDs {
			out[Volume{b.Driver, id}] = true
		}
	}
	return out
}

// boundClaims yields every Bound claim whose PV is there and names a
// listed driver's CSI volume, with that PV: the claims Resized and
// Attributes hold to their promises at rest.
func (s State) boundClaims() iter.Seq2[*v1.PersistentVolumeClaim, *v1.PersistentVolume] {
	return func(yield func(*v1.PersistentVolumeClaim, *v1.PersistentVolume) bool) {
		byName := pvsByName(s.PVs)
		for i := range s.Claims {
			c := &s.Claims[i]
			pv := byName[c.Spec.VolumeName]
			if c.Status.Phase != v1.ClaimBound || pv == nil || pv.Spec.CSI == nil || !s.lists(pv.Spec.CSI.Driver) {
				continue
			}
			if !yield(c, pv) {
				return
			}
		}
	}
}

func pvsByName(pvs []v1.PersistentVolume) map[string]*v1.PersistentVolume {
	out := make(map[string]*v1.PersistentVolume, len(pvs))
	for i := range pvs {
		out[pvs[i].Name] = &pvs[i]
	}
	return out
}

func refString(ref *v1.ObjectReference) string {
	if ref == nil {
		return "none"
	}
	return fmt.Sprintf("%s/%s (uid %s)", ref.Namespace, ref.Name, ref.UID)
}

func onNode(node string) string {
	if node == "" {
		return ""
	}
	return " on " + node
}
