package rbac

import (
	"context"
	"fmt"

	groupv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/snapshotapi"
)

// snapshots is the administrator's (the user's) snapshot API client.
func (e *env) snapshots() snapclient.Interface {
	e.t.Helper()
	c, err := snapclient.NewForConfig(bed.stack.CP.RESTConfig)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// snapshot takes a VolumeSnapshot of claim (class "" for the driver's
// default) and waits until it is ready; it returns its content's name.
func (e *env) snapshot(name, claim, class string) string {
	e.t.Helper()
	vs := &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To(claim)}}}
	if class != "" {
		vs.Spec.VolumeSnapshotClassName = ptr.To(class)
	}
	if _, err := e.snapshots().SnapshotV1().VolumeSnapshots(e.ns).Create(e.ctx, vs, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	return e.snapshotReady(name)
}

// snapshotReady waits until the VolumeSnapshot is ready to use and
// returns its content's name.
func (e *env) snapshotReady(name string) string {
	e.t.Helper()
	var content string
	e.eventually("VolumeSnapshot "+name+" ready", func() string {
		vs, err := e.snapshots().SnapshotV1().VolumeSnapshots(e.ns).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		st := vs.Status
		if st == nil || st.ReadyToUse == nil || !*st.ReadyToUse || st.BoundVolumeSnapshotContentName == nil {
			return fmt.Sprintf("status %+v; events %s", st, e.events(name))
		}
		content = *st.BoundVolumeSnapshotContentName
		return ""
	})
	return content
}

// networkGroupClass makes a VolumeGroupSnapshotClass of the network
// driver whose group snapshots need the secret; it goes when the test
// ends.
func networkGroupClass(e *env, secret string) string {
	e.t.Helper()
	name := "rbac-network-group-" + e.ns
	c := &groupv1.VolumeGroupSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Driver: hostpath.NetworkDriverName,
		DeletionPolicy: snapv1.VolumeSnapshotContentDelete,
		Parameters:     map[string]string{snapshotapi.GroupSecretNameParameter: secret, snapshotapi.GroupSecretNamespaceParameter: e.ns}}
	classes := e.snapshots().GroupsnapshotV1().VolumeGroupSnapshotClasses()
	if _, err := classes.Create(e.ctx, c, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = classes.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return name
}

// restore makes a claim of class and size restored from the
// VolumeSnapshot snapshot (its dataSourceRef).
func (e *env) restore(name, class, size, snapshot string) {
	e.t.Helper()
	e.claim(name, class, func(c *corev1.PersistentVolumeClaim) {
		c.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse(size)
		c.Spec.DataSourceRef = &corev1.TypedObjectReference{APIGroup: ptr.To(snapshotapi.Group), Kind: snapshotapi.KindSnapshot, Name: snapshot}
		c.Spec.DataSource = &corev1.TypedLocalObjectReference{APIGroup: ptr.To(snapshotapi.Group), Kind: snapshotapi.KindSnapshot, Name: snapshot}
		// At least the snapshot's size (its sources were grown to 2Gi):
		// a smaller request is refused, as the external-provisioner refuses it.
		c.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
	})
}

// groupSnapshot takes a VolumeGroupSnapshot of the claims labelled
// label=value (class "" for the default) and waits until it is ready; it
// returns its content's name.
func (e *env) groupSnapshot(name, class, label, value string) string {
	e.t.Helper()
	g := &groupv1.VolumeGroupSnapshot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: groupv1.VolumeGroupSnapshotSpec{Source: groupv1.VolumeGroupSnapshotSource{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{label: value}}}}}
	if class != "" {
		g.Spec.VolumeGroupSnapshotClassName = ptr.To(class)
	}
	groups := e.snapshots().GroupsnapshotV1().VolumeGroupSnapshots(e.ns)
	if _, err := groups.Create(e.ctx, g, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	var content string
	e.eventually("VolumeGroupSnapshot "+name+" ready", func() string {
		g, err := groups.Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		st := g.Status
		if st == nil || st.ReadyToUse == nil || !*st.ReadyToUse || st.BoundVolumeGroupSnapshotContentName == nil {
			return fmt.Sprintf("status %+v; events %s", st, e.events(name))
		}
		content = *st.BoundVolumeGroupSnapshotContentName
		return ""
	})
	return content
}

// snapshotGone deletes a VolumeSnapshot and waits until it and its
// content are gone (class policy Delete: the backend snapshot with them).
func (e *env) snapshotGone(name, content string) {
	e.t.Helper()
	snaps := e.snapshots().SnapshotV1()
	if err := snaps.VolumeSnapshots(e.ns).Delete(e.ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		e.t.Fatal(err)
	}
	e.waitGone("VolumeSnapshot", name, func() error {
		_, err := snaps.VolumeSnapshots(e.ns).Get(e.ctx, name, metav1.GetOptions{})
		return err
	})
	e.waitGone("VolumeSnapshotContent", content, func() error {
		_, err := snaps.VolumeSnapshotContents().Get(e.ctx, content, metav1.GetOptions{})
		return err
	})
}

// groupSnapshotGone deletes a VolumeGroupSnapshot and waits until it, its
// content and its members' snapshots are gone.
func (e *env) groupSnapshotGone(name, content string) {
	e.t.Helper()
	groups := e.snapshots().GroupsnapshotV1()
	if err := groups.VolumeGroupSnapshots(e.ns).Delete(e.ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		e.t.Fatal(err)
	}
	e.waitGone("VolumeGroupSnapshot", name, func() error {
		_, err := groups.VolumeGroupSnapshots(e.ns).Get(e.ctx, name, metav1.GetOptions{})
		return err
	})
	e.waitGone("VolumeGroupSnapshotContent", content, func() error {
		_, err := groups.VolumeGroupSnapshotContents().Get(e.ctx, content, metav1.GetOptions{})
		return err
	})
	e.eventually("the members of "+name+" gone", func() string {
		list, err := e.snapshots().SnapshotV1().VolumeSnapshots(e.ns).List(e.ctx, metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		for _, vs := range list.Items {
			if vs.Status != nil && vs.Status.VolumeGroupSnapshotName != nil && *vs.Status.VolumeGroupSnapshotName == name {
				return fmt.Sprintf("member %s still there (finalizers %v)", vs.Name, vs.Finalizers)
			}
		}
		return ""
	})
}

// networkSnapshotClass makes a VolumeSnapshotClass of the network driver
// whose snapshots need the secret (the CSI sidecar reads it for
// CreateSnapshot and DeleteSnapshot); it goes when the test ends.
func networkSnapshotClass(e *env, secret string) string {
	e.t.Helper()
	name := "rbac-network-" + e.ns
	c := &snapv1.VolumeSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Driver: hostpath.NetworkDriverName,
		DeletionPolicy: snapv1.VolumeSnapshotContentDelete,
		Parameters:     map[string]string{snapshotapi.SecretNameParameter: secret, snapshotapi.SecretNamespaceParameter: e.ns}}
	classes := e.snapshots().SnapshotV1().VolumeSnapshotClasses()
	if _, err := classes.Create(e.ctx, c, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = classes.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return name
}

// snapshotLifecycle takes snapshots through the loops under test: the
// snapshot loop in the controller binds them, the snapshotter beside each
// driver (the node deployment's for the node-local claim wffc, used by a
// pod on node; the CSI sidecar's for the network claim, whose class needs
// secret) makes them; each is restored into a new claim (the provisioners
// read the snapshot and its content and hold the snapshot while they
// restore); a group snapshot takes each claim again (the network one's class
// needs secret too); then everything is deleted and the contents go
// (policy Delete).
func snapshotLifecycle(e *env, node, local, network, secret string) {
	localContent := e.snapshot("snap-local", local, "")
	networkContent := e.snapshot("snap-network", network, networkSnapshotClass(e, secret))

	e.restore("restored-local", bundle.WaitClass, "2Gi", "snap-local") // wffc was grown
	e.pod("restored-app", node, "restored-local")
	e.bound("restored-local")
	e.running("restored-app")
	e.restore("restored-network", bundle.NetworkClass, "1Gi", "snap-network")
	e.bound("restored-network")

	for claim, group := range map[string]string{local: "local", network: "network"} {
		patch := fmt.Appendf(nil, `{"metadata":{"labels":{"rbac-group":%q}}}`, group)
		if _, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Patch(e.ctx, claim, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			e.t.Fatal(err)
		}
	}
	localGroup := e.groupSnapshot("group-local", "", "rbac-group", "local")
	networkGroup := e.groupSnapshot("group-network", networkGroupClass(e, secret), "rbac-group", "network")

	e.groupSnapshotGone("group-local", localGroup)
	e.groupSnapshotGone("group-network", networkGroup)
	e.snapshotGone("snap-local", localContent)
	e.snapshotGone("snap-network", networkContent)
	e.gone("pod", "restored-app")
	e.gone("claim", "restored-local")
	e.gone("claim", "restored-network")
}
