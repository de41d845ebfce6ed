// Package invariants checks a cluster's volumes against the promises
// volplane never breaks, whatever crashed, timed out or raced on the way:
// no PV bound to two claims, no Bound claim without its PV, no backend
// volume without a PV and no PV without its backend volume, no Retain
// volume deleted, every claim deleted under a Delete policy fully
// reclaimed, nothing stuck Terminating. It is meant for the end of soak and
// e2e tests, once everything is quiescent: Read takes the state, Check
// decides purely on it. Outside and Unchanged add the promise to a tenant:
// what lies outside their namespace is the same after they acted.
//
// Nouns: State (claims, PVs and what each backend holds), Backend (one
// driver instance's volumes: a node-local driver's on its node, or a
// network driver's, with what it has attached where), Expect (what the test itself knows happened: volumes
// it created with Retain, claims it deleted).
package invariants

import (
	"fmt"
	"slices"
	"sort"

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
}

// Expect is what the test knows beyond the cluster's state.
type Expect struct {
	// Retained are the volume handles of Retain PVs the test created or saw
	// (by driver): each must still exist on its backend.
	Retained []Volume
	// Deleted are claims the test deleted, with the volume each was bound
	// to when deleted (if any).
	Deleted []DeletedClaim
}

// Volume is a backend volume: its driver and handle.
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
	out = append(out, backends(s)...)
	out = append(out, retained(s, e)...)
	out = append(out, reclaimed(s, e)...)
	out = append(out, attachments(s)...)
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

// backends compares PVs with what the backends hold, both ways.
func backends(s State) []string {
	var out []string
	checked := map[string]bool{}
	held := map[Volume][]string{} // where each volume is, by backend node
	for _, b := range s.Backends {
		checked[b.Driver] = true
		for _, id := range b.VolumeIDs {
			v := Volume{b.Driver, id}
			held[v] = append(held[v], b.Node)
		}
	}
	want := map[Volume]string{} // the node each PV's volume must be on
	for _, pv := range s.PVs {
		csi := pv.Spec.CSI
		if csi == nil || !checked[csi.Driver] {
			continue
		}
		v := Volume{csi.Driver, csi.VolumeHandle}
		node := pvNode(&pv, s.Backends, csi.Driver)
		want[v] = node
		if !slices.Contains(held[v], node) {
			out = append(out, fmt.Sprintf("PV %s (phase %s, claim %s): its backend volume %s of %s is gone%s",
				pv.Name, pv.Status.Phase, refString(pv.Spec.ClaimRef), v.Handle, v.Driver, onNode(node)))
		}
	}
	for _, b := range s.Backends {
		for _, id := range b.VolumeIDs {
			v := Volume{b.Driver, id}
			if node, ok := want[v]; !ok || node != b.Node {
				out = append(out, fmt.Sprintf("backend volume %s of %s%s has no PV", id, b.Driver, onNode(b.Node)))
			}
		}
	}
	return out
}

// attachments compares the backends' attachments with the
// VolumeAttachments, both ways: a volume attached to a node without an
// attached VolumeAttachment for it there is a leaked attachment (a
// detach that never reached the driver), and an attached
// VolumeAttachment the driver does not know is a lie to the node.
func attachments(s State) []string {
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
		if !recorded[a] {
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
