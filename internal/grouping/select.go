package grouping

import (
	"fmt"
	"slices"
	"strings"

	vgsv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/snapshotapi"
)

// Source is one volume of a dynamic group: a claim its selector matches
// and the CSI volume bound to it.
type Source struct {
	Claim  *v1.PersistentVolumeClaim
	Volume *v1.PersistentVolume
}

// Handle is the source's CSI volume handle.
func (s Source) Handle() string { return s.Volume.Spec.CSI.VolumeHandle }

// Sources are the volumes of a dynamic group: every claim of the group's
// own namespace its selector matches (claims of another namespace are
// never looked at, whatever their labels), each Bound to a CSI volume
// whose claimRef names it back; sorted by claim name. volumes are by name.
// The error says why the group cannot be taken yet (the reference's
// messages): no claim matches, a claim is not Bound, a binding is broken.
// The whole selector is honoured (the reference reads only matchLabels and
// so ignores matchExpressions).
func Sources(group *vgsv1.VolumeGroupSnapshot, claims []*v1.PersistentVolumeClaim, volumes map[string]*v1.PersistentVolume) ([]Source, error) {
	sel := group.Spec.Source.Selector
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, fmt.Errorf("invalid label selector %s: %w", metav1.FormatLabelSelector(sel), err)
	}
	var out []Source
	for _, c := range claims {
		if c == nil || c.Namespace != group.Namespace || !selector.Matches(labelSet(c.Labels)) {
			continue
		}
		if c.Status.Phase != v1.ClaimBound || c.Spec.VolumeName == "" {
			return nil, fmt.Errorf("the PVC %s is not yet bound to a PV, will not attempt to take a group snapshot", c.Name)
		}
		pv := volumes[c.Spec.VolumeName]
		if pv == nil {
			return nil, fmt.Errorf("failed to retrieve PV %s: not found", c.Spec.VolumeName)
		}
		if ref := pv.Spec.ClaimRef; ref == nil || ref.Namespace != c.Namespace || ref.Name != c.Name || (ref.UID != "" && ref.UID != c.UID) {
			return nil, fmt.Errorf("claim in dataSource not bound or invalid")
		}
		if pv.Spec.CSI == nil {
			return nil, fmt.Errorf("snapshotting non-CSI volumes is not supported, group snapshot:%s/%s", group.Namespace, group.Name)
		}
		out = append(out, Source{Claim: c, Volume: pv})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("label selector %s for group snapshot not applied to any PVC", metav1.FormatLabelSelector(sel))
	}
	slices.SortFunc(out, func(a, b Source) int { return strings.Compare(a.Claim.Name, b.Claim.Name) })
	return out, nil
}

type labelSet map[string]string

func (l labelSet) Has(k string) bool   { _, ok := l[k]; return ok }
func (l labelSet) Get(k string) string { return l[k] }
func (l labelSet) Lookup(k string) (string, bool) {
	v, ok := l[k]
	return v, ok
}

// DefaultClass is the default VolumeGroupSnapshotClass of driver
// (annotation groupsnapshot.storage.kubernetes.io/is-default-class
// "true"), with the reference's errors for none and several.
func DefaultClass(classes []*vgsv1.VolumeGroupSnapshotClass, driver string) (*vgsv1.VolumeGroupSnapshotClass, error) {
	var found []*vgsv1.VolumeGroupSnapshotClass
	for _, c := range classes {
		if c != nil && c.Driver == driver && c.Annotations[snapshotapi.DefaultGroupClassAnnotation] == "true" {
			found = append(found, c)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("cannot find default group snapshot class")
	case 1:
		return found[0], nil
	}
	return nil, fmt.Errorf("%d default snapshot classes were found", len(found))
}

// ClassNamed is the class of that name, nil if none.
func ClassNamed(classes []*vgsv1.VolumeGroupSnapshotClass, name string) *vgsv1.VolumeGroupSnapshotClass {
	for _, c := range classes {
		if c != nil && c.Name == name {
			return c
		}
	}
	return nil
}
