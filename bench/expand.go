package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/hostpath"
)

// The expand scenario: N volumes of the bundled node-local driver, made
// through its controller service, with bound PV/claim pairs of its class
// (volplane-hostpath, which allows expansion; the driver expands a mounted
// filesystem volume in its controller alone), all before the controllers
// start and not timed. The clock starts when every claim's request is
// raised at once, from the workload's writers; a claim counts from its
// PATCH to the moment a claim watch sees its status.capacity at the new
// size. No pod uses the claims, so no node expansion takes part.

// ReferenceResizerProgram is the binary of the reference resizer
// (bench/cmd/volplane-reference-resizer): external-resizer cannot be linked
// into volplane's binary (see its package comment).
const ReferenceResizerProgram = "volplane-reference-resizer"

// The client limits of the processes whose roles the expand scenario's
// controllers play: kube-controller-manager (persistentvolume-expander) and
// the external-resizer sidecar (csi-lib-utils' standard flags, which its
// main registers: --kube-api-qps 5, --kube-api-burst 10).
const (
	ExpanderQPS   = 20
	ExpanderBurst = 30
	ResizerQPS    = 5
	ResizerBurst  = 10
)

// expanderController is kube-controller-manager's name for its expand
// controller, as --controllers and cluster.Config.KeepControllers take it.
const expanderController = "persistentvolume-expander"

// The sizes of the scenario's volumes: made at expandFrom, raised to
// expandedSize.
const (
	expandFrom   = snapshotVolumeSize
	expandedSize = 2 * expandFrom
)

// raiseWrite is how the API server counts the workload's request raises.
const raiseWrite = "persistentvolumeclaims PATCH"

// createExpandWorkload creates the volumes on the node-local driver with
// their bound pairs. No binder runs: the pairs are written bound.
func (e *sideEnv) createExpandWorkload(ctx context.Context) error {
	ep, err := csi.Dial(ctx, e.nodeEndpoint(), nil)
	if err != nil {
		return err
	}
	defer ep.Close()
	n := e.o.Pairs
	e.progress.start("creating volumes and bound pairs", n)
	defer e.progress.done()
	return forEach(ctx, n, func() { e.progress.add(1) }, func(i int) error {
		if err := e.createBoundVolume(ctx, ep, i, bundle.ImmediateClass, hostpath.DriverName); err != nil {
			return fmt.Errorf("pair %d: %w", i, err)
		}
		return nil
	})
}

// startExpandWatch records when each claim of the bench namespace is first
// seen with status.capacity at expandedSize or more.
func startExpandWatch(ctx context.Context, client kubernetes.Interface) (*bindWatch, error) {
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(benchNS))
	return startWatch(ctx, "claims", factory.Core().V1().PersistentVolumeClaims().Informer(), factory.Start, claimExpanded)
}

// claimExpanded says a claim's name and whether its capacity reached
// expandedSize.
func claimExpanded(obj any) (string, bool) {
	c, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok {
		return "", false
	}
	got, ok := c.Status.Capacity[corev1.ResourceStorage]
	return c.Name, ok && got.Value() >= expandedSize
}

// raisePatch raises a claim's request to expandedSize.
var raisePatch = fmt.Appendf(nil, `{"spec":{"resources":{"requests":{"storage":%q}}}}`,
	resource.NewQuantity(expandedSize, resource.BinarySI).String())

// raiseRequests raises every claim's request from the workload's writers
// and returns, by claim name, when each PATCH was sent.
func (e *sideEnv) raiseRequests(ctx context.Context) (map[string]time.Time, error) {
	claims := e.admin.CoreV1().PersistentVolumeClaims(benchNS)
	return timed(ctx, e.o.Pairs, func(i int) error {
		e.work.writes.Add(1)
		if _, err := claims.Patch(ctx, claimName(i), types.MergePatchType, raisePatch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("raising the request of %s: %w", claimName(i), err)
		}
		return nil
	})
}

// expandProcesses are the side's controllers. volplane: the expander at
// kube-controller-manager's limits and the resizer at the
// external-resizer's, each a measured `volplane controller`. The
// reference: the external-resizer (measured); kube-controller-manager's
// expand controller runs inside the control plane (see clusterConfig) and
// its CPU and memory cannot be told apart from it.
func (e *sideEnv) expandProcesses(ctx context.Context, env []string) ([]*controllerProcess, error) {
	o, kc := e.o, e.cp.Kubeconfig
	resizerLimits := []string{"--kubeconfig", kc, "--kube-api-qps", fmtQPS(o.ResizerQPS), "--kube-api-burst", strconv.Itoa(o.ResizerBurst)}
	if e.name == Reference {
		args := append([]string{"--csi-address", e.nodeEndpoint()}, resizerLimits...)
		r, err := startProcess(ctx, o.ReferenceResizer, e.dir, e.name+" csi-resizer", true, env, args...)
		if err != nil {
			return nil, err
		}
		r.program = ReferenceResizerProgram
		return []*controllerProcess{r}, nil
	}
	common := []string{"--leader-elect=false", "--metrics-bind-address", "127.0.0.1:0"}
	if o.Workers > 0 {
		common = append(common, "--workers", strconv.Itoa(o.Workers))
	}
	expander := append([]string{"controller", "--controllers", "expander",
		"--kubeconfig", kc, "--kube-api-qps", fmtQPS(o.QPS), "--kube-api-burst", strconv.Itoa(o.Burst)}, common...)
	resizer := append(append([]string{"controller", "--controllers", "resizer", "--csi-endpoint", e.nodeEndpoint()},
		resizerLimits...), common...)
	if o.Profile != "" {
		expander = append(expander, "--cpuprofile", o.Profile+".cpu.pprof", "--profiling")
		resizer = append(resizer, "--cpuprofile", o.Profile+".resizer.cpu.pprof", "--profiling")
	}
	p, err := startProcess(ctx, o.Executable, e.dir, e.name+" expander", true, env, expander...)
	if err != nil {
		return nil, err
	}
	r, err := startProcess(ctx, o.Executable, e.dir, e.name+" resizer", true, env, resizer...)
	if err != nil {
		p.stop()
		return nil, err
	}
	return []*controllerProcess{p, r}, nil
}

// expandCeilingWrites is what the trivial writer writes per expansion, the
// writes both sides make for a controller-only expansion: the claim's
// status (resize in progress), its PV's capacity, and the claim's status
// again (the new capacity, the resize done).
const expandCeilingWrites = 3

// measureExpandCeiling writes, for up to ceilingPairs bound pairs the run
// left, expandCeilingWrites writes of the kinds an expansion makes (every
// write a real change), from the workload's writers, reading nothing while
// timed.
func measureExpandCeiling(ctx context.Context, client kubernetes.Interface) (*Ceiling, error) {
	claims, err := client.CoreV1().PersistentVolumeClaims(benchNS).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, fmt.Errorf("ceiling: listing claims: %w", err)
	}
	var pairs [][2]string
	for _, c := range claims.Items {
		if c.Spec.VolumeName != "" && len(pairs) < ceilingPairs {
			pairs = append(pairs, [2]string{c.Name, c.Spec.VolumeName})
		}
	}
	if len(pairs) == 0 {
		return nil, fmt.Errorf("ceiling: no bound claim to expand")
	}
	began := time.Now()
	err = forEach(ctx, len(pairs), func() {}, func(i int) error {
		return expandWrites(ctx, client, pairs[i][0], pairs[i][1])
	})
	if err != nil {
		return nil, fmt.Errorf("ceiling: %w", err)
	}
	s := time.Since(began).Seconds()
	w := int64(expandCeilingWrites * len(pairs))
	return &Ceiling{Writes: w, Seconds: s, WritesPerSec: float64(w) / s}, nil
}

// expandWrites grows claim and its PV once more, by expandFrom, with merge
// patches: no read, and every write a change.
func expandWrites(ctx context.Context, client kubernetes.Interface, claim, pv string) error {
	claims := client.CoreV1().PersistentVolumeClaims(benchNS)
	size := resource.NewQuantity(expandedSize+expandFrom, resource.BinarySI).String()
	inProgress := `{"status":{"allocatedResourceStatuses":{"storage":"ControllerResizeInProgress"}}}`
	if _, err := claims.Patch(ctx, claim, types.MergePatchType, []byte(inProgress), metav1.PatchOptions{}, "status"); err != nil {
		return err
	}
	grown := fmt.Sprintf(`{"spec":{"capacity":{"storage":%q}}}`, size)
	if _, err := client.CoreV1().PersistentVolumes().Patch(ctx, pv, types.MergePatchType, []byte(grown), metav1.PatchOptions{}); err != nil {
		return err
	}
	done := fmt.Sprintf(`{"status":{"capacity":{"storage":%q},"allocatedResourceStatuses":null}}`, size)
	_, err := claims.Patch(ctx, claim, types.MergePatchType, []byte(done), metav1.PatchOptions{}, "status")
	return err
}

// expandWording turns the report's bind wording into the expand
// scenario's; the JSON keeps its field names.
var expandWording = strings.NewReplacer(
	"claims bound", "claims expanded",
	"time to bind all", "time to all expanded",
	"binds/s", "expansions/s",
	"time to Bound", "request raised → capacity seen",
	"per bind", "per expansion",
)

// FindReferenceResizer finds the reference resizer's binary next to the
// volplane executable, else on $PATH.
func FindReferenceResizer(exe string) (string, error) {
	return findReference(exe, ReferenceResizerProgram, Expand, "--reference-resizer")
}
