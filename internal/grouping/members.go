package grouping

import (
	"fmt"
	"slices"

	vgsv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/snapshotapi"
)

// decideMembers is the next step making the members of a dynamic group
// whose content the driver has answered for
// (createSnapshotsForGroupSnapshotContent): for each snapshot the content
// lists, its VolumeSnapshot, its VolumeSnapshotContent, the content's
// status and the snapshot's status, in that order. ok is false once every
// member is made.
//
// The order differs from the reference's (content first, its ref's UID
// patched once the snapshot exists): the snapshot is made first, so its
// content is created already bound and no content ever waits half-bound.
func decideMembers(f GroupFacts, class *vgsv1.VolumeGroupSnapshotClass) (Plan, bool) {
	c := f.Content
	if c.Status == nil || len(c.Status.VolumeSnapshotInfoList) == 0 || c.Status.VolumeGroupSnapshotHandle == nil {
		return Plan{}, false
	}
	groupHandle := *c.Status.VolumeGroupSnapshotHandle
	var secret *v1.SecretReference
	if class != nil {
		// Resolved with the group: the reference passes none here, so a
		// class whose secret names ${volumegroupsnapshot.name} makes its
		// content but never its members.
		s, err := SecretRef(class.Parameters, snapshotapi.GroupSecretNameParameter, snapshotapi.GroupSecretNamespaceParameter, c.Name, f.Group)
		if err != nil {
			return wait(fmt.Errorf("getGroupSnapshotSecret: failed to get secret reference for group snapshot content %s: %v", c.Name, err)), true
		}
		secret = s
	}
	for _, info := range c.Status.VolumeSnapshotInfoList {
		// The driver answers for the volumes it was asked about: a handle
		// the content does not list is no member of this group. Checked
		// for every member before any is made.
		if info.VolumeHandle == "" || info.SnapshotHandle == "" || !slices.Contains(c.Spec.Source.VolumeHandles, info.VolumeHandle) {
			return fail(f, true, "GroupSnapshotMemberInvalid", fmt.Sprintf("VolumeGroupSnapshotContent %s lists a snapshot %q of volume %q that is not one of its source volumes", c.Name, info.SnapshotHandle, info.VolumeHandle)), true
		}
	}
	for _, info := range c.Status.VolumeSnapshotInfoList {
		if p, ok := decideMember(f, info, groupHandle, secret); ok {
			return p, true
		}
	}
	return Plan{}, false
}

func decideMember(f GroupFacts, info vgsv1.VolumeSnapshotInfo, groupHandle string, secret *v1.SecretReference) (Plan, bool) {
	g, c := f.Group, f.Content
	vsName := MemberSnapshotName(g.UID, info.VolumeHandle)
	mcName := MemberContentName(g.UID, info.VolumeHandle)
	pv := volumeOf(f, c.Spec.Driver, info.VolumeHandle)
	vs := f.Snapshots[vsName]
	claim := ""
	if pv != nil {
		claim = pv.Spec.ClaimRef.Name
	}
	if vs == nil {
		return Plan{Step: CreateMember, Snapshot: &snapv1.VolumeSnapshot{
			ObjectMeta: metav1.ObjectMeta{
				Name: vsName, Namespace: g.Namespace,
				OwnerReferences: []metav1.OwnerReference{OwnerReference(g)},
				Finalizers:      []string{snapshotapi.InGroupFinalizer},
			},
			Spec: snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: &claim}},
		}}, true
	}
	// A snapshot of that name that is not the group's own (a tenant made
	// it first) is never adopted.
	// The owner reference and the spec are the tenant's to write: the
	// snapshot must also ask for what the group would have asked (the
	// claim, while its volume is there: a claim deleted after its member
	// was made leaves the member as it is).
	src := vs.Spec.Source
	if !OwnedBy(vs, g) || src.VolumeSnapshotContentName != nil || src.PersistentVolumeClaimName == nil ||
		(pv != nil && *src.PersistentVolumeClaimName != claim) {
		return fail(f, true, "GroupSnapshotMemberMisbound", fmt.Sprintf("VolumeSnapshot %s is not a member of group snapshot %s", Key(vs.Namespace, vs.Name), GroupKey(g))), true
	}
	if vs.UID == "" {
		return wait(fmt.Errorf("member %s has no UID yet", vsName)), true
	}
	mc := f.MemberContents[mcName]
	if mc == nil {
		handle := info.VolumeHandle
		mc = &snapv1.VolumeSnapshotContent{
			ObjectMeta: metav1.ObjectMeta{Name: mcName, Annotations: map[string]string{snapshotapi.GroupHandleAnnotation: groupHandle}},
			Spec: snapv1.VolumeSnapshotContentSpec{
				VolumeSnapshotRef: v1.ObjectReference{Kind: snapshotapi.KindSnapshot, APIVersion: snapv1.SchemeGroupVersion.String(),
					Namespace: g.Namespace, Name: vsName, UID: vs.UID},
				DeletionPolicy: c.Spec.DeletionPolicy,
				Driver:         c.Spec.Driver,
				Source:         snapv1.VolumeSnapshotContentSource{VolumeHandle: &handle},
			},
		}
		if pv != nil {
			mc.Spec.SourceVolumeMode = pv.Spec.VolumeMode
		}
		if secret != nil {
			mc.Annotations[snapshotapi.DeletionSecretName] = secret.Name
			mc.Annotations[snapshotapi.DeletionSecretNamespace] = secret.Namespace
		}
		return Plan{Step: CreateMemberContent, MemberContent: mc}, true
	}
	if r := mc.Spec.VolumeSnapshotRef; r.Namespace != g.Namespace || r.Name != vsName || r.UID != vs.UID ||
		mc.Annotations[snapshotapi.GroupHandleAnnotation] != groupHandle ||
		mc.Spec.Source.VolumeHandle == nil || *mc.Spec.Source.VolumeHandle != info.VolumeHandle || mc.Spec.Driver != c.Spec.Driver {
		return fail(f, true, "GroupSnapshotMemberMisbound", fmt.Sprintf("VolumeSnapshotContent %s is not the content of member %s of group snapshot %s", mcName, vsName, GroupKey(g))), true
	}
	if mc.Status == nil || mc.Status.SnapshotHandle == nil {
		withStatus := mc.DeepCopy()
		withStatus.Status = &snapv1.VolumeSnapshotContentStatus{
			SnapshotHandle:            ptr(info.SnapshotHandle),
			VolumeGroupSnapshotHandle: ptr(groupHandle),
			CreationTime:              info.CreationTime,
			RestoreSize:               info.RestoreSize,
			ReadyToUse:                info.ReadyToUse,
		}
		return Plan{Step: SetMemberContentStatus, MemberContent: withStatus}, true
	}
	if vs.Status == nil || vs.Status.BoundVolumeSnapshotContentName == nil || vs.Status.VolumeGroupSnapshotName == nil {
		bound := vs.DeepCopy()
		if bound.Status == nil {
			bound.Status = &snapv1.VolumeSnapshotStatus{}
		}
		if bound.Status.BoundVolumeSnapshotContentName == nil {
			bound.Status.BoundVolumeSnapshotContentName = ptr(mcName)
		}
		if bound.Status.VolumeGroupSnapshotName == nil {
			bound.Status.VolumeGroupSnapshotName = ptr(g.Name)
		}
		return Plan{Step: BindMember, Snapshot: bound}, true
	}
	return Plan{}, false
}

// volumeOf is the PV of the driver and handle bound to a claim of the
// group's namespace; nil if none.
func volumeOf(f GroupFacts, driver, handle string) *v1.PersistentVolume {
	for _, pv := range f.Volumes {
		if pv != nil && pv.Spec.CSI != nil && pv.Spec.CSI.Driver == driver && pv.Spec.CSI.VolumeHandle == handle &&
			pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.Namespace == f.Group.Namespace {
			return pv
		}
	}
	return nil
}

// mirror writes the content's status into the group's
// (updateGroupSnapshotStatus), with GroupSnapshotCreated when the creation
// time first appears and GroupSnapshotReady when it first turns ready.
func mirror(f GroupFacts) Plan {
	g, c := f.Group, f.Content
	var created *metav1.Time
	ready := false
	var cerr *snapv1.VolumeSnapshotError
	if c.Status != nil {
		created = c.Status.CreationTime
		ready = c.Status.ReadyToUse != nil && *c.Status.ReadyToUse
		cerr = c.Status.Error
	}
	old := g.Status
	st := &vgsv1.VolumeGroupSnapshotStatus{}
	if old != nil {
		st = old.DeepCopy()
	}
	changed := old == nil
	if st.BoundVolumeGroupSnapshotContentName == nil {
		st.BoundVolumeGroupSnapshotContentName = ptr(c.Name)
		changed = true
	}
	if st.CreationTime == nil && created != nil {
		st.CreationTime = created.DeepCopy()
		changed = true
	}
	if st.ReadyToUse == nil || *st.ReadyToUse != ready {
		st.ReadyToUse = ptr(ready)
		changed = true
		if ready {
			st.Error = nil
		}
	}
	if !sameError(st.Error, cerr) {
		st.Error = cerr.DeepCopy()
		changed = true
	}
	if !changed {
		return wait(nil)
	}
	var events []Event
	if (old == nil || old.CreationTime == nil) && st.CreationTime != nil {
		events = append(events, normal("GroupSnapshotCreated", fmt.Sprintf("GroupSnapshot %s was successfully created by the CSI driver.", GroupKey(g))))
	}
	if (old == nil || old.ReadyToUse == nil || !*old.ReadyToUse) && ready {
		events = append(events, normal("GroupSnapshotReady", fmt.Sprintf("GroupSnapshot %s is ready to use.", GroupKey(g))))
	}
	return Plan{Step: UpdateStatus, Status: st, Events: events}
}

func sameError(a, b *snapv1.VolumeSnapshotError) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	am, bm := "", ""
	if a.Message != nil {
		am = *a.Message
	}
	if b.Message != nil {
		bm = *b.Message
	}
	return am == bm && a.Time.Equal(b.Time)
}
