package adversarial

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/checkup"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/invariants"
	"github.com/volplane/volplane/internal/provisioning"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// canary is the file written into each victim volume, and what it holds.
const (
	canaryFile = "canary"
	canaryText = "the victim's data\n"
)

// world is one test: the victim's volumes and what lay outside the
// tenant's namespace before the tenant acted.
type world struct {
	t     *testing.T
	ctx   context.Context
	admin kubernetes.Interface
	// data is the victim's node-local volume, shared its network volume.
	data, shared victimVolume
	before       invariants.State
}

// victimVolume is a Bound claim of namespace victim, its PV and where its
// backend volume is.
type victimVolume struct {
	claim *corev1.PersistentVolumeClaim
	pv    *corev1.PersistentVolume
	// node is the node of a node-local volume ("" for a network one).
	node string
	dir  string
}

// begin makes the victim, writes into its volumes and takes the state
// outside the tenant's namespace. The test must end with verify.
func begin(t *testing.T) *world {
	t.Helper()
	w := &world{t: t, ctx: context.Background(), admin: stack.CP.Client}
	t.Cleanup(w.cleanUp)
	w.data = w.victim("data", localClass)
	w.shared = w.victim("shared", networkClass)
	w.before = invariants.Outside(w.read(), evilNS)
	return w
}

func (w *world) victim(name, class string) victimVolume {
	w.t.Helper()
	c := newClaim(name, class)
	_, err := w.admin.CoreV1().PersistentVolumeClaims(victimNS).Create(w.ctx, c, metav1.CreateOptions{})
	w.must(err)
	// At rest: Bound, and the provisioner's marks gone (it drops them
	// after the binder bound the claim).
	bound := stacktest.ClaimPhase(w.ctx, w.admin, victimNS, name, corev1.ClaimBound)
	w.eventually("victim claim "+name+" Bound and at rest", func() string {
		if wrong := bound(); wrong != "" {
			return wrong
		}
		c := w.claim(victimNS, name)
		if _, ok := c.Annotations[provisioning.AnnCreateRequest]; ok || slices.Contains(c.Finalizers, provisioning.ClaimFinalizer) {
			return fmt.Sprintf("the provisioner's marks are still on it: finalizers %v", c.Finalizers)
		}
		return ""
	})
	v := victimVolume{claim: w.claim(victimNS, name)}
	v.pv, err = w.admin.CoreV1().PersistentVolumes().Get(w.ctx, v.claim.Spec.VolumeName, metav1.GetOptions{})
	w.must(err)
	v.node = pvNode(v.pv)
	v.dir = stack.VolumeDir(v.node, v.pv.Spec.CSI.VolumeHandle)
	w.must(os.WriteFile(filepath.Join(v.dir, canaryFile), []byte(canaryText), 0o644))
	return v
}

// verify waits until the tenant's claims are gone and checks that nothing
// outside the tenant's namespace changed or was lost, that the cluster
// keeps volplane's promises, and that the victim's files are there.
func (w *world) verify() {
	w.t.Helper()
	w.tenantLeaves()
	after := w.read()
	for _, d := range invariants.Unchanged(w.before, invariants.Outside(after, evilNS)) {
		w.t.Errorf("outside namespace %s: %s", evilNS, d)
	}
	for _, d := range invariants.Check(after, invariants.Expect{}) {
		w.t.Errorf("broken promise: %s", d)
	}
	w.filesThere()
}

// filesThere fails the test if a file written into a victim volume is gone
// or changed.
func (w *world) filesThere() {
	w.t.Helper()
	for _, v := range []victimVolume{w.data, w.shared} {
		got, err := os.ReadFile(filepath.Join(v.dir, canaryFile))
		if err != nil || string(got) != canaryText {
			w.t.Errorf("the file in victim volume %s (claim %s) is gone or changed: %q, %v", v.pv.Name, v.claim.Name, got, err)
		}
	}
}

// tenantLeaves: the tenant deletes its pods and claims, and waits until
// they are gone, with their volumes. A claim that keeps the provisioner's
// in-progress finalizer with a warning the tenant may unblock: it removes
// the finalizer, as a user following the event would.
func (w *world) tenantLeaves() {
	w.t.Helper()
	w.must(tenant.CoreV1().Pods(evilNS).DeleteCollection(w.ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{}))
	w.must(tenant.CoreV1().PersistentVolumeClaims(evilNS).DeleteCollection(w.ctx, metav1.DeleteOptions{}, metav1.ListOptions{}))
	w.eventually("the tenant's claims gone", func() string {
		list, err := tenant.CoreV1().PersistentVolumeClaims(evilNS).List(w.ctx, metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		var left []string
		for _, c := range list.Items {
			if slices.Contains(c.Finalizers, provisioning.ClaimFinalizer) && w.warning(evilNS, c.UID, "ProvisioningCleanupFailed") != "" {
				w.dropFinalizer(&c)
			}
			left = append(left, fmt.Sprintf("%s %v", c.Name, c.Finalizers))
		}
		return strings.Join(left, ", ")
	})
	w.eventually("the tenant's volumes gone", func() string {
		list, err := w.admin.CoreV1().PersistentVolumes().List(w.ctx, metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		var left []string
		for _, pv := range list.Items {
			if ref := pv.Spec.ClaimRef; ref != nil && ref.Namespace == evilNS {
				left = append(left, fmt.Sprintf("%s %s (claim %s/%s uid %s, finalizers %v, events %s)", pv.Name, pv.Status.Phase,
					ref.Namespace, ref.Name, ref.UID, pv.Finalizers, w.events(pv.UID)))
			}
		}
		return strings.Join(left, ", ")
	})
}

// dropFinalizer is the tenant removing the in-progress finalizer.
func (w *world) dropFinalizer(c *corev1.PersistentVolumeClaim) {
	c = c.DeepCopy()
	c.Finalizers = slices.DeleteFunc(c.Finalizers, func(f string) bool { return f == provisioning.ClaimFinalizer })
	if _, err := tenant.CoreV1().PersistentVolumeClaims(evilNS).Update(w.ctx, c, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
		w.t.Errorf("the tenant removes the finalizer of %s: %v", c.Name, err)
	}
}

// cleanUp empties the cluster for the next test: every claim and pod of
// both namespaces, their volumes, and any backend volume left without a PV
// (verify has reported it), deleted on the driver directly.
func (w *world) cleanUp() {
	for _, ns := range []string{evilNS, victimNS} {
		_ = w.admin.CoreV1().Pods(ns).DeleteCollection(w.ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{})
		list, _ := w.admin.CoreV1().PersistentVolumeClaims(ns).List(w.ctx, metav1.ListOptions{})
		for _, c := range list.Items {
			if slices.Contains(c.Finalizers, provisioning.ClaimFinalizer) && c.Status.Phase != corev1.ClaimBound {
				c.Finalizers = slices.DeleteFunc(c.Finalizers, func(f string) bool { return f == provisioning.ClaimFinalizer })
				_, _ = w.admin.CoreV1().PersistentVolumeClaims(ns).Update(w.ctx, &c, metav1.UpdateOptions{})
			}
		}
		_ = w.admin.CoreV1().PersistentVolumeClaims(ns).DeleteCollection(w.ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	}
	limit := stacktest.WaitTimeout
	if w.t.Failed() {
		limit = 5 * time.Second // what verify waited for in vain is not waited for twice
	}
	if left := w.leftOver(limit); left != "" {
		// Stuck: the test has failed on it already. Force it out, so that
		// the next test starts from an empty cluster.
		w.t.Errorf("left after the test, removed by force: %s", left)
		w.force()
		if left := w.leftOver(stacktest.WaitTimeout); left != "" {
			w.t.Fatalf("still left: %s", left)
		}
	}
	w.deleteStrayVolumes()
}

// leftOver waits up to d until no claim of either namespace, no PV and no
// VolumeAttachment is left, and says what is left otherwise.
func (w *world) leftOver(d time.Duration) string {
	var left []string
	list := func() error {
		left = nil
		for _, ns := range []string{evilNS, victimNS} {
			claims, err := w.admin.CoreV1().PersistentVolumeClaims(ns).List(w.ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			for _, c := range claims.Items {
				left = append(left, "claim "+ns+"/"+c.Name)
			}
		}
		pvs, err := w.admin.CoreV1().PersistentVolumes().List(w.ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, pv := range pvs.Items {
			left = append(left, fmt.Sprintf("PV %s (%s)", pv.Name, pv.Status.Phase))
		}
		vas, err := w.admin.StorageV1().VolumeAttachments().List(w.ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, va := range vas.Items {
			left = append(left, "VolumeAttachment "+va.Name)
		}
		return nil
	}
	err := wait.PollUntilContextTimeout(w.ctx, stacktest.PollEvery, d, true, func(context.Context) (bool, error) {
		err := list()
		return err == nil && len(left) == 0, nil
	})
	if err == nil {
		return ""
	}
	return strings.Join(left, ", ")
}

// force deletes every PV and claim of both namespaces, finalizers and all.
func (w *world) force() {
	pvs, _ := w.admin.CoreV1().PersistentVolumes().List(w.ctx, metav1.ListOptions{})
	for _, pv := range pvs.Items {
		_, _ = w.admin.CoreV1().PersistentVolumes().Patch(w.ctx, pv.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		_ = w.admin.CoreV1().PersistentVolumes().Delete(w.ctx, pv.Name, metav1.DeleteOptions{})
	}
	for _, ns := range []string{evilNS, victimNS} {
		claims, _ := w.admin.CoreV1().PersistentVolumeClaims(ns).List(w.ctx, metav1.ListOptions{})
		for _, c := range claims.Items {
			_, _ = w.admin.CoreV1().PersistentVolumeClaims(ns).Patch(w.ctx, c.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		}
	}
}

// deleteStrayVolumes deletes, on the drivers, every backend volume left
// once no PV is left.
func (w *world) deleteStrayVolumes() {
	for _, endpoint := range stack.Drivers.Endpoints {
		s, err := checkup.ReadInvariants(w.ctx, w.admin, []string{endpoint})
		if err != nil {
			w.t.Errorf("read %s: %v", endpoint, err)
			continue
		}
		b := s.Backends[0]
		for _, id := range b.VolumeIDs {
			conn, err := support.Dial(endpoint)
			if err != nil {
				w.t.Error(err)
				continue
			}
			_, err = csipb.NewControllerClient(conn).DeleteVolume(w.ctx, &csipb.DeleteVolumeRequest{VolumeId: id})
			conn.Close()
			w.t.Logf("deleted stray volume %s of %s%s: %v", id, b.Driver, " "+b.Node, err)
		}
	}
}

func (w *world) read() invariants.State {
	w.t.Helper()
	s, err := stack.ReadInvariants(w.ctx)
	w.must(err)
	return s
}

func (w *world) eventually(what string, cond func() string) {
	w.t.Helper()
	stacktest.Eventually(w.t, what, cond, stack.EndedEarly)
}

func (w *world) must(err error) {
	w.t.Helper()
	if err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) claim(ns, name string) *corev1.PersistentVolumeClaim {
	w.t.Helper()
	c, err := w.admin.CoreV1().PersistentVolumeClaims(ns).Get(w.ctx, name, metav1.GetOptions{})
	w.must(err)
	return c
}

// warning is the message of a Warning event on the object of uid in ns
// (of reason, if not ""), or "".
func (w *world) warning(ns string, uid types.UID, reason string) string {
	sel := fields.Set{"involvedObject.uid": string(uid), "type": corev1.EventTypeWarning}
	if reason != "" {
		sel["reason"] = reason
	}
	list, err := w.admin.CoreV1().Events(ns).List(w.ctx, metav1.ListOptions{FieldSelector: sel.String()})
	if err != nil || len(list.Items) == 0 {
		return ""
	}
	return list.Items[0].Reason + ": " + list.Items[0].Message
}

// events are the reasons and messages of the events about uid, in any
// namespace.
func (w *world) events(uid types.UID) string {
	list, err := w.admin.CoreV1().Events("").List(w.ctx, metav1.ListOptions{FieldSelector: fields.Set{"involvedObject.uid": string(uid)}.String()})
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, e := range list.Items {
		out = append(out, e.Reason+": "+e.Message)
	}
	return strings.Join(out, "; ")
}

// answered waits until the tenant's claim is gone, is as done wants, or
// has a Warning event (of reason, if not ""): the system's answer to what
// the tenant did. It returns the claim (nil once gone) and the warning (""
// without one).
func (w *world) answered(name, reason string, done func(*corev1.PersistentVolumeClaim) bool) (*corev1.PersistentVolumeClaim, string) {
	w.t.Helper()
	var claim *corev1.PersistentVolumeClaim
	var warning string
	w.eventually("an answer to claim "+evilNS+"/"+name, func() string {
		c, err := w.admin.CoreV1().PersistentVolumeClaims(evilNS).Get(w.ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			claim = nil
			return ""
		}
		if err != nil {
			return err.Error()
		}
		claim = c
		if done != nil && done(c) {
			return ""
		}
		if warning = w.warning(evilNS, c.UID, reason); warning != "" {
			return ""
		}
		return fmt.Sprintf("claim %s is %s, finalizers %v, no event yet", name, c.Status.Phase, c.Finalizers)
	})
	return claim, warning
}

// deletedAnswer waits, once the tenant deleted its claim, until the claim
// is gone or its cleanup failed with a warning, and returns that warning
// ("" once gone).
func (w *world) deletedAnswer(name string) string {
	w.t.Helper()
	var warning string
	w.eventually("claim "+evilNS+"/"+name+" gone or its cleanup refused", func() string {
		c, err := w.admin.CoreV1().PersistentVolumeClaims(evilNS).Get(w.ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return ""
		}
		if err != nil {
			return err.Error()
		}
		if warning = w.warning(evilNS, c.UID, "ProvisioningCleanupFailed"); warning != "" {
			return ""
		}
		return fmt.Sprintf("claim %s is still there, finalizers %v", name, c.Finalizers)
	})
	return warning
}

// newClaim is a claim of class, 1Gi, RWO.
func newClaim(name, class string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(class),
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	}
}

// evilClaim is the tenant creating a claim in its namespace.
func (w *world) evilClaim(name, class string, change ...func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
	w.t.Helper()
	c := newClaim(name, class)
	for _, f := range change {
		f(c)
	}
	c, err := tenant.CoreV1().PersistentVolumeClaims(evilNS).Create(w.ctx, c, metav1.CreateOptions{})
	w.must(err)
	return c
}

// evilUpdate is the tenant changing its claim (retried on conflicts).
func (w *world) evilUpdate(name string, change func(*corev1.PersistentVolumeClaim)) {
	w.t.Helper()
	for {
		c, err := tenant.CoreV1().PersistentVolumeClaims(evilNS).Get(w.ctx, name, metav1.GetOptions{})
		w.must(err)
		change(c)
		_, err = tenant.CoreV1().PersistentVolumeClaims(evilNS).Update(w.ctx, c, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) {
			w.must(err)
			return
		}
	}
}

func (w *world) evilDelete(name string) {
	w.t.Helper()
	w.must(tenant.CoreV1().PersistentVolumeClaims(evilNS).Delete(w.ctx, name, metav1.DeleteOptions{}))
}

// annotated sets annotations, given as key, value, key, value...
func annotated(kv ...string) func(*corev1.PersistentVolumeClaim) {
	return func(c *corev1.PersistentVolumeClaim) {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		for i := 0; i+1 < len(kv); i += 2 {
			c.Annotations[kv[i]] = kv[i+1]
		}
	}
}

func withFinalizer(f string) func(*corev1.PersistentVolumeClaim) {
	return func(c *corev1.PersistentVolumeClaim) { c.Finalizers = append(c.Finalizers, f) }
}

// forgedRequest is a create request as the provisioner records it, for the
// volume named pv.
func forgedRequest(pv string) string {
	return fmt.Sprintf(`{"name":%q,"capacityRange":{"requiredBytes":"1"},"volumeCapabilities":[{"mount":{},"accessMode":{"mode":"SINGLE_NODE_WRITER"}}]}`, pv)
}

// forged marks a claim as in the middle of provisioning the volume named
// pv, through driver, on the endpoint of node ("" for none).
func forged(pv, driver, node string) func(*corev1.PersistentVolumeClaim) {
	return func(c *corev1.PersistentVolumeClaim) {
		withFinalizer(provisioning.ClaimFinalizer)(c)
		annotated(annStorageProvisioner, driver, provisioning.AnnCreateRequest, forgedRequest(pv))(c)
		if node != "" {
			annotated(provisioning.AnnEndpointNode, node)(c)
		}
	}
}

// pvNode is the node of a node-local PV, "" for another.
func pvNode(pv *corev1.PersistentVolume) string {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil || pv.Spec.CSI == nil || pv.Spec.CSI.Driver != hostpath.DriverName {
		return ""
	}
	for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, e := range term.MatchExpressions {
			if e.Key == hostpath.TopologyKey && len(e.Values) == 1 {
				return e.Values[0]
			}
		}
	}
	return ""
}

// otherNode is a node of the stack that is not node.
func otherNode(node string) string {
	for _, n := range stack.CP.Nodes {
		if n != node {
			return n
		}
	}
	return ""
}
