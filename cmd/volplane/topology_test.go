package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	volumehelpers "k8s.io/component-helpers/storage/volume"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/stacktest"
)

// The two topology modes of a real cluster, each process a `volplane
// controller` of its own against one API server: a node-deployment
// provisioner and resizer beside each node's node-local driver, a sidecar
// provisioner, attacher and resizer beside the network driver's controller,
// and the central loops (binder, protection, attachdetach, expander) in the
// test process. Every claim is provisioned once, on the node it is
// assigned to, and reclaimed through that node's driver.
func TestControllerTopologyModesOnSeveralProcesses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	cp := controlPlane(t)
	stack, err := stacktest.StartStack(ctx, cp, stacktest.StackConfig{DataDir: filepath.Join(dir, "drivers"),
		Loops: func(c *manager.Config) {
			c.Controllers = []string{manager.Binder, manager.PVCProtection, manager.PVProtection, manager.AttachDetach, manager.Expander}
			c.CSIEndpoints = nil
		}})
	if err != nil {
		t.Fatalf("start drivers and central loops: %v", err)
	}
	defer stack.Stop()
	tp := &topology{t: t, ctx: ctx, client: cp.Client, kubeconfig: cp.Kubeconfig, stack: stack, nodes: cp.Nodes, sockets: map[string]string{}}
	for i, node := range cp.Nodes {
		tp.sockets[node] = stack.Drivers.Endpoints[i]
		tp.start(node, "--node-deployment", "--node-name", node, "--controllers", "provisioner,capacity,resizer",
			"--csi-endpoint", tp.sockets[node], "--node-deployment-base-delay", "200ms", "--node-deployment-max-delay", "2s")
	}
	tp.network = stack.Drivers.Endpoints[len(cp.Nodes)]
	tp.start("network sidecar", "--controllers", "provisioner,attacher,resizer", "--csi-endpoint", tp.network, "--leader-elect=false")

	tp.nodeDeploymentRefusesACentralDriver()
	waitFirst := tp.waitForFirstConsumerGoesToTheScheduledNode()
	immediate := tp.immediateClaimsAreWonOnceAndSpread(6)
	tp.nodeResizerExpandsOnlyItsVolumes(immediate[0])
	shared := tp.networkClaimWorksInSidecarMode()
	tp.deletedClaimsAreReclaimedThroughTheirNode(append([]string{waitFirst, shared}, immediate...))
}

// topology is the running test: the processes and what they serve.
type topology struct {
	t          *testing.T
	ctx        context.Context
	client     kubernetes.Interface
	kubeconfig string
	stack      *stacktest.Stack
	nodes      []string
	sockets    map[string]string // node → its node-local driver's socket
	network    string            // the network driver's controller socket
	procs      []*controllerProcess
}

// start runs one `volplane controller` and dumps its log if the test fails.
func (tp *topology) start(name string, args ...string) {
	tp.t.Helper()
	log := &lockedBuffer{}
	args = append([]string{"--kubeconfig", tp.kubeconfig, "--metrics-bind-address", "127.0.0.1:0"}, args...)
	p := runController(tp.t, log, args...)
	tp.procs = append(tp.procs, p)
	tp.t.Cleanup(func() {
		if tp.t.Failed() {
			tp.t.Logf("log of %s (volplane controller %s):\n%s", name, strings.Join(args, " "), log.String())
		}
	})
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// alive fails a wait at once when a process or a part of the stack ended.
func (tp *topology) alive() error {
	for _, p := range tp.procs {
		if p.cmd.ProcessState != nil {
			return fmt.Errorf("volplane controller %v exited", p.cmd.Args[1:])
		}
	}
	return tp.stack.EndedEarly()
}

func (tp *topology) eventually(what string, cond func() string) {
	tp.t.Helper()
	stacktest.Eventually(tp.t, what, cond, tp.alive)
}

const ns = metav1.NamespaceDefault

// claim creates a claim of class asking for 1Gi and, if pod is not "",
// a pod that uses it.
func (tp *topology) claim(name, class, pod string) {
	tp.t.Helper()
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: ptr.To(class),
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}}
	if _, err := tp.client.CoreV1().PersistentVolumeClaims(ns).Create(tp.ctx, c, metav1.CreateOptions{}); err != nil {
		tp.t.Fatal(err)
	}
	if pod == "" {
		return
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/never:1",
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
		Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}},
	}}
	if _, err := tp.client.CoreV1().Pods(ns).Create(tp.ctx, p, metav1.CreateOptions{}); err != nil {
		tp.t.Fatal(err)
	}
}

// bound waits until the claim is Bound and returns it with its PV.
func (tp *topology) bound(name string) (*corev1.PersistentVolumeClaim, *corev1.PersistentVolume) {
	tp.t.Helper()
	var claim *corev1.PersistentVolumeClaim
	tp.eventually("claim "+name+" Bound", func() string {
		c, err := tp.client.CoreV1().PersistentVolumeClaims(ns).Get(tp.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		claim = c
		if c.Status.Phase != corev1.ClaimBound {
			return "phase " + string(c.Status.Phase)
		}
		return ""
	})
	pv, err := tp.client.CoreV1().PersistentVolumes().Get(tp.ctx, claim.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		tp.t.Fatal(err)
	}
	return claim, pv
}

// affinityNode is the node a node-local PV's node affinity names.
func affinityNode(pv *corev1.PersistentVolume) string {
	a := pv.Spec.NodeAffinity
	if a == nil || a.Required == nil {
		return ""
	}
	for _, term := range a.Required.NodeSelectorTerms {
		for _, e := range term.MatchExpressions {
			if e.Key == hostpath.TopologyKey && len(e.Values) == 1 {
				return e.Values[0]
			}
		}
	}
	return ""
}

// backend lists the volume IDs each driver holds: by node for the
// node-local drivers, under "network" for the network driver.
func (tp *topology) backend() map[string][]string {
	tp.t.Helper()
	out := map[string][]string{}
	for where, socket := range tp.socketsByName() {
		ep, err := csi.Dial(tp.ctx, socket, nil)
		if err != nil {
			tp.t.Fatal(err)
		}
		vols, err := ep.ListVolumes(tp.ctx)
		_ = ep.Close()
		if err != nil {
			tp.t.Fatalf("ListVolumes on %s: %v", where, err)
		}
		for _, v := range vols {
			out[where] = append(out[where], v.GetVolume().GetVolumeId())
		}
	}
	return out
}

func (tp *topology) socketsByName() map[string]string {
	all := map[string]string{"network": tp.network}
	for node, s := range tp.sockets {
		all[node] = s
	}
	return all
}

// heldOnlyBy fails unless exactly the driver named holds the volume.
func (tp *topology) heldOnlyBy(handle, where string) {
	tp.t.Helper()
	var holders []string
	for w, ids := range tp.backend() {
		for _, id := range ids {
			if id == handle {
				holders = append(holders, w)
			}
		}
	}
	if len(holders) != 1 || holders[0] != where {
		tp.t.Errorf("volume %s is held by %v, want only by %s", handle, holders, where)
	}
}

// events are the messages of the events of reason about an object.
func (tp *topology) events(kind, name, reason string) []string {
	tp.t.Helper()
	list, err := tp.client.CoreV1().Events(ns).List(tp.ctx, metav1.ListOptions{})
	if err != nil {
		tp.t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name && e.Reason == reason {
			for range max(e.Count, 1) {
				out = append(out, e.Message)
			}
		}
	}
	return out
}

// provisionedOnce checks a claim got one PV, made on the node the claim
// is assigned to by that node's driver alone, announced once.
func (tp *topology) provisionedOnce(claim *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) string {
	tp.t.Helper()
	selected := claim.Annotations[volumehelpers.AnnSelectedNode]
	if selected == "" {
		tp.t.Errorf("claim %s has no selected node", claim.Name)
	}
	if got := affinityNode(pv); got != selected {
		tp.t.Errorf("claim %s: PV %s is on node %q, want the selected node %q", claim.Name, pv.Name, got, selected)
	}
	tp.heldOnlyBy(pv.Spec.CSI.VolumeHandle, selected)
	if evs := tp.events("PersistentVolumeClaim", claim.Name, "ProvisioningSucceeded"); len(evs) != 1 {
		tp.t.Errorf("claim %s: ProvisioningSucceeded events %q, want one (one provisioner)", claim.Name, evs)
	}
	return selected
}

// A central driver's controller has no node: a node deployment beside it
// would pin nothing and race for everything, so it stops at once, saying
// what to run instead.
func (tp *topology) nodeDeploymentRefusesACentralDriver() {
	tp.t.Helper()
	cmd := volplane(tp.t, "controller", "--kubeconfig", tp.kubeconfig, "--node-deployment", "--node-name", tp.nodes[0],
		"--controllers", "provisioner", "--csi-endpoint", tp.network, "--metrics-bind-address", "")
	cmd.Env = append(cmd.Env, "KUBECONFIG=")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "serves no node service (no node ID): a central driver wants one provisioner beside its controller instead") {
		tp.t.Errorf("a node deployment on the network driver's controller: %v\n%s", err, out)
	}
}

// A WaitForFirstConsumer claim goes where the scheduler puts its pod, and
// only that node's provisioner makes its volume.
func (tp *topology) waitForFirstConsumerGoesToTheScheduledNode() string {
	tp.t.Helper()
	tp.claim("wait", bundle.WaitClass, "wait-user")
	claim, pv := tp.bound("wait")
	node := tp.provisionedOnce(claim, pv)
	pod, err := tp.client.CoreV1().Pods(ns).Get(tp.ctx, "wait-user", metav1.GetOptions{})
	if err != nil {
		tp.t.Fatal(err)
	}
	if pod.Spec.NodeName != "" && pod.Spec.NodeName != node {
		tp.t.Errorf("pod on %s, its claim's volume on %s", pod.Spec.NodeName, node)
	}
	return "wait"
}

// Immediate claims are raced for: each is won by one node, provisioned
// once there, and a burst spreads over the nodes.
func (tp *topology) immediateClaimsAreWonOnceAndSpread(n int) []string {
	tp.t.Helper()
	var names []string
	for i := range n {
		names = append(names, fmt.Sprintf("fast-%d", i))
		tp.claim(names[i], bundle.ImmediateClass, "")
	}
	perNode := map[string]int{}
	for _, name := range names {
		claim, pv := tp.bound(name)
		perNode[tp.provisionedOnce(claim, pv)]++
	}
	tp.t.Logf("%d Immediate claims won per node: %v", n, perNode)
	if len(perNode) < 2 {
		tp.t.Errorf("every Immediate claim went to one node: %v", perNode)
	}
	held := 0
	for where, ids := range tp.backend() {
		if where != "network" {
			held += len(ids)
		}
	}
	if held != n+1 {
		tp.t.Errorf("the node-local drivers hold %d volumes, want %d (one per claim)", held, n+1)
	}
	return names
}

// grow asks for 2Gi and waits until the claim's PV has it: the controller
// side of the expansion, done by the resizer serving the volume.
func (tp *topology) grow(name string) {
	tp.t.Helper()
	patch := []byte(`{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}`)
	if _, err := tp.client.CoreV1().PersistentVolumeClaims(ns).Patch(tp.ctx, name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		tp.t.Fatal(err)
	}
	claim, _ := tp.bound(name)
	want := resource.MustParse("2Gi")
	tp.eventually("PV of "+name+" at 2Gi", func() string {
		pv, err := tp.client.CoreV1().PersistentVolumes().Get(tp.ctx, claim.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if got := pv.Spec.Capacity[corev1.ResourceStorage]; got.Cmp(want) != 0 {
			return "capacity " + got.String()
		}
		return ""
	})
}

// A node-local volume is expanded by the resizer of its node; the others
// leave it without a word.
func (tp *topology) nodeResizerExpandsOnlyItsVolumes(name string) {
	tp.t.Helper()
	tp.grow(name)
	if evs := tp.events("PersistentVolumeClaim", name, "VolumeResizeFailed"); len(evs) != 0 {
		tp.t.Errorf("claim %s: VolumeResizeFailed events %q, want none", name, evs)
	}
}

// The network driver's claims, served by one sidecar process: provisioned,
// attached to the pod's node, expanded.
func (tp *topology) networkClaimWorksInSidecarMode() string {
	tp.t.Helper()
	tp.claim("shared", bundle.NetworkClass, "shared-user")
	_, pv := tp.bound("shared")
	tp.heldOnlyBy(pv.Spec.CSI.VolumeHandle, "network")
	tp.eventually("network volume attached", func() string {
		vas, err := tp.client.StorageV1().VolumeAttachments().List(tp.ctx, metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		for _, va := range vas.Items {
			if ptr.Deref(va.Spec.Source.PersistentVolumeName, "") == pv.Name && va.Status.Attached {
				return ""
			}
		}
		return "no attached VolumeAttachment"
	})
	tp.grow("shared")
	return "shared"
}

// Deleted claims: every PV is deleted through the driver that holds its
// volume, by the one process serving it; the others do not complain.
func (tp *topology) deletedClaimsAreReclaimedThroughTheirNode(claims []string) {
	tp.t.Helper()
	// Gracefully, as a user would: the node agent unpublishes and unstages
	// before it lets a pod go, so no volume is still staged when its claim
	// is deleted below (a forced delete would race the DeleteVolume).
	pods := []string{"wait-user", "shared-user"}
	for _, pod := range pods {
		err := tp.client.CoreV1().Pods(ns).Delete(tp.ctx, pod, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			tp.t.Fatal(err)
		}
	}
	tp.eventually("the pods using the claims gone", func() string {
		for _, pod := range pods {
			if _, err := tp.client.CoreV1().Pods(ns).Get(tp.ctx, pod, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return "pod " + pod + " still there"
			}
		}
		return ""
	})
	var pvs, local []string
	for _, name := range claims {
		_, pv := tp.bound(name)
		pvs = append(pvs, pv.Name)
		if pv.Spec.CSI.Driver == hostpath.DriverName {
			local = append(local, pv.Name)
		}
		if err := tp.client.CoreV1().PersistentVolumeClaims(ns).Delete(tp.ctx, name, metav1.DeleteOptions{}); err != nil {
			tp.t.Fatal(err)
		}
	}
	tp.eventually("every PV and backend volume gone", func() string {
		for _, name := range pvs {
			if _, err := tp.client.CoreV1().PersistentVolumes().Get(tp.ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return "PV " + name + " still there"
			}
		}
		for where, ids := range tp.backend() {
			if len(ids) > 0 {
				return fmt.Sprintf("%s still holds %v", where, ids)
			}
		}
		return ""
	})
	// The network PV may have waited for its detach, with an event
	// saying so; a node-local PV has nothing to wait for anywhere.
	for _, name := range local {
		if evs := tp.events("PersistentVolume", name, "VolumeFailedDelete"); len(evs) != 0 {
			tp.t.Errorf("PV %s: VolumeFailedDelete events %q, want none (other nodes leave it quietly)", name, evs)
		}
	}
}
