package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"

	groupv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/invariants"
	"github.com/volplane/volplane/internal/snapshotapi"
)

// The workload's snapshots: VolumeSnapshots of its claims (the default
// class of each driver), claims restored from them, VolumeGroupSnapshots
// of a few claims of one driver (and one node, for the node-local one),
// and their deletion. Every operation runs under snapMu, so that a
// snapshot is never deleted between the moment a restore chose it and
// the moment its claim exists (a claim restoring from a snapshot being
// deleted waits forever, upstream as here: that is the user's doing, not
// a fault of the loops).

// soakGroupClass is the network driver's VolumeGroupSnapshotClass, which
// the soak makes as an administrator would (up registers the node-local
// driver's only).
const soakGroupClass = "soak-network-group"

// maxSnapshots and maxGroups bound the live snapshots and groups.
const (
	maxSnapshots = 12
	maxGroups    = 3
)

// groupLabel marks the claims a group selects: one key per group, so that
// labelling the claims of a new group leaves the selection of the others.
const groupLabel = "soak-group-"

// withSnapshots gives the workload its snapshot operations.
func (w *workload) withSnapshots(snaps snapclient.Interface) *workload {
	w.snaps = snaps
	return w
}

// createSoakGroupClass makes the network driver's group class.
func createSoakGroupClass(ctx context.Context, snaps snapclient.Interface) error {
	c := &groupv1.VolumeGroupSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: soakGroupClass},
		Driver: hostpath.NetworkDriverName, DeletionPolicy: snapv1.VolumeSnapshotContentDelete}
	_, err := snaps.GroupsnapshotV1().VolumeGroupSnapshotClasses().Create(ctx, c, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// snapshotStep does one snapshot operation drawn from rng.
func (w *workload) snapshotStep(ctx context.Context, rng *rand.Rand, live []corev1.PersistentVolumeClaim) {
	w.snapMu.Lock()
	defer w.snapMu.Unlock()
	snaps, err := w.snaps.SnapshotV1().VolumeSnapshots(soakNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		w.done("list-snapshots", err)
		return
	}
	switch r := rng.IntN(100); {
	case r < 35:
		w.done("create-snapshot", w.createSnapshot(ctx, rng, live, snaps.Items))
	case r < 55:
		w.done("delete-snapshot", w.deleteSnapshot(ctx, rng, live, snaps.Items))
	case r < 75:
		w.done("restore", w.restoreSnapshot(ctx, rng, live, snaps.Items))
	case r < 88:
		w.done("create-group", w.createGroup(ctx, rng, live))
	default:
		w.done("delete-group", w.deleteGroup(ctx, rng))
	}
}

// createSnapshot snapshots a Bound claim, with its driver's default class.
func (w *workload) createSnapshot(ctx context.Context, rng *rand.Rand, live []corev1.PersistentVolumeClaim, snaps []snapv1.VolumeSnapshot) error {
	bound := slices.DeleteFunc(slices.Clone(live), func(c corev1.PersistentVolumeClaim) bool { return c.Status.Phase != corev1.ClaimBound })
	if len(bound) == 0 || len(liveSnapshots(snaps)) >= maxSnapshots {
		return errNothingToDo
	}
	claim := bound[rng.IntN(len(bound))]
	vs := &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s%d", w.next.Add(1))},
		Spec: snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To(claim.Name)}}}
	_, err := w.snaps.SnapshotV1().VolumeSnapshots(soakNamespace).Create(ctx, vs, metav1.CreateOptions{})
	return err
}

// liveSnapshots are the snapshots not being deleted that are no member of
// a group (a member goes with its group).
func liveSnapshots(all []snapv1.VolumeSnapshot) []snapv1.VolumeSnapshot {
	var out []snapv1.VolumeSnapshot
	for _, vs := range all {
		if vs.DeletionTimestamp == nil && !member(vs) {
			out = append(out, vs)
		}
	}
	return out
}

func member(vs snapv1.VolumeSnapshot) bool {
	return (vs.Status != nil && vs.Status.VolumeGroupSnapshotName != nil) ||
		slices.ContainsFunc(vs.OwnerReferences, func(o metav1.OwnerReference) bool { return o.Kind == "VolumeGroupSnapshot" })
}

// restoringFrom are the names of the snapshots a claim not yet Bound
// restores from.
func restoringFrom(live []corev1.PersistentVolumeClaim) map[string]bool {
	out := map[string]bool{}
	for _, c := range live {
		if ref := c.Spec.DataSourceRef; ref != nil && ref.Kind == snapshotapi.KindSnapshot && c.Status.Phase != corev1.ClaimBound {
			out[ref.Name] = true
		}
	}
	return out
}

// deleteSnapshot deletes a snapshot no Pending claim restores from, and
// remembers its content and backend snapshot (the invariants check they
// went too, under policy Delete).
func (w *workload) deleteSnapshot(ctx context.Context, rng *rand.Rand, live []corev1.PersistentVolumeClaim, snaps []snapv1.VolumeSnapshot) error {
	restoring := restoringFrom(live)
	candidates := slices.DeleteFunc(liveSnapshots(snaps), func(vs snapv1.VolumeSnapshot) bool { return restoring[vs.Name] })
	if len(candidates) == 0 {
		return errNothingToDo
	}
	vs := candidates[rng.IntN(len(candidates))]
	d := invariants.DeletedSnapshot{Namespace: vs.Namespace, Name: vs.Name, UID: vs.UID}
	if vs.Status != nil && vs.Status.BoundVolumeSnapshotContentName != nil {
		content, err := w.snaps.SnapshotV1().VolumeSnapshotContents().Get(ctx, *vs.Status.BoundVolumeSnapshotContentName, metav1.GetOptions{})
		if err == nil {
			d.Content, d.Policy = content.Name, content.Spec.DeletionPolicy
			if h := invariants.ContentHandle(content); h != "" {
				d.Snapshot = invariants.Volume{Driver: content.Spec.Driver, Handle: h}
			}
		}
	}
	uid := vs.UID
	err := w.snaps.SnapshotV1().VolumeSnapshots(soakNamespace).Delete(ctx, vs.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err == nil {
		w.mu.Lock()
		w.deletedSnapshots = append(w.deletedSnapshots, d)
		w.mu.Unlock()
	}
	return err
}

// restoreSnapshot makes a claim restored from a ready snapshot: of the
// node-local driver's Immediate class (the provisioner puts it on the
// snapshot's node) or of the network class, as large as the snapshot.
func (w *workload) restoreSnapshot(ctx context.Context, rng *rand.Rand, live []corev1.PersistentVolumeClaim, snaps []snapv1.VolumeSnapshot) error {
	ready := slices.DeleteFunc(liveSnapshots(snaps), func(vs snapv1.VolumeSnapshot) bool {
		return vs.Status == nil || vs.Status.ReadyToUse == nil || !*vs.Status.ReadyToUse || vs.Status.BoundVolumeSnapshotContentName == nil
	})
	if len(ready) == 0 || len(live) >= w.maxClaims {
		return errNothingToDo
	}
	vs := ready[rng.IntN(len(ready))]
	content, err := w.snaps.SnapshotV1().VolumeSnapshotContents().Get(ctx, *vs.Status.BoundVolumeSnapshotContentName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	class := bundle.ImmediateClass
	if content.Spec.Driver == hostpath.NetworkDriverName {
		class = bundle.NetworkClass
	}
	size := gi
	if rs := vs.Status.RestoreSize; rs != nil && rs.Cmp(size) > 0 {
		size = rs.DeepCopy()
	}
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("r%d", w.next.Add(1)), Labels: map[string]string{"soak-class": class}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &class,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
			DataSource:       &corev1.TypedLocalObjectReference{APIGroup: ptr.To(snapshotapi.Group), Kind: snapshotapi.KindSnapshot, Name: vs.Name},
			DataSourceRef:    &corev1.TypedObjectReference{APIGroup: ptr.To(snapshotapi.Group), Kind: snapshotapi.KindSnapshot, Name: vs.Name},
		},
	}
	_, err = w.client.CoreV1().PersistentVolumeClaims(soakNamespace).Create(ctx, claim, metav1.CreateOptions{})
	return err
}

// createGroup labels up to three Bound claims of one driver (and one node,
// for the node-local driver) and takes a group snapshot of them.
func (w *workload) createGroup(ctx context.Context, rng *rand.Rand, live []corev1.PersistentVolumeClaim) error {
	groups, err := w.snaps.GroupsnapshotV1().VolumeGroupSnapshots(soakNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	if n := len(slices.DeleteFunc(groups.Items, func(g groupv1.VolumeGroupSnapshot) bool { return g.DeletionTimestamp != nil })); n >= maxGroups {
		return errNothingToDo
	}
	// Claims by where their volume is: the network driver, or a node.
	where := map[string][]string{}
	for _, c := range live {
		if c.Status.Phase != corev1.ClaimBound {
			continue
		}
		pv, err := w.client.CoreV1().PersistentVolumes().Get(ctx, c.Spec.VolumeName, metav1.GetOptions{})
		if err != nil || pv.Spec.CSI == nil {
			continue
		}
		key := pv.Spec.CSI.Driver
		if key == hostpath.DriverName {
			key += "@" + nodeOf(pv)
		}
		where[key] = append(where[key], c.Name)
	}
	keys := make([]string, 0, len(where))
	for k := range where {
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return errNothingToDo
	}
	slices.Sort(keys)
	key := keys[rng.IntN(len(keys))]
	claims := where[key]
	rng.Shuffle(len(claims), func(i, j int) { claims[i], claims[j] = claims[j], claims[i] })
	claims = claims[:min(3, len(claims))]
	name := fmt.Sprintf("g%d", w.next.Add(1))
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:"yes"}}}`, groupLabel+name)
	for _, c := range claims {
		if _, err := w.client.CoreV1().PersistentVolumeClaims(soakNamespace).Patch(ctx, c, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return err
		}
	}
	g := &groupv1.VolumeGroupSnapshot{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: groupv1.VolumeGroupSnapshotSpec{Source: groupv1.VolumeGroupSnapshotSource{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{groupLabel + name: "yes"}}}}}
	if key == hostpath.NetworkDriverName {
		g.Spec.VolumeGroupSnapshotClassName = ptr.To(soakGroupClass)
	}
	_, err = w.snaps.GroupsnapshotV1().VolumeGroupSnapshots(soakNamespace).Create(ctx, g, metav1.CreateOptions{})
	return err
}

// nodeOf is the node a node-local PV's affinity names, "" if none.
func nodeOf(pv *corev1.PersistentVolume) string {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return ""
	}
	for _, t := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, e := range t.MatchExpressions {
			if e.Key == hostpath.TopologyKey && len(e.Values) == 1 {
				return e.Values[0]
			}
		}
	}
	return ""
}

// deleteGroup deletes a group snapshot (its members go with it).
func (w *workload) deleteGroup(ctx context.Context, rng *rand.Rand) error {
	groups, err := w.snaps.GroupsnapshotV1().VolumeGroupSnapshots(soakNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	live := slices.DeleteFunc(groups.Items, func(g groupv1.VolumeGroupSnapshot) bool { return g.DeletionTimestamp != nil })
	if len(live) == 0 {
		return errNothingToDo
	}
	g := live[rng.IntN(len(live))]
	uid := g.UID
	return w.snaps.GroupsnapshotV1().VolumeGroupSnapshots(soakNamespace).Delete(ctx, g.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
}

// snapshotsUnfinished lists the snapshot work not done yet: nothing is
// Terminating; every snapshot is ready, but one whose claim went before
// it was taken (it has no content, and never will); every group is ready,
// but one that failed before it had a content (a selection that came to
// nothing) or one that failed once a claim it selected went before its
// group snapshot was taken (nothing protects a group's claims, in the
// reference either: the driver answers NotFound for the volume, for good).
func snapshotsUnfinished(claims []corev1.PersistentVolumeClaim, snaps []snapv1.VolumeSnapshot, contents []snapv1.VolumeSnapshotContent,
	groups []groupv1.VolumeGroupSnapshot, groupContents []groupv1.VolumeGroupSnapshotContent) []string {
	var out []string
	claimed := map[string]bool{}
	for _, c := range claims {
		if c.DeletionTimestamp == nil {
			claimed[c.Namespace+"/"+c.Name] = true
		}
	}
	for _, vs := range snaps {
		ready := vs.Status != nil && vs.Status.ReadyToUse != nil && *vs.Status.ReadyToUse
		bound := vs.Status != nil && vs.Status.BoundVolumeSnapshotContentName != nil
		source := vs.Spec.Source.PersistentVolumeClaimName
		switch {
		case vs.DeletionTimestamp != nil:
			out = append(out, fmt.Sprintf("VolumeSnapshot %s is still Terminating (finalizers %v)", vs.Name, vs.Finalizers))
		case ready:
		case !bound && source != nil && !claimed[vs.Namespace+"/"+*source]:
		default:
			out = append(out, fmt.Sprintf("VolumeSnapshot %s is not ready (status %s)", vs.Name, snapshotStatus(vs.Status)))
		}
	}
	for _, c := range contents {
		if c.DeletionTimestamp != nil {
			out = append(out, fmt.Sprintf("VolumeSnapshotContent %s is still Terminating (finalizers %v, annotations %v)", c.Name, c.Finalizers, c.Annotations))
		}
	}
	for _, g := range groups {
		st := g.Status
		switch {
		case g.DeletionTimestamp != nil:
			out = append(out, fmt.Sprintf("VolumeGroupSnapshot %s is still Terminating (finalizers %v)", g.Name, g.Finalizers))
		case st != nil && st.ReadyToUse != nil && *st.ReadyToUse:
		case st != nil && st.Error != nil && st.BoundVolumeGroupSnapshotContentName == nil:
		case st != nil && st.Error != nil && lostAClaim(g, claims, groupContents):
		default:
			out = append(out, fmt.Sprintf("VolumeGroupSnapshot %s is not ready (status %+v)", g.Name, st))
		}
	}
	for _, c := range groupContents {
		if c.DeletionTimestamp != nil {
			out = append(out, fmt.Sprintf("VolumeGroupSnapshotContent %s is still Terminating (finalizers %v)", c.Name, c.Finalizers))
		}
	}
	return out
}

func snapshotStatus(st *snapv1.VolumeSnapshotStatus) string {
	if st == nil {
		return "none"
	}
	msg := ""
	if st.Error != nil && st.Error.Message != nil {
		msg = *st.Error.Message
	}
	return fmt.Sprintf("bound %v, ready %v, error %q", ptr.Deref(st.BoundVolumeSnapshotContentName, ""), ptr.Deref(st.ReadyToUse, false), msg)
}

// lostAClaim says fewer claims carry the group's label than its content
// has source volumes: one it selected went.
func lostAClaim(g groupv1.VolumeGroupSnapshot, claims []corev1.PersistentVolumeClaim, contents []groupv1.VolumeGroupSnapshotContent) bool {
	name := ptr.Deref(g.Status.BoundVolumeGroupSnapshotContentName, "")
	i := slices.IndexFunc(contents, func(c groupv1.VolumeGroupSnapshotContent) bool { return c.Name == name })
	if i < 0 {
		return false
	}
	selected := 0
	for _, c := range claims {
		if c.Namespace == g.Namespace && c.DeletionTimestamp == nil && c.Labels[groupLabel+g.Name] == "yes" {
			selected++
		}
	}
	return selected < len(contents[i].Spec.Source.VolumeHandles)
}

// listSnapshotWork lists what snapshotsUnfinished looks at.
func listSnapshotWork(ctx context.Context, snaps snapclient.Interface, claims []corev1.PersistentVolumeClaim) ([]string, error) {
	vs, err := snaps.SnapshotV1().VolumeSnapshots("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	contents, err := snaps.SnapshotV1().VolumeSnapshotContents().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	groups, err := snaps.GroupsnapshotV1().VolumeGroupSnapshots("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	groupContents, err := snaps.GroupsnapshotV1().VolumeGroupSnapshotContents().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return snapshotsUnfinished(claims, vs.Items, contents.Items, groups.Items, groupContents.Items), nil
}

// settleRestores deletes, as their owner would, the claims not Bound that
// restore from a snapshot that is gone or going: they can never be
// provisioned.
func (w *workload) settleRestores(ctx context.Context) {
	claims, err := w.client.CoreV1().PersistentVolumeClaims(soakNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, c := range liveClaims(claims.Items) {
		ref := c.Spec.DataSourceRef
		if ref == nil || ref.Kind != snapshotapi.KindSnapshot || c.Status.Phase == corev1.ClaimBound {
			continue
		}
		vs, err := w.snaps.SnapshotV1().VolumeSnapshots(soakNamespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && vs.DeletionTimestamp != nil) {
			_ = w.deleteClaim(ctx, c)
		}
	}
}
