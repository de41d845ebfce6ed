package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/mounting"
)

// The attach scenario: M simulated nodes (each with a CSINode naming the
// bundled network driver, as the node's plugin registration would write
// it), N network volumes created through the driver's controller service
// with bound PV/claim pairs, all before the controllers start and not
// timed. The clock starts when N pods, already placed (pod i on node i%M,
// so no scheduler and no node agent take part), are created; an attach
// counts once the VolumeAttachment of the pod's volume is attached.

// ReferenceAttacherProgram is the binary of the reference attacher
// (bench/cmd/volplane-reference-attacher): external-attacher cannot be linked
// into volplane's binary (see its package comment).
const ReferenceAttacherProgram = "volplane-reference-attacher"

// DefaultAttachNodes is how many nodes the attach scenario uses unless told.
const DefaultAttachNodes = 10

// The client limits of the processes whose roles the attach scenario's
// controllers play: kube-controller-manager (attach/detach) and the
// external-attacher sidecar.
const (
	AttachDetachQPS   = 20
	AttachDetachBurst = 30
	AttacherQPS       = 5
	AttacherBurst     = 10
)

// AttachNodes is the number of simulated nodes of o's scenario.
func (o Options) AttachNodes() int {
	if o.Scenario != Attach {
		return 1
	}
	if o.Nodes > 0 {
		return o.Nodes
	}
	return DefaultAttachNodes
}

func attachPodName(i int) string { return fmt.Sprintf("p-%06d", i) }

// networkEndpoint is the network driver's controller service: the last of
// the bundle's controller endpoints.
func (e *sideEnv) networkEndpoint() string {
	return e.drivers.Endpoints[len(e.drivers.Endpoints)-1]
}

// createAttachWorkload registers the network driver on every node's
// CSINode, creates the volumes with their bound pairs, and waits for the
// namespace's default ServiceAccount (pods are refused until it exists).
func (e *sideEnv) createAttachWorkload(ctx context.Context) error {
	if err := e.registerNodeDriver(ctx, networkNodeService); err != nil {
		return err
	}
	ep, err := csi.Dial(ctx, e.networkEndpoint(), nil)
	if err != nil {
		return err
	}
	defer ep.Close()
	n := e.o.Pairs
	e.progress.start("creating network volumes and bound pairs", n)
	err = forEach(ctx, n, func() { e.progress.add(1) }, func(i int) error {
		if err := e.createBoundVolume(ctx, ep, i, bundle.NetworkClass, hostpath.NetworkDriverName); err != nil {
			return fmt.Errorf("pair %d: %w", i, err)
		}
		return nil
	})
	e.progress.done()
	if err != nil {
		return err
	}
	return waitDefaultServiceAccount(ctx, e.admin)
}

// The node services of each node, as the bundle lists them
// (Drivers.NodeEndpoints): the node-local driver's, then the network
// driver's.
const (
	localNodeService   = 0
	networkNodeService = 1
)

// registerNodeDriver writes each node's CSINode with the entry of one of
// its drivers (which: localNodeService or networkNodeService), from what
// that driver's node service for the node answers to NodeGetInfo, as the
// kubelet's plugin registration does.
func (e *sideEnv) registerNodeDriver(ctx context.Context, which int) error {
	for _, node := range e.cp.Nodes {
		ep, err := csi.Dial(ctx, e.drivers.NodeEndpoints[node][which], nil)
		if err != nil {
			return fmt.Errorf("node %s: %w", node, err)
		}
		info, err := ep.NodeInfo(ctx)
		ep.Close()
		if err != nil {
			return fmt.Errorf("node %s: NodeGetInfo: %w", node, err)
		}
		spec, _ := mounting.RegisterDrivers(storagev1.CSINodeSpec{}, []mounting.NodeDriver{{
			Name: info.Driver, NodeID: info.NodeID, Topology: info.Topology, MaxVolumes: info.MaxVolumes}})
		cn := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: node}, Spec: spec}
		if _, err := e.admin.StorageV1().CSINodes().Create(ctx, cn, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating the CSINode of %s: %w", node, err)
		}
	}
	return nil
}

// waitDefaultServiceAccount waits until kube-controller-manager made the
// bench namespace's default ServiceAccount.
func waitDefaultServiceAccount(ctx context.Context, client kubernetes.Interface) error {
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := client.CoreV1().ServiceAccounts(benchNS).Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no default ServiceAccount in %s after a minute: %w", benchNS, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// attachPod is pod i, placed on its node, using claim i.
func attachPod(i int, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: attachPodName(i), Namespace: benchNS},
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName(i)}}}},
		},
	}
}

// createPods creates the pods from the workload's writers and returns,
// by PV name, when each pod's create was sent.
func (e *sideEnv) createPods(ctx context.Context) (map[string]time.Time, error) {
	nodes := e.cp.Nodes
	var mu sync.Mutex
	created := make(map[string]time.Time, e.o.Pairs)
	err := forEach(ctx, e.o.Pairs, func() {}, func(i int) error {
		now := time.Now()
		mu.Lock()
		created[volumeName(i)] = now
		mu.Unlock()
		if _, err := e.admin.CoreV1().Pods(benchNS).Create(ctx, attachPod(i, nodes[i%len(nodes)]), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating %s: %w", attachPodName(i), err)
		}
		return nil
	})
	return created, err
}

// attachWatches record, by PV name, when each VolumeAttachment was first
// seen (any state) and first seen attached.
type attachWatches struct {
	seen, attached *bindWatch
}

func startAttachWatches(ctx context.Context, client kubernetes.Interface) (attachWatches, error) {
	factory := informers.NewSharedInformerFactory(client, 0)
	inf := factory.Storage().V1().VolumeAttachments().Informer()
	seen, err := startWatch(ctx, "VolumeAttachments", inf, factory.Start, func(obj any) (string, bool) {
		name, _ := vaAttached(obj)
		return name, name != ""
	})
	if err != nil {
		return attachWatches{}, err
	}
	attached, err := startWatch(ctx, "VolumeAttachments", inf, factory.Start, vaAttached)
	return attachWatches{seen: seen, attached: attached}, err
}

// vaAttached says the PV of a VolumeAttachment and whether it is attached.
func vaAttached(obj any) (string, bool) {
	va, ok := obj.(*storagev1.VolumeAttachment)
	if !ok || va.Spec.Source.PersistentVolumeName == nil {
		return "", false
	}
	return *va.Spec.Source.PersistentVolumeName, va.Status.Attached
}

// sinceSeen is, for every attached volume whose VolumeAttachment was seen
// before, the time from seen to attached.
func sinceSeen(attached, seen map[string]time.Time) []time.Duration {
	out := make([]time.Duration, 0, len(attached))
	for pv, t := range attached {
		if s, ok := seen[pv]; ok {
			out = append(out, t.Sub(s))
		}
	}
	return out
}

// attachProcesses are the side's controllers. volplane: attachdetach at
// kube-controller-manager's limits and the attacher at the
// external-attacher's, each a measured `volplane controller`. The
// reference: the external-attacher (measured); kube-controller-manager's
// attach/detach controller runs inside the control plane (see
// clusterConfig) and its CPU and memory cannot be told apart from it.
func (e *sideEnv) attachProcesses(ctx context.Context, env []string) ([]*controllerProcess, error) {
	o, kc := e.o, e.cp.Kubeconfig
	attacherLimits := []string{"--kubeconfig", kc, "--kube-api-qps", fmtQPS(o.AttacherQPS), "--kube-api-burst", strconv.Itoa(o.AttacherBurst)}
	if e.name == Reference {
		args := append([]string{"--csi-address", e.networkEndpoint()}, attacherLimits...)
		a, err := startProcess(ctx, o.ReferenceAttacher, e.dir, e.name+" csi-attacher", true, env, args...)
		if err != nil {
			return nil, err
		}
		a.program = ReferenceAttacherProgram
		return []*controllerProcess{a}, nil
	}
	common := []string{"--leader-elect=false", "--metrics-bind-address", "127.0.0.1:0"}
	if o.Workers > 0 {
		common = append(common, "--workers", strconv.Itoa(o.Workers))
	}
	adc := append([]string{"controller", "--controllers", "attachdetach",
		"--kubeconfig", kc, "--kube-api-qps", fmtQPS(o.QPS), "--kube-api-burst", strconv.Itoa(o.Burst)}, common...)
	attacher := append(append([]string{"controller", "--controllers", "attacher", "--csi-endpoint", e.networkEndpoint()},
		attacherLimits...), common...)
	if o.Profile != "" {
		adc = append(adc, "--cpuprofile", o.Profile+".cpu.pprof", "--profiling")
		attacher = append(attacher, "--cpuprofile", o.Profile+".attacher.cpu.pprof", "--profiling")
	}
	p, err := startProcess(ctx, o.Executable, e.dir, e.name+" attachdetach", true, env, adc...)
	if err != nil {
		return nil, err
	}
	a, err := startProcess(ctx, o.Executable, e.dir, e.name+" attacher", true, env, attacher...)
	if err != nil {
		p.stop()
		return nil, err
	}
	return []*controllerProcess{p, a}, nil
}

// attachCeilingWrites is what the trivial writer writes per attach: a
// VolumeAttachment created, its status written attached, and its PV's
// metadata patched (both attachers put a finalizer on the PV). The node
// status patch of an attach/detach controller is left out: it carries
// every volume of a node at once, so its count per attach depends on how
// the controller batches.
const attachCeilingWrites = 3

// ceilingAttacher is the attacher of the ceiling writer's
// VolumeAttachments: a driver nobody serves, so no controller touches them.
const ceilingAttacher = "ceiling.bench.volplane.io"

// measureAttachCeiling writes, for up to ceilingPairs PVs the run left,
// attachCeilingWrites writes of the kinds an attach makes (every write a
// real change), from the workload's writers, reading nothing while timed.
func measureAttachCeiling(ctx context.Context, client kubernetes.Interface) (*Ceiling, error) {
	pvs, err := client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, fmt.Errorf("ceiling: listing PVs: %w", err)
	}
	n := min(len(pvs.Items), ceilingPairs)
	if n == 0 {
		return nil, fmt.Errorf("ceiling: no PV to attach")
	}
	began := time.Now()
	err = forEach(ctx, n, func() {}, func(i int) error {
		return attachWrites(ctx, client, pvs.Items[i].Name, i)
	})
	if err != nil {
		return nil, fmt.Errorf("ceiling: %w", err)
	}
	s := time.Since(began).Seconds()
	w := int64(attachCeilingWrites * n)
	return &Ceiling{Writes: w, Seconds: s, WritesPerSec: float64(w) / s}, nil
}

func attachWrites(ctx context.Context, client kubernetes.Interface, pv string, i int) error {
	vas := client.StorageV1().VolumeAttachments()
	va, err := vas.Create(ctx, &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ceiling-%06d", i)},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: ceilingAttacher, NodeName: "ceiling",
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("ceiling-" + pv)}},
	}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	va.Status.Attached = true
	if _, err := vas.UpdateStatus(ctx, va, metav1.UpdateOptions{}); err != nil {
		return err
	}
	mark := `{"metadata":{"annotations":{"` + ceilingMark + `":"attached"}}}`
	_, err = client.CoreV1().PersistentVolumes().Patch(ctx, pv, types.MergePatchType, []byte(mark), metav1.PatchOptions{})
	return err
}

// attachWording turns the report's bind wording into the attach
// scenario's; the JSON keeps its field names.
var attachWording = strings.NewReplacer(
	"claims bound", "volumes attached",
	"time to bind all", "time to all attached",
	"binds/s", "attaches/s",
	"time to Bound", "pod created → attached",
	"per bind", "per attach",
)

// FindReferenceAttacher finds the reference attacher's binary next to the
// volplane executable, else on $PATH.
func FindReferenceAttacher(exe string) (string, error) {
	return findReference(exe, ReferenceAttacherProgram, Attach, "--reference-attacher")
}

// findReference finds a reference controller's binary, program, next to the
// volplane executable, else on $PATH; the error says how to build it, and
// flag, the bench flag that names it.
func findReference(exe, program, scenario, flag string) (string, error) {
	next := filepath.Join(filepath.Dir(exe), program)
	if _, err := os.Stat(next); err == nil {
		return next, nil
	}
	if path, err := exec.LookPath(program); err == nil {
		return path, nil
	}
	return "", fmt.Errorf("--compare of the %[4]s scenario runs %[1]s, found neither next to %[2]s nor on $PATH: "+
		"build it with `go build -o %[3]s ./bench/cmd/%[1]s`, or name it with %[5]s",
		program, exe, filepath.Dir(exe), scenario, flag)
}
