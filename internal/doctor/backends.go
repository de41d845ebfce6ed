package doctor

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// missingBackendVolumes: PVs of a driver that was read whose volume the
// driver does not list; not those being deleted or reclaimed (Released or
// Failed with policy Delete), whose volume may go first.
func missingBackendVolumes(s *Snapshot) []Finding {
	var out []Finding
	for _, pv := range s.Volumes {
		csi := pv.Spec.CSI
		if csi == nil || pv.DeletionTimestamp != nil || reclaiming(pv) {
			continue
		}
		var could []Backend // the endpoints that would list it
		for _, b := range s.Backends {
			if b.Driver == csi.Driver && topologyFits(pv, b.Topology) {
				could = append(could, b)
			}
		}
		if len(could) == 0 || slices.ContainsFunc(could, func(b Backend) bool { return b.holds(csi.VolumeHandle) }) {
			continue
		}
		out = append(out, missingFinding(s, pv))
	}
	return out
}

func reclaiming(pv *v1.PersistentVolume) bool {
	return pv.Spec.PersistentVolumeReclaimPolicy == v1.PersistentVolumeReclaimDelete &&
		(pv.Status.Phase == v1.VolumeReleased || pv.Status.Phase == v1.VolumeFailed)
}

// provisioningNote warns that volumes being provisioned exist before their
// PV does; "" when no claim is being provisioned.
func provisioningNote(s *Snapshot) string {
	n := 0
	for _, c := range s.Claims {
		if c.Spec.VolumeName == "" && slices.Contains(c.Finalizers, provisioningFinalizer) {
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d claim(s) being provisioned: a volume just made for one shows as orphaned until its PV exists; check again", n)
}

func missingFinding(s *Snapshot, pv *v1.PersistentVolume) Finding {
	csi := pv.Spec.CSI
	f := Finding{Kind: KindMissingBackendVolume, Object: volumeObject(pv.Name),
		Problem: fmt.Sprintf("Its volume %s is gone from driver %s: its data is lost (phase %s).",
			csi.VolumeHandle, csi.Driver, pv.Status.Phase)}
	if c := boundClaim(s, pv); c != nil {
		f.Problem = fmt.Sprintf("Its volume %s is gone from driver %s: the data of claim %s/%s is lost (phase %s).",
			csi.VolumeHandle, csi.Driver, c.Namespace, c.Name, pv.Status.Phase)
		f.Fixes = append(f.Fixes, Fix{Says: fmt.Sprintf("delete claim %s/%s, whose data is already gone", c.Namespace, c.Name),
			Command: fmt.Sprintf("kubectl delete pvc -n %s %s", c.Namespace, c.Name)})
	}
	f.Fixes = append(f.Fixes, Fix{Says: "delete the PV, which names a volume that no longer exists",
		Command: "kubectl delete pv " + pv.Name})
	return f
}

// orphanedBackendVolumes: volumes a driver lists that no PV refers to.
func orphanedBackendVolumes(s *Snapshot) []Finding {
	var out []Finding
	for _, b := range s.Backends {
		for _, vol := range b.Volumes {
			if slices.ContainsFunc(s.Volumes, func(pv *v1.PersistentVolume) bool { return refersTo(pv, b, vol.ID) }) {
				continue
			}
			out = append(out, Finding{Kind: KindOrphanedBackendVolume,
				Object:  Object{Kind: ObjectBackendVolume, Name: vol.ID, Driver: b.Driver, Node: b.Node},
				Problem: fmt.Sprintf("Driver %s holds volume %s%s, which no PV refers to: its space is used and no claim can reach its data.", b.Driver, vol.ID, onNode(b.Node)),
				Fixes: []Fix{{Says: "adopt it as a Retain PV of no class (data kept); set storageClassName and accessModes to what its claims need",
					Command: adoptManifest(b, vol)}}})
		}
	}
	return out
}

func onNode(node string) string {
	if node == "" {
		return ""
	}
	return " on node " + node
}

func (b Backend) holds(id string) bool {
	return slices.ContainsFunc(b.Volumes, func(v BackendVolume) bool { return v.ID == id })
}

func refersTo(pv *v1.PersistentVolume, b Backend, id string) bool {
	csi := pv.Spec.CSI
	return csi != nil && csi.Driver == b.Driver && csi.VolumeHandle == id && topologyFits(pv, b.Topology)
}

// topologyFits says whether a PV's node affinity allows the segment of a
// node-local endpoint (always true for an endpoint without one, or a PV
// without node affinity).
func topologyFits(pv *v1.PersistentVolume, segment map[string]string) bool {
	na := pv.Spec.NodeAffinity
	if len(segment) == 0 || na == nil || na.Required == nil {
		return true
	}
	return slices.ContainsFunc(na.Required.NodeSelectorTerms, func(t v1.NodeSelectorTerm) bool {
		for _, e := range t.MatchExpressions {
			if want, ok := segment[e.Key]; ok && e.Operator == v1.NodeSelectorOpIn && !slices.Contains(e.Values, want) {
				return false
			}
		}
		return true
	})
}

var notInName = regexp.MustCompile(`[^a-z0-9.-]+`)

// adoptManifest is the command that creates a Retain PV for a backend
// volume: its capacity, context and topology as the driver lists them.
func adoptManifest(b Backend, vol BackendVolume) string {
	name := strings.Trim(notInName.ReplaceAllString(strings.ToLower(vol.ID), "-"), "-.")
	var m strings.Builder
	m.WriteString("echo '\napiVersion: v1\nkind: PersistentVolume\nmetadata:\n")
	fmt.Fprintf(&m, "  name: adopted-%s\nspec:\n  capacity:\n", name)
	if vol.CapacityBytes > 0 {
		fmt.Fprintf(&m, "    storage: %s\n", resource.NewQuantity(vol.CapacityBytes, resource.BinarySI))
	} else {
		m.WriteString("    storage: 1Gi # the driver did not say: set the volume's size\n")
	}
	m.WriteString("  accessModes: [ReadWriteOnce]\n  persistentVolumeReclaimPolicy: Retain\n")
	m.WriteString("  storageClassName: \"\"\n  csi:\n")
	fmt.Fprintf(&m, "    driver: %s\n    volumeHandle: %s\n", b.Driver, vol.ID)
	if len(vol.Context) > 0 {
		m.WriteString("    volumeAttributes:\n")
		for _, k := range sortedKeys(vol.Context) {
			fmt.Fprintf(&m, "      %s: %q\n", k, vol.Context[k])
		}
	}
	writeAffinity(&m, vol.Accessible)
	m.WriteString("' | kubectl create -f -")
	return m.String()
}

func writeAffinity(m *strings.Builder, segments []map[string]string) {
	if len(segments) == 0 || len(segments[0]) == 0 {
		return
	}
	m.WriteString("  nodeAffinity:\n    required:\n      nodeSelectorTerms:\n")
	for _, seg := range segments {
		m.WriteString("      - matchExpressions:\n")
		for _, k := range sortedKeys(seg) {
			fmt.Fprintf(m, "        - key: %s\n          operator: In\n          values: [%q]\n", k, seg[k])
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
