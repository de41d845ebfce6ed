package snapshotbinding

import (
	"errors"
	"fmt"
	"slices"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/snapshotapi"
)

// SnapshotFacts is what the loop read for one VolumeSnapshot.
type SnapshotFacts struct {
	// Now stamps the errors written into the snapshot's status.
	Now      time.Time
	Snapshot *snapv1.VolumeSnapshot
	// Content is the content named Designated(Snapshot), nil if none.
	Content *snapv1.VolumeSnapshotContent
	// Classes are every VolumeSnapshotClass.
	Classes []*snapv1.VolumeSnapshotClass
	// Claim is the claim spec.source.persistentVolumeClaimName names in
	// the snapshot's own namespace, nil if none; Volume is the PV the
	// claim's spec.volumeName names, nil if none.
	Claim  *corev1.PersistentVolumeClaim
	Volume *corev1.PersistentVolume
	// Siblings are the namespace's other snapshots whose source is the
	// same claim, each with its designated content (nil if none).
	Siblings []Sibling
	// Claims are the claims of the snapshot's namespace (for the restore
	// check of a deletion).
	Claims []*corev1.PersistentVolumeClaim
	// GroupLive says the group GroupOf(Snapshot) names exists in the
	// snapshot's namespace and holds it (HeldBy).
	GroupLive bool
	// GroupName is the group whose group content carries the content's
	// status.volumeGroupSnapshotHandle, "" if none; GroupMissing says the
	// content carries a group handle no group content of the snapshot's
	// namespace has (yet).
	GroupName    string
	GroupMissing bool
	// ManagedBy is the node a new content is labeled with (distributed
	// snapshotting), "" for none.
	ManagedBy string
}

// Sibling is another snapshot of the same claim and its content.
type Sibling struct {
	Snapshot *snapv1.VolumeSnapshot
	Content  *snapv1.VolumeSnapshotContent
}

// ClaimStep is what happens to the source claim's
// pvc-as-source-protection finalizer.
type ClaimStep int

const (
	ClaimKeep ClaimStep = iota
	ClaimAddFinalizer
	ClaimRemoveFinalizer
)

// Bind fills a pre-provisioned content's volumeSnapshotRef.uid (and its
// class, if the snapshot names one).
type Bind struct {
	UID   string
	Class *string
}

// Plan is what the loop does for one VolumeSnapshot, in the order of
// internal/controller/snapshot's doc.go.
type Plan struct {
	Reason Reason
	// SetClass, if set, is written into spec.volumeSnapshotClassName (the
	// default class of the volume's driver).
	SetClass string
	// AddFinalizers and RemoveFinalizers change the snapshot's finalizers.
	AddFinalizers, RemoveFinalizers []string
	// Claim says what happens to the source claim's finalizer.
	Claim ClaimStep
	// Bind, if set, binds the pre-provisioned content.
	Bind *Bind
	// Create, if set, is the dynamic content to create (AlreadyExists is
	// reused).
	Create *snapv1.VolumeSnapshotContent
	// MarkBeingDeleted annotates the content being-deleted; DeleteContent
	// deletes it.
	MarkBeingDeleted, DeleteContent bool
	// Status, if set, replaces the snapshot's status.
	Status *snapv1.VolumeSnapshotStatus
	// Events are recorded on the snapshot once the writes are done.
	Events []Event
	// Retry, if set, is returned to the runner (retried with backoff).
	Retry error
}

// Dynamic says the snapshot asks for a snapshot of a claim.
func Dynamic(s *snapv1.VolumeSnapshot) bool {
	return s.Spec.Source.PersistentVolumeClaimName != nil && s.Spec.Source.VolumeSnapshotContentName == nil
}

// GroupOf is the VolumeGroupSnapshot a snapshot is a member of: the
// owner of kind VolumeGroupSnapshot (groupsnapshot.storage.k8s.io/v1),
// else status.volumeGroupSnapshotName; "" if none.
func GroupOf(s *snapv1.VolumeSnapshot) string {
	if o, ok := groupOwner(s); ok {
		return o.Name
	}
	if s.Status != nil && s.Status.VolumeGroupSnapshotName != nil {
		return *s.Status.VolumeGroupSnapshotName
	}
	return ""
}

// HeldBy says the group snapshot of that name and UID holds member s:
// it bears the name GroupOf gives and, when s has a group owner reference,
// is that owner. The reference matches the name only, so a group made
// under a deleted group's name held the deleted one's members until it
// went; a member with no owner reference yet (pre-provisioned) is held by
// name, as there.
func HeldBy(s *snapv1.VolumeSnapshot, name string, uid types.UID) bool {
	if name == "" || GroupOf(s) != name {
		return false
	}
	if o, ok := groupOwner(s); ok {
		return o.UID == uid
	}
	return true
}

// member says the snapshot is a member of a group (the group loop makes
// its content).
func member(s *snapv1.VolumeSnapshot) bool {
	_, ok := groupOwner(s)
	return ok
}

// groupOwner is the snapshot's owner reference of kind VolumeGroupSnapshot
// (groupsnapshot.storage.k8s.io/v1), if it has one.
func groupOwner(s *snapv1.VolumeSnapshot) (metav1.OwnerReference, bool) {
	for _, o := range s.OwnerReferences {
		if o.Kind == "VolumeGroupSnapshot" && o.APIVersion == snapshotapi.GroupSnapshotGroup+"/v1" {
			return o, true
		}
	}
	return metav1.OwnerReference{}, false
}

// Designated is the name of the only content the snapshot may be bound
// to: the one its spec names (pre-provisioned), the one its group bound
// it to (a member), else snapcontent-<uid> (dynamic). "" if none.
func Designated(s *snapv1.VolumeSnapshot) string {
	switch {
	case s.Spec.Source.VolumeSnapshotContentName != nil:
		return *s.Spec.Source.VolumeSnapshotContentName
	case member(s):
		if s.Status != nil && s.Status.BoundVolumeSnapshotContentName != nil {
			return *s.Status.BoundVolumeSnapshotContentName
		}
		return ""
	}
	return snapshotapi.ContentName(s.UID)
}

// PointsBack says the content's volumeSnapshotRef names the snapshot:
// namespace, name and UID.
func PointsBack(s *snapv1.VolumeSnapshot, c *snapv1.VolumeSnapshotContent) bool {
	r := c.Spec.VolumeSnapshotRef
	return r.Namespace == s.Namespace && r.Name == s.Name && r.UID == s.UID
}

func key(s *snapv1.VolumeSnapshot) string { return s.Namespace + "/" + s.Name }

// DecideSnapshot decides what to do with one VolumeSnapshot.
func DecideSnapshot(f SnapshotFacts) Plan {
	var p Plan
	if f.Snapshot.DeletionTimestamp != nil {
		p = decideDeletion(f)
	} else {
		p = decideLive(f)
	}
	p.Claim = claimStep(f, p)
	return p
}

// fail is a plan that writes message as the snapshot's error with the
// event reason, and retries with err.
func fail(f SnapshotFacts, p Plan, reason Reason, setNotReady bool, event, message string, retry error) Plan {
	p.Reason = reason
	if st := withError(f.Snapshot, f.Now, setNotReady, message); st != nil {
		p.Status = st
		p.Events = append(p.Events, warning(event, message))
	}
	p.Retry = retry
	return p
}

func decideLive(f SnapshotFacts) Plan {
	s := f.Snapshot
	var p Plan
	src := s.Spec.Source
	if (src.PersistentVolumeClaimName == nil) == (src.VolumeSnapshotContentName == nil) {
		// Both fields are immutable: retrying changes nothing.
		return fail(f, p, Invalid, true, "SnapshotValidationError",
			"Exactly one of PersistentVolumeClaimName and VolumeSnapshotContentName should be specified", nil)
	}
	// The class: named, or (dynamic) the default of the volume's driver.
	var class *snapv1.VolumeSnapshotClass
	switch {
	case member(s):
	case s.Spec.VolumeSnapshotClassName != nil:
		name := *s.Spec.VolumeSnapshotClassName
		if class = classNamed(f.Classes, name); class == nil {
			err := fmt.Errorf("volumesnapshotclass.snapshot.storage.k8s.io %q not found", name)
			return fail(f, p, NoClass, false, "GetSnapshotClassFailed", fmt.Sprintf("Failed to get snapshot class with error %v", err), err)
		}
	case Dynamic(s):
		pv, err := sourceVolume(f)
		if err == nil && pv.Spec.CSI == nil {
			err = fmt.Errorf("snapshotting non-CSI volumes is not supported, snapshot:%s/%s", s.Namespace, s.Name)
		}
		if err == nil {
			class, err = DefaultClass(f.Classes, pv.Spec.CSI.Driver)
		}
		if err != nil {
			return fail(f, p, NoClass, false, "SetDefaultSnapshotClassFailed", fmt.Sprintf("Failed to set default snapshot class with error %v", err), err)
		}
		p.SetClass = class.Name
	}
	if !slices.Contains(s.Finalizers, snapshotapi.AsSourceFinalizer) {
		p.AddFinalizers = append(p.AddFinalizers, snapshotapi.AsSourceFinalizer)
	}
	switch {
	case src.VolumeSnapshotContentName != nil:
		return decidePreProvisioned(f, p)
	case member(s):
		return decideMember(f, p)
	}
	return decideDynamic(f, p, class)
}

// bound finishes a plan for a snapshot whose content points back at it:
// the bound finalizer under Delete, the status mirrored.
func bound(f SnapshotFacts, p Plan, content *snapv1.VolumeSnapshotContent) Plan {
	s := f.Snapshot
	if content.Spec.DeletionPolicy == snapv1.VolumeSnapshotContentDelete && !slices.Contains(s.Finalizers, snapshotapi.BoundFinalizer) &&
		(p.Create != nil || s.Status != nil && ptr.Deref(s.Status.BoundVolumeSnapshotContentName, "") != "") {
		p.AddFinalizers = append(p.AddFinalizers, snapshotapi.BoundFinalizer)
	}
	if p.Reason == "" {
		p.Reason = Mirrored
	}
	if f.GroupMissing {
		p.Retry = fmt.Errorf("updateSnapshotStatus: cannot find the group snapshot for VolumeSnapshot [%s], will not update snapshot status", key(s))
		return p
	}
	st, events := Mirror(s, content, f.GroupName)
	if st != nil {
		p.Status = st
		p.Events = append(p.Events, events...)
	} else if p.Reason == Mirrored && len(p.AddFinalizers) == 0 && p.SetClass == "" {
		p.Reason = InSync
	}
	return p
}

func decidePreProvisioned(f SnapshotFacts, p Plan) Plan {
	s, c := f.Snapshot, f.Content
	name := *s.Spec.Source.VolumeSnapshotContentName
	if c == nil {
		return fail(f, p, ContentMissing, true, "SnapshotContentMissing", "VolumeSnapshotContent is missing",
			fmt.Errorf("snapshot %s requests an non-existing content %s", key(s), name))
	}
	if c.Spec.Source.SnapshotHandle == nil {
		return fail(f, p, ContentMismatch, true, "SnapshotContentMismatch",
			"VolumeSnapshotContent is dynamically provisioned while expecting a pre-provisioned one",
			fmt.Errorf("snapshot %s expects a pre-provisioned VolumeSnapshotContent %s but gets a dynamically provisioned one", key(s), name))
	}
	r := c.Spec.VolumeSnapshotRef
	if r.Name != s.Name || r.Namespace != s.Namespace || r.UID != "" && r.UID != s.UID {
		msg := fmt.Sprintf("VolumeSnapshotContent [%s] is bound to a different snapshot", name)
		return fail(f, p, Misbound, true, "SnapshotContentMisbound", msg, errors.New(msg))
	}
	if err := boundElsewhere(s, name); err != nil {
		return fail(f, p, Misbound, true, "SnapshotMisbound", "VolumeSnapshotContent is not bound to the VolumeSnapshot correctly", err)
	}
	if r.UID == "" || c.Spec.VolumeSnapshotClassName == nil {
		p.Bind = &Bind{UID: string(s.UID), Class: s.Spec.VolumeSnapshotClassName}
		p.Reason = BindContent
		c = c.DeepCopy()
		c.Spec.VolumeSnapshotRef.UID = s.UID
	}
	return bound(f, p, c)
}

func decideMember(f SnapshotFacts, p Plan) Plan {
	s, c := f.Snapshot, f.Content
	if Designated(s) == "" {
		p.Reason = GroupMemberWaiting
		p.Retry = fmt.Errorf("detected group snapshot member %s with no content, retrying", key(s))
		return p
	}
	if c == nil {
		p.Reason = GroupMemberWaiting
		p.Retry = fmt.Errorf("group snapshot member %s requests an non-existing content %s", key(s), Designated(s))
		return p
	}
	if !PointsBack(s, c) {
		return fail(f, p, Misbound, true, "SnapshotMisbound", "VolumeSnapshotContent is not bound to the VolumeSnapshot correctly",
			fmt.Errorf("snapshot %s: content %s does not point back at it", key(s), c.Name))
	}
	return bound(f, p, c)
}

// boundElsewhere refuses a status naming another content than the one
// the snapshot's spec designates: the status is the user's to write too.
func boundElsewhere(s *snapv1.VolumeSnapshot, designated string) error {
	if s.Status == nil || ptr.Deref(s.Status.BoundVolumeSnapshotContentName, "") == "" {
		return nil
	}
	if got := *s.Status.BoundVolumeSnapshotContentName; got != designated {
		return fmt.Errorf("snapshot %s: status names content %s, its spec %s", key(s), got, designated)
	}
	return nil
}

func decideDynamic(f SnapshotFacts, p Plan, class *snapv1.VolumeSnapshotClass) Plan {
	s, c := f.Snapshot, f.Content
	name := snapshotapi.ContentName(s.UID)
	if err := boundElsewhere(s, name); err != nil {
		return fail(f, p, Misbound, true, "SnapshotMisbound", "VolumeSnapshotContent is not bound to the VolumeSnapshot correctly", err)
	}
	if c != nil {
		if c.Spec.Source.VolumeHandle == nil {
			return fail(f, p, ContentMismatch, true, "SnapshotContentMismatch",
				"VolumeSnapshotContent "+name+" is pre-provisioned while expecting a dynamically provisioned one",
				fmt.Errorf("snapshot %s expects a dynamically provisioned VolumeSnapshotContent %s but gets a pre-provisioned one", key(s), name))
		}
		if !PointsBack(s, c) {
			msg := fmt.Sprintf("VolumeSnapshotContent [%s] is bound to a different snapshot", name)
			return fail(f, p, Misbound, true, "SnapshotContentMisbound", msg, errors.New(msg))
		}
		if c.Spec.Source.SnapshotHandle != nil {
			return fail(f, p, ContentMismatch, true, "SnapshotHandleSet",
				fmt.Sprintf("Snapshot handle should not be set in content %s for dynamic provisioning", key(s)),
				fmt.Errorf("snapshotHandle should not be set in the content for dynamic provisioning for snapshot %s", key(s)))
		}
		return bound(f, p, c)
	}
	if s.Status != nil && ptr.Deref(s.Status.BoundVolumeSnapshotContentName, "") != "" && ptr.Deref(s.Status.ReadyToUse, false) {
		// Ready once and its content is gone: never made again.
		return fail(f, p, ContentMissing, true, "SnapshotContentMissing", "VolumeSnapshotContent is missing", nil)
	}
	content, err := newContent(f, class)
	if err != nil {
		return fail(f, p, WaitingForSource, true, "SnapshotContentCreationFailed",
			fmt.Sprintf("Failed to create snapshot content with error %v", err), err)
	}
	if f.Claim.DeletionTimestamp != nil && !slices.Contains(f.Claim.Finalizers, snapshotapi.ClaimFinalizer) {
		err := fmt.Errorf("snapshot controller failed to update %s on API server: cannot add finalizer on claim because it is being deleted", f.Claim.Name)
		return fail(f, p, ClaimDeleting, true, "SnapshotContentCreationFailed",
			fmt.Sprintf("Failed to create snapshot content with error %v", err), err)
	}
	p.Reason = CreateContent
	p.Create = content
	p.Events = append(p.Events, normal("CreatingSnapshot", fmt.Sprintf("Waiting for a snapshot %s to be created by the CSI driver.", key(s))))
	return bound(f, p, content)
}

// sourceVolume is the snapshot's claim's volume, checked both ways.
func sourceVolume(f SnapshotFacts) (*corev1.PersistentVolume, error) {
	s, claim, pv := f.Snapshot, f.Claim, f.Volume
	if claim != nil && (claim.Namespace != s.Namespace || claim.Name != ptr.Deref(s.Spec.Source.PersistentVolumeClaimName, "")) {
		claim = nil // only ever the snapshot's own claim
	}
	if claim == nil {
		return nil, fmt.Errorf("failed to retrieve PVC %s from the lister: %q", ptr.Deref(s.Spec.Source.PersistentVolumeClaimName, ""),
			fmt.Sprintf("persistentvolumeclaim %q not found", ptr.Deref(s.Spec.Source.PersistentVolumeClaimName, "")))
	}
	if claim.Status.Phase != corev1.ClaimBound {
		return nil, fmt.Errorf("the PVC %s is not yet bound to a PV, will not attempt to take a snapshot", claim.Name)
	}
	if pv == nil {
		return nil, fmt.Errorf("failed to retrieve PV %s from the API server: %q", claim.Spec.VolumeName,
			fmt.Sprintf("persistentvolume %q not found", claim.Spec.VolumeName))
	}
	r := pv.Spec.ClaimRef
	if pv.Name != claim.Spec.VolumeName || r == nil || r.Name != claim.Name || r.Namespace != claim.Namespace || r.UID != "" && r.UID != claim.UID {
		return nil, errors.New("claim in dataSource not bound or invalid")
	}
	return pv, nil
}

// newContent is the dynamic content of the snapshot, as the reference's
// createSnapshotContent makes it.
func newContent(f SnapshotFacts, class *snapv1.VolumeSnapshotClass) (*snapv1.VolumeSnapshotContent, error) {
	s := f.Snapshot
	if class == nil {
		return nil, fmt.Errorf("failed to take snapshot %s without a snapshot class", s.Name)
	}
	pv, err := sourceVolume(f)
	if err != nil {
		return nil, fmt.Errorf("failed to get input parameters to create snapshot %s: %q", s.Name, err.Error())
	}
	name := snapshotapi.ContentName(s.UID)
	secret, err := SecretRef(class.Parameters, name, s)
	if err != nil {
		return nil, fmt.Errorf("failed to get input parameters to create snapshot %s: %q", s.Name, err.Error())
	}
	if pv.Spec.CSI == nil {
		return nil, fmt.Errorf("cannot find CSI PersistentVolumeSource for volume %s", pv.Name)
	}
	c := &snapv1.VolumeSnapshotContent{
		// Born with its bound-protection finalizer: the reference adds it
		// in a patch right after the create.
		ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{snapshotapi.ContentFinalizer}},
		Spec: snapv1.VolumeSnapshotContentSpec{
			VolumeSnapshotRef: corev1.ObjectReference{Kind: snapshotapi.KindSnapshot, APIVersion: snapshotapi.Group + "/v1",
				Namespace: s.Namespace, Name: s.Name, UID: s.UID, ResourceVersion: s.ResourceVersion},
			Source:                  snapv1.VolumeSnapshotContentSource{VolumeHandle: ptr.To(pv.Spec.CSI.VolumeHandle)},
			VolumeSnapshotClassName: ptr.To(class.Name),
			DeletionPolicy:          class.DeletionPolicy,
			Driver:                  class.Driver,
		},
	}
	if f.ManagedBy != "" {
		c.Labels = map[string]string{snapshotapi.ManagedByLabel: f.ManagedBy}
	}
	if pv.Spec.VolumeMode != nil {
		c.Spec.SourceVolumeMode = ptr.To(*pv.Spec.VolumeMode)
	}
	if secret != nil {
		c.Annotations = map[string]string{snapshotapi.DeletionSecretName: secret.Name, snapshotapi.DeletionSecretNamespace: secret.Namespace}
	}
	return c, nil
}
