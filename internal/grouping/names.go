package grouping

import (
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"
	"strings"

	vgsv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/volplane/volplane/internal/snapshotapi"
)

// GroupAPIVersion is the apiVersion of VolumeGroupSnapshot owner
// references on members, the reference's.
var GroupAPIVersion = vgsv1.SchemeGroupVersion.String()

// GroupKind is the kind a member's owner reference names.
const GroupKind = "VolumeGroupSnapshot"

// MemberSnapshotName is the name of the VolumeSnapshot made for the volume
// of handle in the group of uid: snapshot-<sha256(uid+handle)>, the
// snapshot-controller's name (groupsnapshot_controller_helper.go). The
// sidecar has a helper that appends a time stamp; v8.6.0 never calls it,
// and a name that changes with the clock would make a member twice after
// a crash: the name must be a function of the group and the volume.
func MemberSnapshotName(groupUID types.UID, handle string) string {
	return fmt.Sprintf("snapshot-%x", sha256.Sum256([]byte(string(groupUID)+handle)))
}

// MemberContentName is the name of the member's VolumeSnapshotContent:
// snapcontent-<sha256(uid+handle)>.
func MemberContentName(groupUID types.UID, handle string) string {
	return fmt.Sprintf("snapcontent-%x", sha256.Sum256([]byte(string(groupUID)+handle)))
}

// MemberContentOf is the content name MemberContentName gives the member
// snapshot of that name, if the name is one MemberSnapshotName gives. It
// only says which content to look at: the content's own reference decides
// whether it belongs to the snapshot.
func MemberContentOf(snapshotName string) (string, bool) {
	sum, ok := strings.CutPrefix(snapshotName, "snapshot-")
	if !ok || len(sum) != 2*sha256.Size || strings.Trim(sum, "0123456789abcdef") != "" {
		return "", false
	}
	return "snapcontent-" + sum, true
}

// OwnerReference is the reference a member VolumeSnapshot carries to its
// group.
func OwnerReference(group *vgsv1.VolumeGroupSnapshot) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: GroupAPIVersion, Kind: GroupKind, Name: group.Name, UID: group.UID}
}

// GroupOf is the name of the group a VolumeSnapshot names as its owner, the
// reference's membership test; "" for a snapshot of no group. The owner
// reference is the user's to write: a group acts only on members whose
// reference carries its UID (OwnedBy).
func GroupOf(vs *snapv1.VolumeSnapshot) string {
	for _, o := range vs.OwnerReferences {
		if o.Kind == GroupKind && o.APIVersion == GroupAPIVersion {
			return o.Name
		}
	}
	return ""
}

// OwnedBy says whether vs names the group (name and UID) as its owner.
func OwnedBy(vs *snapv1.VolumeSnapshot, group *vgsv1.VolumeGroupSnapshot) bool {
	if vs.Namespace != group.Namespace {
		return false
	}
	for _, o := range vs.OwnerReferences {
		if o.Kind == GroupKind && o.APIVersion == GroupAPIVersion && o.Name == group.Name && o.UID == group.UID {
			return true
		}
	}
	return false
}

// Key is namespace/name.
func Key(ns, name string) string { return ns + "/" + name }

// GroupKey is the group's namespace/name.
func GroupKey(g *vgsv1.VolumeGroupSnapshot) string { return Key(g.Namespace, g.Name) }

// ContentNameOf is the name of the content the group is (to be) bound to:
// the bound name in its status, else the pre-provisioned name of its spec,
// else the dynamic name groupsnapcontent-<uid>.
func ContentNameOf(g *vgsv1.VolumeGroupSnapshot) string {
	if g.Status != nil && g.Status.BoundVolumeGroupSnapshotContentName != nil && *g.Status.BoundVolumeGroupSnapshotContentName != "" {
		return *g.Status.BoundVolumeGroupSnapshotContentName
	}
	if n := g.Spec.Source.VolumeGroupSnapshotContentName; n != nil {
		return *n
	}
	return snapshotapi.GroupContentName(g.UID)
}

// EndpointAnnotation is volplane's record, on a dynamic group content, of
// the topology of the driver endpoint that took the group (the node of a
// node-local driver), written with the being-created mark before the first
// CreateVolumeGroupSnapshot. Every later call (a retried create, the
// delete) goes to that endpoint, even once the group's PVs are gone and
// nothing else tells which node holds it. A content is cluster-scoped:
// only the administrator and the loops write it.
const EndpointAnnotation = "groupsnapshot.volplane.io/endpoint-topology"

// FormatSegment is a topology segment as EndpointAnnotation holds it:
// key=value pairs sorted by key, comma-separated.
func FormatSegment(seg map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(seg)) {
		parts = append(parts, k+"="+seg[k])
	}
	return strings.Join(parts, ",")
}

// ParseSegment reads FormatSegment's form back.
func ParseSegment(s string) (map[string]string, error) {
	seg := map[string]string{}
	for _, p := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("topology %q is not key=value pairs", s)
		}
		seg[k] = v
	}
	return seg, nil
}
