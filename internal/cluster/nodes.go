package cluster

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/component-base/version"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/attachment"
)

// NodeTopologyKey is the label every simulated node carries with its own name;
// the bundled CSI driver uses the same key as its topology segment.
const NodeTopologyKey = "topology.volplane.io/node"

const (
	leaseDuration   = 40 * time.Second
	leaseRenewEvery = 10 * time.Second
	// statusEvery is the kubelet's nodeStatusReportFrequency default (5m):
	// with a Lease renewed every leaseRenewEvery it reports an unchanged
	// status no more often, and the node lifecycle controller takes the
	// Lease's renewal as the heartbeat.
	statusEvery = 5 * time.Minute
)

// NodeName is the name of the i-th simulated node (1-based).
func NodeName(i int) string { return fmt.Sprintf("node-%d", i) }

// nodeAgent plays the kubelet's part for simulated nodes: it registers them,
// reports them Ready and keeps their Leases fresh. It runs no pods.
type nodeAgent struct {
	client kubernetes.Interface
	names  []string
	// leases are the node Leases as last written, so a renewal is one
	// write, as the kubelet's lease controller renews from its latest
	// lease (a read per renewal doubled the API load of idle nodes).
	mu     sync.Mutex
	leases map[string]*coordinationv1.Lease
	// down are the nodes taken down (SetNodeDown): their heartbeats stop,
	// as a crashed kubelet's do.
	down map[string]bool
}

// heartbeatJitter is the kubelet lease controller's jitter on its renew
// interval (nodelease: wait.JitterUntil with 0.04).
const heartbeatJitter = 0.04

func (a *nodeAgent) lastLease(name string) *coordinationv1.Lease {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.leases[name]
}

func (a *nodeAgent) wroteLease(name string, l *coordinationv1.Lease) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if l == nil {
		delete(a.leases, name)
		return
	}
	a.leases[name] = l
}

func newNodeAgent(client kubernetes.Interface, count int) *nodeAgent {
	a := &nodeAgent{client: client, leases: map[string]*coordinationv1.Lease{}, down: map[string]bool{}}
	for i := 1; i <= count; i++ {
		a.names = append(a.names, NodeName(i))
	}
	return a
}

// register creates or refreshes every node and reports it Ready.
func (a *nodeAgent) register(ctx context.Context) error {
	for _, name := range a.names {
		if err := a.ensureNode(ctx, name); err != nil {
			return err
		}
		if err := a.reportStatus(ctx, name); err != nil {
			return err
		}
		if err := a.renewLease(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

// run keeps the nodes alive until ctx is done: each node renews its Lease
// on its own clock, as each kubelet does, every leaseRenewEvery (jittered)
// after its last renewal ended, and reports its status every statusEvery.
// Renewals in passes over all nodes, 16 at a time, spaced a pass apart
// when the API server slowed (1,000 nodes, 100,000 claims): nodes went
// NotReady and the node lifecycle controller evicted their pods. The nodes
// start spread over one renew interval. It returns once ctx is done, with
// or without nodes. Errors are logged and retried at the next tick: a
// missed renewal only matters after leaseDuration.
func (a *nodeAgent) run(ctx context.Context) {
	var wg sync.WaitGroup
	for i, name := range a.names {
		offset := leaseRenewEvery * time.Duration(i) / time.Duration(len(a.names))
		wg.Go(func() { a.heartbeat(ctx, name, offset) })
	}
	<-ctx.Done()
	wg.Wait()
}

// heartbeat is one node's kubelet heartbeat: after offset, a Lease renewal
// every leaseRenewEvery and a status report every statusEvery.
func (a *nodeAgent) heartbeat(ctx context.Context, name string, offset time.Duration) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(offset):
	}
	logger := klog.FromContext(ctx)
	lastStatus := time.Now()
	wait.JitterUntil(func() {
		if a.isDown(name) {
			return
		}
		if err := a.renewLease(ctx, name); err != nil {
			logger.Error(err, "Renewing simulated node lease", "node", name)
		}
		if time.Since(lastStatus) < statusEvery {
			return
		}
		if err := a.reportStatus(ctx, name); err != nil {
			logger.Error(err, "Reporting simulated node status", "node", name)
		}
		lastStatus = time.Now()
	}, leaseRenewEvery, heartbeatJitter, true, ctx.Done())
}

func (a *nodeAgent) isDown(name string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.down[name]
}

// setDown takes the node down or brings it up again. Down, its heartbeat
// stops and its Ready condition says Unknown at once, as the node lifecycle
// controller would write it after the grace period: the node-failure
// scenarios need a NotReady node without waiting for that. Up, it reports
// its status and renews its Lease at once, as a restarted kubelet does.
func (a *nodeAgent) setDown(ctx context.Context, name string, down bool) error {
	if !slices.Contains(a.names, name) {
		return fmt.Errorf("no simulated node %s", name)
	}
	a.mu.Lock()
	a.down[name] = down
	a.mu.Unlock()
	if !down {
		// The node lifecycle controller writes the node too (its taints):
		// a conflict is retried on a fresh read, not left to the next tick.
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error { return a.reportStatus(ctx, name) }); err != nil {
			return err
		}
		return a.renewLease(ctx, name)
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := a.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		node = node.DeepCopy()
		node.Status.Conditions = downConditions(node.Status.Conditions, metav1.Now())
		_, err = a.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		return err
	})
}

// downConditions are the conditions of a node whose kubelet stopped
// reporting: Ready Unknown, with the node lifecycle controller's reason.
func downConditions(conds []corev1.NodeCondition, now metav1.Time) []corev1.NodeCondition {
	out := slices.Clone(conds)
	for i, c := range out {
		if c.Type != corev1.NodeReady {
			continue
		}
		if c.Status != corev1.ConditionUnknown {
			out[i].LastTransitionTime = now
		}
		out[i].Status, out[i].Reason = corev1.ConditionUnknown, "NodeStatusUnknown"
		out[i].Message = "The simulated node was taken down: its kubelet stopped posting node status."
		return out
	}
	return append(out, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown",
		Message: "The simulated node was taken down: its kubelet stopped posting node status.", LastHeartbeatTime: now, LastTransitionTime: now})
}

func (a *nodeAgent) ensureNode(ctx context.Context, name string) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        name,
		Annotations: map[string]string{attachment.ManagedAnnotation: "true"},
		Labels: map[string]string{
			"kubernetes.io/hostname": name,
			"kubernetes.io/os":       "linux",
			"kubernetes.io/arch":     "amd64",
			NodeTopologyKey:          name,
		},
	}}
	_, err := a.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return a.annotateManaged(ctx, name)
	}
	if err != nil {
		return fmt.Errorf("register node %s: %w", name, err)
	}
	return nil
}

// annotateManaged puts the controller-managed attach/detach annotation on a
// node registered before it was set (by an older `up`), as a kubelet does
// at every registration.
func (a *nodeAgent) annotateManaged(ctx context.Context, name string) error {
	node, err := a.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get node %s: %w", name, err)
	}
	if node.Annotations[attachment.ManagedAnnotation] == "true" {
		return nil
	}
	node = node.DeepCopy()
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	node.Annotations[attachment.ManagedAnnotation] = "true"
	if _, err := a.client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("annotate node %s: %w", name, err)
	}
	return nil
}

// reportStatus writes the Ready status (the API server ignores status on
// create) and drops the not-ready taint that admission put on the new node, as
// the node lifecycle controller would once it sees the node Ready.
func (a *nodeAgent) reportStatus(ctx context.Context, name string) error {
	node, err := a.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get node %s: %w", name, err)
	}
	node = node.DeepCopy()
	// The volume fields belong to the attach/detach controller
	// (volumesAttached) and the node's volume agent (volumesInUse); a
	// conflicting write of theirs makes this update fail, and the next tick
	// retries it.
	status := simulatedNodeStatus(metav1.Now())
	status.VolumesAttached, status.VolumesInUse = node.Status.VolumesAttached, node.Status.VolumesInUse
	node.Status = status
	node, err = a.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("report status of node %s: %w", name, err)
	}
	taints := withoutNotReadyTaint(node.Spec.Taints)
	if len(taints) == len(node.Spec.Taints) {
		return nil
	}
	node = node.DeepCopy()
	node.Spec.Taints = taints
	if _, err := a.client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("untaint node %s: %w", name, err)
	}
	return nil
}

func withoutNotReadyTaint(taints []corev1.Taint) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range taints {
		if t.Key == corev1.TaintNodeNotReady {
			continue
		}
		out = append(out, t)
	}
	return out
}

func simulatedNodeStatus(now metav1.Time) corev1.NodeStatus {
	resources := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("8"),
		corev1.ResourceMemory:           resource.MustParse("32Gi"),
		corev1.ResourcePods:             resource.MustParse("110"),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	condition := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, Reason: reason, LastHeartbeatTime: now, LastTransitionTime: now}
	}
	return corev1.NodeStatus{
		Capacity:    resources,
		Allocatable: resources,
		Phase:       corev1.NodeRunning,
		Conditions: []corev1.NodeCondition{
			condition(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady"),
			condition(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory"),
			condition(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure"),
			condition(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID"),
		},
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}},
		NodeInfo: corev1.NodeSystemInfo{
			KubeletVersion:          version.Get().GitVersion, // the embedded components' (stamped at init)
			OperatingSystem:         "linux",
			Architecture:            "amd64",
			ContainerRuntimeVersion: "volplane://simulated",
		},
	}
}

// renewLease renews the node's Lease from the copy last written; a Lease
// changed or deleted by another hand since (a conflict, NotFound) is read
// again, or created.
func (a *nodeAgent) renewLease(ctx context.Context, name string) error {
	leases := a.client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	now := metav1.NewMicroTime(time.Now())
	if last := a.lastLease(name); last != nil {
		renewed := last.DeepCopy()
		renewed.Spec.RenewTime = &now
		out, err := leases.Update(ctx, renewed, metav1.UpdateOptions{})
		if err == nil {
			a.wroteLease(name, out)
			return nil
		}
		a.wroteLease(name, nil)
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return fmt.Errorf("renew lease of node %s: %w", name, err)
		}
	}
	lease, err := leases.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1.NamespaceNodeLease},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(name),
				LeaseDurationSeconds: ptr.To(int32(leaseDuration.Seconds())),
				RenewTime:            &now,
			},
		}
		out, err := leases.Create(ctx, lease, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create lease of node %s: %w", name, err)
		}
		if err == nil {
			a.wroteLease(name, out)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("get lease of node %s: %w", name, err)
	}
	lease = lease.DeepCopy()
	lease.Spec.RenewTime = &now
	out, err := leases.Update(ctx, lease, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("renew lease of node %s: %w", name, err)
	}
	a.wroteLease(name, out)
	return nil
}
