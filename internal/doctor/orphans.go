package doctor

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	volumehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/provisioning"
)

// orphanedBackendVolumes: volumes a driver listed both before and after
// the cluster was read that no PV refers to. The listing names no age, so
// what may be a new volume is held back: one named for a claim being
// provisioned (pvc-<its uid>) is that claim's and not reported; any other
// is reported, but offered for adoption only while no claim of its driver
// is being provisioned, for it may be one's volume whose PV is not made
// yet.
func orphanedBackendVolumes(s *Snapshot) []Finding {
	var out []Finding
	for _, b := range s.Backends {
		inFlight := claimsInFlight(s, b.Driver)
		for _, vol := range b.Volumes {
			if !b.Relisted[vol.ID] || slices.ContainsFunc(s.Volumes, func(pv *v1.PersistentVolume) bool { return refersTo(pv, b, vol.ID) }) ||
				slices.ContainsFunc(inFlight, func(c *v1.PersistentVolumeClaim) bool { return strings.Contains(vol.ID, "pvc-"+string(c.UID)) }) {
				continue
			}
			f := Finding{Kind: KindOrphanedBackendVolume, Severity: SeverityProblem,
				Object:  Object{Kind: ObjectBackendVolume, Name: vol.ID, Driver: b.Driver, Node: b.Node},
				Problem: fmt.Sprintf("Driver %s holds volume %s%s, which no PV refers to: its space is used and no claim can reach its data.", b.Driver, vol.ID, onNode(b.Node))}
			if len(inFlight) > 0 {
				f.Problem += fmt.Sprintf(" Not offered for adoption while claims of %s are being provisioned (%s): it may be the volume of one whose PV is not made yet; check again once they are Bound.",
					b.Driver, claimKeys(inFlight))
			} else {
				f.Fixes = []Fix{{Says: "adopt it as a Retain PV of no class, data kept, pre-bound to the claim you name in its claimRef (no other claim can bind it); set accessModes to what that claim needs",
					Command: adoptManifest(b, vol)}}
			}
			out = append(out, f)
		}
	}
	return out
}

// claimsInFlight are the claims a volume of driver may be being made for:
// those handed to the driver (its storage-provisioner annotation) and not
// bound yet, and those carrying the provisioner's in-progress finalizer,
// of that driver (by the annotation, else the class) or of a provisioner
// not known. A claim of the driver's class that was not handed to it (a
// WaitForFirstConsumer claim no pod uses) makes no volume.
func claimsInFlight(s *Snapshot, driver string) []*v1.PersistentVolumeClaim {
	var out []*v1.PersistentVolumeClaim
	for _, c := range s.Claims {
		handed := c.Annotations[volumehelpers.AnnStorageProvisioner]
		if handed == "" {
			handed = c.Annotations[volumehelpers.AnnBetaStorageProvisioner]
		}
		waiting := handed == driver && c.Spec.VolumeName == "" && c.DeletionTimestamp == nil
		provisioner := handed
		if class := s.FindClass(binding.ClaimClass(c)); provisioner == "" && class != nil {
			provisioner = class.Provisioner
		}
		finalizer := slices.Contains(c.Finalizers, provisioning.ClaimFinalizer) && (provisioner == "" || provisioner == driver)
		if waiting || finalizer {
			out = append(out, c)
		}
	}
	return out
}

func claimKeys(cs []*v1.PersistentVolumeClaim) string {
	keys := make([]string, len(cs))
	for i, c := range cs {
		keys[i] = c.Namespace + "/" + c.Name
	}
	slices.Sort(keys)
	return strings.Join(keys, ", ")
}

var notInName = regexp.MustCompile(`[^a-z0-9.-]+`)

// adoptManifest is the command that creates a Retain PV for a backend
// volume: its capacity, context and topology as the driver lists them,
// pre-bound to a claim the user must name. What the driver says is
// untrusted: every string of it is written as a JSON string (a YAML
// double-quoted scalar, on one line), in a here-document whose quoted
// delimiter makes the shell take it as is; no line of it can be the
// delimiter.
func adoptManifest(b Backend, vol BackendVolume) string {
	name := strings.Trim(notInName.ReplaceAllString(strings.ToLower(vol.ID), "-"), "-.")
	var m strings.Builder
	m.WriteString("kubectl create -f - <<'EOF'\napiVersion: v1\nkind: PersistentVolume\nmetadata:\n")
	fmt.Fprintf(&m, "  name: adopted-%s\nspec:\n  capacity:\n", name)
	if vol.CapacityBytes > 0 {
		fmt.Fprintf(&m, "    storage: %s\n", resource.NewQuantity(vol.CapacityBytes, resource.BinarySI))
	} else {
		m.WriteString("    storage: 1Gi # the driver did not say: set the volume's size\n")
	}
	m.WriteString("  accessModes: [ReadWriteOnce]\n  persistentVolumeReclaimPolicy: Retain\n")
	m.WriteString("  storageClassName: \"\"\n")
	m.WriteString("  claimRef: # the claim that gets its data, and no other\n    namespace: NAMESPACE\n    name: NAME\n")
	fmt.Fprintf(&m, "  csi:\n    driver: %s\n    volumeHandle: %s\n", quoted(b.Driver), quoted(vol.ID))
	if len(vol.Context) > 0 {
		m.WriteString("    volumeAttributes:\n")
		for _, k := range slices.Sorted(maps.Keys(vol.Context)) {
			fmt.Fprintf(&m, "      %s: %s\n", quoted(k), quoted(vol.Context[k]))
		}
	}
	writeAffinity(&m, vol.Accessible)
	m.WriteString("EOF")
	return m.String()
}

func writeAffinity(m *strings.Builder, segments []map[string]string) {
	if len(segments) == 0 || len(segments[0]) == 0 {
		return
	}
	m.WriteString("  nodeAffinity:\n    required:\n      nodeSelectorTerms:\n")
	for _, seg := range segments {
		m.WriteString("      - matchExpressions:\n")
		for _, k := range slices.Sorted(maps.Keys(seg)) {
			fmt.Fprintf(m, "        - key: %s\n          operator: In\n          values: [%s]\n", quoted(k), quoted(seg[k]))
		}
	}
}

// quoted is s as a JSON string: one line, every quote, backslash and
// control character escaped; also a YAML double-quoted scalar.
func quoted(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
