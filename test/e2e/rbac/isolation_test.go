package rbac

import (
	"context"
	"fmt"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/volplane/volplane/internal/heartbeat"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/stacktest"
)

// dryRun makes every probe below harmless when the API server allows it:
// authorization is decided before a dry run stops short of storage.
var dryRun = []string{metav1.DryRunAll}

// lease is the Lease a role keeps: the leader election Lease of the
// central roles, the heartbeat Lease of the first node for the node
// deployment (one per node, all in one namespace).
func (r role) lease(stack *stacktest.Stack) (namespace, name string, err error) {
	cfgs, err := r.configs(stack.CP.RESTConfig, stack)
	if err != nil {
		return "", "", err
	}
	cfg := cfgs[0]
	if cfg.NodeDeployment != nil {
		return cfg.LeaderElectNamespace, heartbeat.LeaseName(hostpath.DriverName, cfg.NodeDeployment.NodeName), nil
	}
	return cfg.LeaderElectNamespace, cfg.LeaderElectName, nil
}

// No role can create, update or delete another role's Lease, nor create a
// Lease where another keeps its own: a node (one escape from any pod on
// it) that could write the controller's leader election Lease could hold
// it forever, and stop the binder cluster-wide. The node deployment's
// pods share one namespace for their heartbeats (their names depend on
// the node, which RBAC cannot name); heartbeats only inform explain and
// doctor.
func TestNoRoleWritesAnothersLease(t *testing.T) {
	ctx := context.Background()
	rs, err := roles(bed.deploy)
	if err != nil {
		t.Fatal(err)
	}
	type owned struct{ role, namespace, name string }
	var leases []owned
	for _, r := range rs {
		ns, name, err := r.lease(bed.stack)
		if err != nil {
			t.Fatal(err)
		}
		leases = append(leases, owned{r.serviceAccount, ns, name})
		ensureLease(t, ctx, bed.stack.CP.Client, ns, name)
	}
	for _, r := range rs {
		client := clientAs(t, ctx, r.serviceAccount, "")
		for _, l := range leases {
			if l.role == r.serviceAccount {
				continue
			}
			leases := client.CoordinationV1().Leases(l.namespace)
			probes := map[string]func() error{
				"update": func() error {
					cur, err := bed.stack.CP.Client.CoordinationV1().Leases(l.namespace).Get(ctx, l.name, metav1.GetOptions{})
					if err != nil {
						t.Fatal(err)
					}
					cur.Spec.HolderIdentity = &r.serviceAccount
					_, err = leases.Update(ctx, cur, metav1.UpdateOptions{DryRun: dryRun})
					return err
				},
				"delete": func() error {
					return leases.Delete(ctx, l.name, metav1.DeleteOptions{DryRun: dryRun})
				},
				"create a Lease beside": func() error {
					probe := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "rbac-probe", Namespace: l.namespace}}
					_, err := leases.Create(ctx, probe, metav1.CreateOptions{DryRun: dryRun})
					return err
				},
			}
			for what, probe := range probes {
				if err := probe(); !apierrors.IsForbidden(err) {
					t.Errorf("%s may %s %s's Lease %s/%s (%v), want 403", r.serviceAccount, what, l.role, l.namespace, l.name, err)
				}
			}
		}
	}
}

// The binder creates and deletes pods only to recycle volumes, in its
// recycler namespace (the binder's default, "default", as the
// reference's): everywhere else the controller may read pods, not run
// them with the volumes it chooses.
func TestControllerRunsPodsOnlyInTheRecyclerNamespace(t *testing.T) {
	ctx := context.Background()
	client := clientAs(t, ctx, "volplane-controller", "")
	const recyclerNamespace = metav1.NamespaceDefault
	for _, ns := range []string{stacktest.Namespace(t), metav1.NamespaceSystem, namespace, recyclerNamespace} {
		pods := client.CoreV1().Pods(ns)
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "rbac-probe", Namespace: ns},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1.37"}}}}
		_, createErr := pods.Create(ctx, pod, metav1.CreateOptions{DryRun: dryRun})
		deleteErr := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{DryRun: dryRun})
		allowed := ns == recyclerNamespace
		for what, err := range map[string]error{"create": createErr, "delete": deleteErr} {
			if apierrors.IsForbidden(err) == allowed {
				t.Errorf("the controller's %s of a pod in %s: %v, want allowed %v", what, ns, err, allowed)
			}
		}
	}
}

// ensureLease creates the Lease as admin if it is not there (no holder:
// a role that runs later takes it as on a fresh install).
func ensureLease(t *testing.T, ctx context.Context, admin kubernetes.Interface, ns, name string) {
	t.Helper()
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if _, err := admin.CoordinationV1().Leases(ns).Create(ctx, l, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// clientAs is a client with a token of the ServiceAccount alone, bound
// to node unless it is "".
func clientAs(t *testing.T, ctx context.Context, serviceAccount, node string) kubernetes.Interface {
	t.Helper()
	rc, err := restConfig(ctx, bed.stack, serviceAccount, node, newRequestLog())
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(fmt.Errorf("client for %s: %w", serviceAccount, err))
	}
	return client
}

// The node role writes only its own node's volumes of the node-local
// driver (deploy/'s admission policy; RBAC cannot say which PVs): from a
// node, neither another node's volume, nor one of another driver, nor a
// hostPath volume (one of / pre-bound to a tenant's claim would give the
// tenant the root of whatever node its pod lands on). A token that names
// no node may write none.
func TestNodeRoleWritesOnlyItsNodesVolumes(t *testing.T) {
	ctx := context.Background()
	node := bed.stack.CP.Nodes[0]
	admin := bed.stack.CP.Client.CoreV1().PersistentVolumes()
	ns := stacktest.Namespace(t)
	pv := func(name string, source corev1.PersistentVolumeSource, onNode string) *corev1.PersistentVolume {
		v := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-" + ns},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
				PersistentVolumeSource:        source,
			},
		}
		if onNode != "" {
			v.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: hostpath.TopologyKey, Operator: corev1.NodeSelectorOpIn, Values: []string{onNode}}}}}}}
		}
		return v
	}
	csi := func(driver string) corev1.PersistentVolumeSource {
		return corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: "rbac-" + ns}}
	}
	own := pv("own", csi(hostpath.DriverName), node)
	others := []*corev1.PersistentVolume{
		pv("other-node", csi(hostpath.DriverName), "elsewhere"),
		pv("other-driver", csi(hostpath.NetworkDriverName), node),
		pv("no-affinity", csi(hostpath.DriverName), ""),
		pv("host-root", corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}, node),
	}
	for _, v := range append([]*corev1.PersistentVolume{own}, others...) {
		if _, err := admin.Create(ctx, v, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = admin.Delete(context.Background(), v.Name, metav1.DeleteOptions{}) })
	}
	// writes are the node role's writes of v: create (a copy), patch
	// (a label: its loops patch, and admission sees a patch as an UPDATE)
	// and delete, each a dry run, each answered by err.
	writes := func(client kubernetes.Interface, v *corev1.PersistentVolume) map[string]error {
		pvs := client.CoreV1().PersistentVolumes()
		fresh := v.DeepCopy()
		fresh.Name, fresh.ResourceVersion, fresh.UID = v.Name+"-copy", "", ""
		_, createErr := pvs.Create(ctx, fresh, metav1.CreateOptions{DryRun: dryRun})
		_, patchErr := pvs.Patch(ctx, v.Name, types.MergePatchType, []byte(`{"metadata":{"labels":{"rbac":"probe"}}}`),
			metav1.PatchOptions{DryRun: dryRun})
		return map[string]error{"create": createErr, "patch": patchErr,
			"delete": pvs.Delete(ctx, v.Name, metav1.DeleteOptions{DryRun: dryRun})}
	}
	onNode := clientAs(t, ctx, "volplane-node", node)
	// The policy takes effect once the API server has loaded it.
	stacktest.Eventually(t, "the node role refused another node's volume", func() string {
		if err := writes(onNode, others[0])["delete"]; !apierrors.IsForbidden(err) {
			return fmt.Sprintf("delete: %v", err)
		}
		return ""
	}, bed.stack.EndedEarly)
	for what, err := range writes(onNode, own) {
		if err != nil {
			t.Errorf("the node role's %s of its own node's volume: %v, want allowed", what, err)
		}
	}
	for _, v := range others {
		for what, err := range writes(onNode, v) {
			if !apierrors.IsForbidden(err) {
				t.Errorf("the node role's %s of %s from %s: %v, want 403", what, v.Name, node, err)
			}
		}
	}
	for what, err := range writes(clientAs(t, ctx, "volplane-node", ""), own) {
		if !apierrors.IsForbidden(err) {
			t.Errorf("the node role's %s with a token of no node: %v, want 403", what, err)
		}
	}
}

// The snapshot loop looks for another snapshot-controller's leader
// election Lease in every namespace, and may read that Lease alone: a
// list of every Lease (or of another name) is refused.
func TestControllerListsOnlyTheOtherSnapshotControllersLease(t *testing.T) {
	ctx := context.Background()
	leases := clientAs(t, ctx, "volplane-controller", "").CoordinationV1().Leases(metav1.NamespaceAll)
	for selector, allowed := range map[string]bool{
		"metadata.name=snapshot-controller-leader": true,
		"metadata.name=volplane-controller":        false,
		"":                                         false,
	} {
		_, err := leases.List(ctx, metav1.ListOptions{FieldSelector: selector})
		if (err == nil) != allowed || (err != nil && !apierrors.IsForbidden(err)) {
			t.Errorf("the controller's list of Leases with %q: %v, want allowed %v", selector, err, allowed)
		}
	}
}
