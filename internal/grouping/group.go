package grouping

import (
	"fmt"
	"slices"
	"time"

	vgsv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/snapshotapi"
)

// GroupFacts is what the snapshot-controller's half read about a group.
type GroupFacts struct {
	Group   *vgsv1.VolumeGroupSnapshot
	Classes []*vgsv1.VolumeGroupSnapshotClass
	// Claims are the claims of the group's namespace (others are ignored).
	Claims []*v1.PersistentVolumeClaim
	// Volumes are PVs by name: at least those of Claims.
	Volumes map[string]*v1.PersistentVolume
	// Content is the group content named ContentNameOf(Group), nil if none.
	Content *vgsv1.VolumeGroupSnapshotContent
	// Snapshots are the VolumeSnapshots of the group's namespace by name:
	// at least its members and the names members would take.
	Snapshots map[string]*snapv1.VolumeSnapshot
	// MemberContents are VolumeSnapshotContents by name: at least the
	// names members' contents would take.
	MemberContents map[string]*snapv1.VolumeSnapshotContent
	Now            time.Time
}

// DecideGroup is the snapshot-controller's next step for a group
// (syncGroupSnapshot and checkAndUpdateGroupSnapshotClass).
func DecideGroup(f GroupFacts) Plan {
	g := f.Group
	if g.DeletionTimestamp != nil {
		return decideDeletion(f)
	}
	src := g.Spec.Source
	if (src.Selector == nil) == (src.VolumeGroupSnapshotContentName == nil) {
		return fail(f, true, "GroupSnapshotValidationError", "Exactly one of Selector and VolumeGroupSnapshotContentName should be specified")
	}
	if src.VolumeGroupSnapshotContentName != nil {
		return decidePreProvisioned(f)
	}
	if g.Spec.VolumeGroupSnapshotClassName == nil {
		class, err := defaultClassFor(f)
		if err != nil {
			return fail(f, false, "SetDefaultGroupSnapshotClassFailed", fmt.Sprintf("Failed to set default group snapshot class with error %v", err))
		}
		return Plan{Step: SetClass, Class: class.Name}
	}
	class := ClassNamed(f.Classes, *g.Spec.VolumeGroupSnapshotClassName)
	if class == nil {
		return fail(f, false, "GetGroupSnapshotClassFailed", fmt.Sprintf("failed to get group snapshot class with error %v",
			fmt.Errorf("volumegroupsnapshotclass.groupsnapshot.storage.k8s.io %q not found", *g.Spec.VolumeGroupSnapshotClassName)))
	}
	if c := f.Content; c != nil {
		if c.Spec.Source.GroupSnapshotHandles != nil {
			return fail(f, true, "GroupSnapshotContentMismatch", "VolumeGroupSnapshotContent "+c.Name+" is pre-provisioned while expecting a dynamically provisioned one")
		}
		if r := c.Spec.VolumeGroupSnapshotRef; r.Name != g.Name || r.Namespace != g.Namespace || r.UID != g.UID {
			return fail(f, true, "GroupSnapshotContentMisbound", fmt.Sprintf("VolumeGroupSnapshotContent [%s] is bound to a different group snapshot", c.Name))
		}
		if !slices.Contains(g.Finalizers, snapshotapi.GroupBoundFinalizer) {
			return Plan{Step: AddFinalizer}
		}
		if p, ok := decideMembers(f, class); ok {
			return p
		}
		return mirror(f)
	}
	p := createContent(f, class)
	if p.Step == CreateContent && !slices.Contains(g.Finalizers, snapshotapi.GroupBoundFinalizer) {
		// The finalizer before the content, unlike the reference (which
		// adds it once bound): a group deleted between its content's
		// creation and its finalizer went at once, and the content under
		// Delete, with the group snapshot the driver then took, was left
		// to no one.
		return Plan{Step: AddFinalizer}
	}
	return p
}

// defaultClassFor finds the default class of the driver of the group's
// first volume, as the reference does.
func defaultClassFor(f GroupFacts) (*vgsv1.VolumeGroupSnapshotClass, error) {
	sources, err := Sources(f.Group, f.Claims, f.Volumes)
	if err != nil {
		return nil, err
	}
	return DefaultClass(f.Classes, sources[0].Volume.Spec.CSI.Driver)
}

func decidePreProvisioned(f GroupFacts) Plan {
	g, c := f.Group, f.Content
	if *g.Spec.Source.VolumeGroupSnapshotContentName == "" {
		return wait(fmt.Errorf("empty VolumeGroupSnapshotContentName for group snapshot %s", GroupKey(g)))
	}
	if c == nil {
		return fail(f, true, "GroupSnapshotContentMissing", "VolumeGroupSnapshotContent is missing")
	}
	if c.Spec.Source.GroupSnapshotHandles == nil {
		return fail(f, true, "GroupSnapshotContentMismatch", "VolumeGroupSnapshotContent is dynamically provisioned while expecting a pre-provisioned one")
	}
	// The content must name this group: its namespace and name, and its
	// UID once bound. A group never binds a content meant for another
	// namespace, whatever name it gives.
	if r := c.Spec.VolumeGroupSnapshotRef; r.Name != g.Name || r.Namespace != g.Namespace || (r.UID != "" && r.UID != g.UID) {
		return fail(f, true, "GroupSnapshotContentMisbound", fmt.Sprintf("VolumeGroupSnapshotContent [%s] is bound to a different group snapshot", c.Name))
	}
	if !slices.Contains(g.Finalizers, snapshotapi.GroupBoundFinalizer) {
		return Plan{Step: AddFinalizer}
	}
	if c.Spec.VolumeGroupSnapshotRef.UID == "" || (c.Spec.VolumeGroupSnapshotClassName == nil && g.Spec.VolumeGroupSnapshotClassName != nil) {
		bound := c.DeepCopy()
		bound.Spec.VolumeGroupSnapshotRef.UID = g.UID
		if g.Spec.VolumeGroupSnapshotClassName != nil {
			bound.Spec.VolumeGroupSnapshotClassName = g.Spec.VolumeGroupSnapshotClassName
		}
		return Plan{Step: BindContent, Content: bound}
	}
	return mirror(f)
}

// createContent builds the dynamic group's content
// (createGroupSnapshotContent): every source volume of the class's
// driver, the class's deletion policy and driver, the secret annotations.
func createContent(f GroupFacts, class *vgsv1.VolumeGroupSnapshotClass) Plan {
	g := f.Group
	name := snapshotapi.GroupContentName(g.UID)
	inputFailed := func(err error) Plan {
		return fail(f, true, "GroupSnapshotContentCreationFailed", fmt.Sprintf("failed to create group snapshot content with error %v",
			fmt.Errorf("failed to get input parameters to create group snapshot %s: %q", g.Name, err)))
	}
	sources, err := Sources(g, f.Claims, f.Volumes)
	if err != nil {
		return inputFailed(err)
	}
	var handles []string
	for _, s := range sources {
		if d := s.Volume.Spec.CSI.Driver; d != class.Driver {
			msg := fmt.Sprintf("Volume CSI driver (%s) mismatch with VolumeGroupSnapshotClass (%s) %s: %s", d, class.Driver, GroupKey(g), s.Volume.Name)
			p := fail(f, true, "GroupSnapshotContentCreationFailed", fmt.Sprintf("failed to create group snapshot content with error %v", msg))
			p.Events = append([]Event{warning("CreateGroupSnapshotContentFailed", msg)}, p.Events...)
			return p
		}
		handles = append(handles, s.Handle())
	}
	secret, err := SecretRef(class.Parameters, snapshotapi.GroupSecretNameParameter, snapshotapi.GroupSecretNamespaceParameter, name, g)
	if err != nil {
		return inputFailed(err)
	}
	content := &vgsv1.VolumeGroupSnapshotContent{
		// Born with its bound-protection finalizer, as a single snapshot's
		// content is: the reference adds it in a later sync, and a group
		// deleted before that sync would delete the content past the
		// sidecar, leaving its backend group snapshot behind.
		ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{snapshotapi.GroupContentFinalizer}},
		Spec: vgsv1.VolumeGroupSnapshotContentSpec{
			VolumeGroupSnapshotRef: v1.ObjectReference{
				Kind: GroupKind, APIVersion: GroupAPIVersion, Namespace: g.Namespace, Name: g.Name,
				UID: g.UID, ResourceVersion: g.ResourceVersion,
			},
			DeletionPolicy:               class.DeletionPolicy,
			Driver:                       class.Driver,
			VolumeGroupSnapshotClassName: &class.Name,
			Source:                       vgsv1.VolumeGroupSnapshotContentSource{VolumeHandles: handles},
		},
	}
	if secret != nil {
		content.Annotations = map[string]string{
			snapshotapi.GroupDeletionSecretName:      secret.Name,
			snapshotapi.GroupDeletionSecretNamespace: secret.Namespace,
		}
	}
	return Plan{Step: CreateContent, Content: content, Events: []Event{
		normal("CreatingGroupSnapshot", fmt.Sprintf("Waiting for a group snapshot %s to be created by the CSI driver.", GroupKey(g))),
	}}
}

// CreateContentFailed is the event for a failed create of the group's
// content.
func CreateContentFailed(g *vgsv1.VolumeGroupSnapshot, err error) Event {
	return warning("CreateGroupSnapshotContentFailed", fmt.Sprintf("Error creating volume group snapshot content object for group snapshot %s: %v.", GroupKey(g), err))
}

// fail writes the error into the group's status (readyToUse false when
// notReady) with an event, as updateGroupSnapshotErrorStatusWithEvent: a
// status that already carries the message is not written again.
func fail(f GroupFacts, notReady bool, reason, message string) Plan {
	g := f.Group
	err := fmt.Errorf("%s: %s", reason, message)
	if g.Status != nil && g.Status.Error != nil && g.Status.Error.Message != nil && *g.Status.Error.Message == message {
		return wait(err)
	}
	st := &vgsv1.VolumeGroupSnapshotStatus{}
	if g.Status != nil {
		st = g.Status.DeepCopy()
	}
	msg := message
	st.Error = &snapv1.VolumeSnapshotError{Time: &metav1.Time{Time: f.Now}, Message: &msg}
	if notReady {
		st.ReadyToUse = ptr(false)
	}
	return Plan{Step: Fail, Status: st, Events: []Event{warning(reason, message)}, Err: err}
}

func ptr[T any](v T) *T { return &v }
