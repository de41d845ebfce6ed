package rbac

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/stacktest"
)

// unreachable are the grants the lifecycle below cannot use, each with
// the reason it is granted all the same. Keyed "serviceAccount: grant".
var unreachable = map[string]string{
	// The binder reads its recycler pod from the API server only when
	// its cache does not hold the pod yet right after creating it: a race
	// the lifecycle does not reach on purpose.
	"volplane-controller: get pods in default": "recycler pod read live while the cache lags",
	// The snapshot loop reads a group member's snapshot live before it
	// deletes a content whose snapshot its cache does not hold: a race the
	// lifecycle does not reach on purpose (without the grant the read is
	// forbidden and the content kept until the cache catches up).
	"volplane-controller: get volumesnapshots.snapshot.storage.k8s.io": "member snapshot read live while the cache lags",
	// The event recorder patches an event that repeats (its count)
	// instead of creating another; no event of the lifecycle repeats
	// within the recorder's window.
	"volplane-controller: patch events":  "repeated events",
	"volplane-node: patch events":        "repeated events",
	"volplane-csi-sidecar: patch events": "repeated events",
	// A node's capacity loop deletes its CSIStorageCapacity object when
	// the class or the node's segment goes, which the lifecycle does not
	// do (test/e2e/capacity does).
	"volplane-node: delete csistoragecapacities.storage.k8s.io in volplane-nodes": "objects of a class or segment that goes",
}

// running is one role's loops, started with its own credentials.
type running struct {
	role
	log *requestLog
	// loops: one run of the role's loops, or one per node for a node
	// deployment (a DaemonSet's pods), all with the role's token.
	loops []*stacktest.Loops
}

// endedEarly reports the first of the role's runs that ended on its own.
func (r *running) endedEarly() error {
	for _, l := range r.loops {
		if err := l.EndedEarly(); err != nil {
			return err
		}
	}
	return nil
}

// stop stops every run of the role and returns the first error.
func (r *running) stop() error {
	var first error
	for _, l := range r.loops {
		if err := l.Stop(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Each deployed role runs with its ServiceAccount's token alone while the
// whole lifecycle goes through: static binding, dynamic provisioning
// (Immediate and WaitForFirstConsumer), pods on node-local and attached
// network volumes, online expansion, snapshots, restores and a group
// snapshot and their deletion, the protection finalizers, and reclaim with
// Delete and Retain. No request of any role is forbidden, and
// every rule a role is granted is one its loops used.
func TestDeployedRolesRunTheLifecycleWithTheirOwnPermissions(t *testing.T) {
	ctx := context.Background()
	rs, err := roles(bed.deploy)
	if err != nil {
		t.Fatal(err)
	}
	// As on a fresh install, no Lease exists yet: creating it is part of
	// what the roles must be allowed (the test may run again, -count).
	for _, r := range rs {
		ns, _, err := r.lease(bed.stack)
		if err != nil {
			t.Fatal(err)
		}
		if err := bed.stack.CP.Client.CoordinationV1().Leases(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	runs := start(t, ctx, rs)
	e := &env{t: t, ctx: ctx, client: bed.stack.CP.Client, ns: stacktest.Namespace(t), alive: func() error {
		for _, r := range runs {
			if err := r.endedEarly(); err != nil {
				return fmt.Errorf("%s: %w", r.serviceAccount, err)
			}
		}
		return bed.stack.EndedEarly()
	}}
	lifecycle(e)
	// Stopped, the leaders release their Leases: that update is theirs too.
	for _, r := range runs {
		if err := r.stop(); err != nil {
			t.Errorf("%s: the loops returned %v", r.serviceAccount, err)
		}
	}
	for _, r := range runs {
		unused, stale, err := audit(r)
		if err != nil {
			t.Error(err)
		}
		for _, g := range unused {
			t.Errorf("%s is granted %s, which its loops never used: remove the rule, or list it in unreachable with the reason", r.serviceAccount, g)
		}
		for _, key := range stale {
			t.Errorf("unreachable lists %s, which is not granted: remove the entry", key)
		}
	}
}

// start runs every role's loops with a token of its ServiceAccount; when
// the test ends they stop, and any call of theirs that was forbidden
// fails it.
func start(t *testing.T, ctx context.Context, rs []role) []*running {
	var runs []*running
	for _, r := range rs {
		log := newRequestLog()
		rc, err := restConfig(ctx, bed.stack, r.serviceAccount, "", log)
		if err != nil {
			t.Fatal(err)
		}
		cfgs, err := r.configs(rc, bed.stack)
		if err != nil {
			t.Fatal(err)
		}
		run := &running{role: r, log: log}
		for _, cfg := range cfgs {
			if cfg.NodeDeployment != nil { // the DaemonSet's pod on that node
				if cfg.REST, err = restConfig(ctx, bed.stack, r.serviceAccount, cfg.NodeDeployment.NodeName, log); err != nil {
					t.Fatal(err)
				}
			}
			run.loops = append(run.loops, stacktest.StartLoops(cfg))
		}
		// Also when the lifecycle failed: a forbidden call is the likely
		// reason.
		t.Cleanup(func() {
			_ = run.stop()
			logCalls(t, run)
			if denied := run.log.forbidden(); len(denied) > 0 {
				t.Errorf("%s was forbidden: %v", run.serviceAccount, denied)
			}
		})
		runs = append(runs, run)
	}
	return runs
}

// audit compares a role's grants in deploy/ with the calls its loops
// made: the grants no call used (but those listed in unreachable), and
// the entries of unreachable for the role that grant nothing (the rule is
// gone). An entry used after all is not an error: some are races the
// lifecycle may hit.
func audit(r *running) (unused, stale []string, err error) {
	grants, err := grantsOf(bed.deploy, r.serviceAccount)
	if err != nil {
		return nil, nil, err
	}
	if len(grants) == 0 {
		return nil, nil, errors.New(r.serviceAccount + " is granted nothing in deploy/")
	}
	calls := r.log.all()
	granted := map[string]bool{}
	for _, g := range grants {
		key := r.serviceAccount + ": " + g.String()
		granted[key] = true
		if _, listed := unreachable[key]; !listed && !g.usedBy(calls) {
			unused = append(unused, g.String())
		}
	}
	for key := range unreachable {
		if strings.HasPrefix(key, r.serviceAccount+": ") && !granted[key] {
			stale = append(stale, key)
		}
	}
	slices.Sort(unused)
	slices.Sort(stale)
	return slices.Compact(unused), stale, nil
}

// lifecycle drives every phase through the loops under test.
func lifecycle(e *env) {
	node := bed.stack.CP.Nodes[0]
	network, premium, secret := networkClasses(e)

	// Static: an administrator's PVs and claims that select them.
	static := e.staticBound("static", corev1.PersistentVolumeReclaimRetain, corev1.PersistentVolumeSource{
		CSI: &corev1.CSIPersistentVolumeSource{Driver: hostpath.NetworkDriverName, VolumeHandle: "static-" + e.ns}})
	recycled := e.staticBound("recycled", corev1.PersistentVolumeReclaimRecycle, corev1.PersistentVolumeSource{
		HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/volplane-rbac/" + e.ns}})
	// Dynamic, node-local: Immediate (with deploy/'s attributes class)
	// and WaitForFirstConsumer (provisioned on the node of its pod).
	e.claim("immediate", bundle.ImmediateClass, func(c *corev1.PersistentVolumeClaim) {
		c.Spec.VolumeAttributesClassName = ptr.To(bundle.StandardAttributes)
	})
	immediate := e.bound("immediate")
	e.attributes("immediate", bundle.StandardAttributes)
	e.claim("wffc", bundle.WaitClass)
	e.pod("local-app", node, "wffc")
	wffc := e.bound("wffc")
	e.running("local-app")
	// Grown and given other attributes by its node's resizer (the
	// DaemonSet's node deployment).
	e.grow("wffc", "2Gi")
	e.modify("immediate", bundle.FastAttributes)
	// Network, policy Retain: attached to the pod's node, grown and
	// given other attributes while in use.
	e.claim("network", network)
	e.pod("network-app", node, "network")
	attached := e.bound("network")
	e.running("network-app")
	e.grow("network", "2Gi")
	e.modify("network", premium)
	// Network, policy Delete.
	e.claim("network-delete", bundle.NetworkClass)
	networkDeleted := e.bound("network-delete")
	// Ephemeral: the claim of a pod's generic ephemeral volume, made by
	// ephemeral-volume (it goes with the pod, below).
	scratch := e.ephemeral("ephemeral-app", node, bundle.WaitClass)
	// Snapshots of both, restores and a group snapshot, all deleted.
	snapshotLifecycle(e, node, "wffc", "network-delete", secret)

	// The claim in use outlives its deletion until its pod is gone
	// (pvc-protection); then the Retain volume is Released, detached, and
	// deleted by hand (pv-protection lets it go once it is not Bound).
	if err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Delete(e.ctx, "network", metav1.DeleteOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.terminating("network")
	e.gone("pod", "network-app")
	e.gone("claim", "network")
	e.released(attached)
	e.gone("pv", attached)
	// Delete: the volumes go with their claims; the ephemeral claim goes
	// with its pod (the garbage collector), and the attributes class no
	// claim or volume uses any more goes too (vac-protection).
	e.gone("pod", "local-app")
	e.gone("pod", "ephemeral-app")
	e.waitGone("claim", scratch, func() error {
		_, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Get(e.ctx, scratch, metav1.GetOptions{})
		return err
	})
	e.classGone(premium)
	for _, claim := range []string{"wffc", "immediate", "network-delete"} {
		e.gone("claim", claim)
	}
	for _, pv := range []string{wffc, immediate, networkDeleted} {
		e.waitGone("pv", pv, func() error {
			_, err := e.client.CoreV1().PersistentVolumes().Get(e.ctx, pv, metav1.GetOptions{})
			return err
		})
	}
	// Retain, static: Released, then deleted by hand.
	e.gone("claim", "static")
	e.released(static)
	e.gone("pv", static)
	// Recycle (deprecated): the binder scrubs the volume with a pod, which
	// the test finishes as a kubelet would; the volume is Available again
	// and the pod removed.
	e.gone("claim", "recycled")
	e.recycle(recycled)
	e.gone("pv", recycled)
}

// networkClasses make a Retain class of the network driver whose volumes
// need a secret for each controller call (provision, attach, expand), that
// secret (its name is returned: snapshots need it too), and an attributes
// class of the network driver; they go when the test ends.
func networkClasses(e *env) (class, attributes, secretName string) {
	e.t.Helper()
	name := "rbac-network-" + e.ns
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "network-credentials", Namespace: e.ns},
		StringData: map[string]string{"user": "volplane"}}
	if _, err := e.client.CoreV1().Secrets(e.ns).Create(e.ctx, secret, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	params := map[string]string{}
	for _, call := range []string{"provisioner", "controller-publish", "controller-expand"} {
		params["csi.storage.k8s.io/"+call+"-secret-name"] = secret.Name
		params["csi.storage.k8s.io/"+call+"-secret-namespace"] = e.ns
	}
	sc := &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: hostpath.NetworkDriverName, Parameters: params,
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimRetain),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate), AllowVolumeExpansion: ptr.To(true),
	}
	if _, err := e.client.StorageV1().StorageClasses().Create(e.ctx, sc, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		_ = e.client.StorageV1().StorageClasses().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	vac := &storagev1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: name + "-premium"},
		DriverName: hostpath.NetworkDriverName, Parameters: map[string]string{hostpath.ParamTier: hostpath.TierPremium}}
	if _, err := e.client.StorageV1().VolumeAttributesClasses().Create(e.ctx, vac, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		_ = e.client.StorageV1().VolumeAttributesClasses().Delete(context.Background(), vac.Name, metav1.DeleteOptions{})
	})
	return name, vac.Name, secret.Name
}

// staticBound makes an administrator's PV named name-<namespace> (no
// class, the policy and source given) and a claim name that selects it,
// and waits until they are bound; it returns the PV's name.
func (e *env) staticBound(name string, policy corev1.PersistentVolumeReclaimPolicy, source corev1.PersistentVolumeSource) string {
	e.t.Helper()
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-" + e.ns, Labels: map[string]string{"rbac": name + "-" + e.ns}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: policy,
			PersistentVolumeSource:        source,
		},
	}
	if _, err := e.client.CoreV1().PersistentVolumes().Create(e.ctx, pv, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.claim(name, "", func(c *corev1.PersistentVolumeClaim) {
		c.Spec.Selector = &metav1.LabelSelector{MatchLabels: pv.Labels}
	})
	if got := e.bound(name); got != pv.Name {
		e.t.Fatalf("claim %s bound to %s, want %s", name, got, pv.Name)
	}
	return pv.Name
}

// logCalls logs the distinct calls the role's loops made, with their
// answers and counts (shown when the test fails, or with -v): what a rule
// to add or remove is read from.
func logCalls(t *testing.T, r *running) {
	seen := map[string]int{}
	for _, c := range r.log.all() {
		c.namespace = ""
		seen[fmt.Sprintf("%s → %d", c.call, c.status)]++
	}
	out := make([]string, 0, len(seen))
	for k, n := range seen {
		out = append(out, fmt.Sprintf("%s ×%d", k, n))
	}
	slices.Sort(out)
	t.Logf("%s called:\n\t%s", r.serviceAccount, strings.Join(out, "\n\t"))
}
