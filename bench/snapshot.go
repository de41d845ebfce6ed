package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	snapinformers "github.com/kubernetes-csi/external-snapshotter/client/v8/informers/externalversions"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/hostpath"
)

// The snapshot scenario: N volumes of the node-local driver, each with a
// PV and a claim bound to each other, and a VolumeSnapshot of every claim
// (default class), all before the controllers start. The side runs the two
// snapshot roles (snapshot-controller and csi-snapshotter) as two measured
// processes; a snapshot counts once its status.readyToUse is true.

// needsDrivers says whether a scenario runs the bundled drivers.
func needsDrivers(scenario string) bool {
	return scenario == Dynamic || scenario == Churn || scenario == Snapshot || scenario == Attach || scenario == Expand
}

func snapshotName(i int) string { return fmt.Sprintf("s-%06d", i) }

// snapshotREST is a JSON config (custom resources speak no protobuf) with
// no client-side limit, for the bench's own snapshot API calls.
func benchSnapshotREST(rc *rest.Config) *rest.Config {
	rc = rest.CopyConfig(rc)
	rc.QPS, rc.Burst = -1, 0
	rc.UserAgent = "volplane-bench"
	return rc
}

// prepareSnapshots installs the snapshot API and the bundled classes.
func (e *sideEnv) prepareSnapshots(ctx context.Context) error {
	if err := bundle.RegisterSnapshots(ctx, e.cp.RESTConfig); err != nil {
		return fmt.Errorf("registering the snapshot API: %w", err)
	}
	var err error
	e.snaps, err = snapclient.NewForConfig(benchSnapshotREST(e.cp.RESTConfig))
	return err
}

// nodeEndpoint is the node-local driver's endpoint of the only node.
func (e *sideEnv) nodeEndpoint() string {
	return e.drivers.NodeEndpoints[e.cp.Nodes[0]][0]
}

// createSnapshotWorkload creates the volumes on the driver, their bound PVs
// and claims, and a VolumeSnapshot of each claim. No binder runs: the pairs
// are written bound.
func (e *sideEnv) createSnapshotWorkload(ctx context.Context) error {
	ep, err := csi.Dial(ctx, e.nodeEndpoint(), nil)
	if err != nil {
		return err
	}
	defer ep.Close()
	n := e.o.Pairs
	e.progress.start("creating volumes, bound pairs and snapshots", n)
	defer e.progress.done()
	return forEach(ctx, n, func() { e.progress.add(1) }, func(i int) error {
		if err := e.createBoundVolume(ctx, ep, i, bundle.ImmediateClass, hostpath.DriverName); err != nil {
			return fmt.Errorf("pair %d: %w", i, err)
		}
		vs := &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Name: snapshotName(i), Namespace: benchNS},
			Spec: snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To(claimName(i))}}}
		if _, err := e.snaps.SnapshotV1().VolumeSnapshots(benchNS).Create(ctx, vs, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating %s: %w", vs.Name, err)
		}
		return nil
	})
}

const snapshotVolumeSize = 1 << 20

// createBoundVolume creates volume i on the driver at ep, then its claim of
// class and its PV (of driver) bound to each other, their status Bound.
func (e *sideEnv) createBoundVolume(ctx context.Context, ep *csi.Endpoint, i int, class, driver string) error {
	vol, err := ep.CreateVolume(ctx, &csipb.CreateVolumeRequest{
		Name:          "bench-" + volumeName(i),
		CapacityRange: &csipb.CapacityRange{RequiredBytes: snapshotVolumeSize},
		VolumeCapabilities: []*csipb.VolumeCapability{{
			AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{}},
			AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		}},
	})
	if err != nil {
		return fmt.Errorf("CreateVolume: %w", err)
	}
	size := *resource.NewQuantity(snapshotVolumeSize, resource.BinarySI)
	rwo := []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	claims, pvs := e.admin.CoreV1().PersistentVolumeClaims(benchNS), e.admin.CoreV1().PersistentVolumes()
	c, err := claims.Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claimName(i), Namespace: benchNS},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(class), AccessModes: rwo,
			VolumeName: volumeName(i),
			Resources:  corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}}},
	}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	c.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, AccessModes: rwo,
		Capacity: corev1.ResourceList{corev1.ResourceStorage: size}}
	if _, err := claims.UpdateStatus(ctx, c, metav1.UpdateOptions{}); err != nil {
		return err
	}
	pv, err := pvs.Create(ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: volumeName(i)},
		Spec: corev1.PersistentVolumeSpec{StorageClassName: class, AccessModes: rwo,
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: benchNS, Name: c.Name, UID: c.UID},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: driver, VolumeHandle: vol.GetVolumeId(), VolumeAttributes: vol.GetVolumeContext()}}},
	}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	pv.Status.Phase = corev1.VolumeBound
	_, err = pvs.UpdateStatus(ctx, pv, metav1.UpdateOptions{})
	return err
}

// startSnapshotWatch records when each VolumeSnapshot of the bench
// namespace is first seen ready to use.
func startSnapshotWatch(ctx context.Context, client snapclient.Interface) (*bindWatch, error) {
	factory := snapinformers.NewSharedInformerFactoryWithOptions(client, 0, snapinformers.WithNamespace(benchNS))
	return startWatch(ctx, "snapshots", factory.Snapshot().V1().VolumeSnapshots().Informer(), factory.Start, snapshotReady)
}

// snapshotReady says a VolumeSnapshot's name and whether it is ready to
// use.
func snapshotReady(obj any) (string, bool) {
	if vs, ok := obj.(*snapv1.VolumeSnapshot); ok {
		return vs.Name, vs.Status != nil && ptr.Deref(vs.Status.ReadyToUse, false)
	}
	return "", false
}

// snapshotProcesses are the side's two measured processes: the
// snapshot-controller role, then the csi-snapshotter role serving the
// node-local driver, each with the bench's client limits.
func (e *sideEnv) snapshotProcesses(ctx context.Context, env []string) ([]*controllerProcess, error) {
	o := e.o
	limits := []string{"--kubeconfig", e.cp.Kubeconfig, "--kube-api-qps", fmtQPS(o.QPS), "--kube-api-burst", strconv.Itoa(o.Burst)}
	var controller, snapshotter []string
	if e.name == Reference {
		controller = append([]string{"bench", "reference-snapshot-controller"}, limits...)
		snapshotter = append([]string{"bench", "reference-csi-snapshotter", "--csi-address", e.nodeEndpoint()}, limits...)
	} else {
		common := append([]string{"--leader-elect=false", "--metrics-bind-address", "127.0.0.1:0"}, limits...)
		if o.Workers > 0 {
			common = append(common, "--workers", strconv.Itoa(o.Workers))
		}
		controller = append([]string{"controller", "--controllers", "snapshot"}, common...)
		snapshotter = append([]string{"controller", "--controllers", "snapshotter", "--csi-endpoint", e.nodeEndpoint()}, common...)
		if o.Profile != "" {
			controller = append(controller, "--cpuprofile", o.Profile+".cpu.pprof", "--profiling")
			snapshotter = append(snapshotter, "--cpuprofile", o.Profile+".snapshotter.cpu.pprof", "--profiling")
		}
	}
	p, err := startProcess(ctx, o.Executable, e.dir, e.name+" snapshot-controller", true, env, controller...)
	if err != nil {
		return nil, err
	}
	s, err := startProcess(ctx, o.Executable, e.dir, e.name+" csi-snapshotter", true, env, snapshotter...)
	if err != nil {
		p.stop()
		return nil, err
	}
	return []*controllerProcess{p, s}, nil
}

// snapshotCeilingWrites is what the trivial writer writes per snapshot:
// one write of every kind making a snapshot ready takes, as many times as
// volplane's side makes it: the content created, annotated and
// unannotated (two merge patches), its status written; the snapshot
// updated and its status written twice; its claim updated twice.
const snapshotCeilingWrites = 9

// measureSnapshotCeiling writes, for up to ceilingPairs snapshots the run
// left, snapshotCeilingWrites writes of the kinds a snapshot side makes
// (every write a real change), from the workload's writers, reading
// nothing while timed.
func measureSnapshotCeiling(ctx context.Context, client snapclient.Interface, core kubernetes.Interface) (*Ceiling, error) {
	list, err := client.SnapshotV1().VolumeSnapshots(benchNS).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, fmt.Errorf("ceiling: listing snapshots: %w", err)
	}
	claims, err := core.CoreV1().PersistentVolumeClaims(benchNS).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, fmt.Errorf("ceiling: listing claims: %w", err)
	}
	claimOf := map[string]*corev1.PersistentVolumeClaim{}
	for i := range claims.Items {
		claimOf[claims.Items[i].Name] = &claims.Items[i]
	}
	type pair struct {
		vs    *snapv1.VolumeSnapshot
		claim *corev1.PersistentVolumeClaim
	}
	var pairs []pair
	for i := range list.Items {
		vs := &list.Items[i]
		claim := claimOf[ptr.Deref(vs.Spec.Source.PersistentVolumeClaimName, "")]
		if vs.Status != nil && claim != nil && len(pairs) < ceilingPairs {
			pairs = append(pairs, pair{vs, claim})
		}
	}
	if len(pairs) == 0 {
		return nil, fmt.Errorf("ceiling: no snapshot with a status and a claim to rewrite")
	}
	began := time.Now()
	err = forEach(ctx, len(pairs), func() {}, func(i int) error {
		return snapshotWrites(ctx, client, core, pairs[i].vs, pairs[i].claim)
	})
	if err != nil {
		return nil, fmt.Errorf("ceiling: %w", err)
	}
	s := time.Since(began).Seconds()
	n := int64(snapshotCeilingWrites * len(pairs))
	return &Ceiling{Writes: n, Seconds: s, WritesPerSec: float64(n) / s}, nil
}

// ceilingMark is the annotation (claims, snapshots) and label (contents)
// the ceiling writer sets and removes.
const ceilingMark = "bench.volplane.io/ceiling"

func snapshotWrites(ctx context.Context, client snapclient.Interface, core kubernetes.Interface, vs *snapv1.VolumeSnapshot, claim *corev1.PersistentVolumeClaim) error {
	contents := client.SnapshotV1().VolumeSnapshotContents()
	snaps := client.SnapshotV1().VolumeSnapshots(vs.Namespace)
	claims := core.CoreV1().PersistentVolumeClaims(claim.Namespace)
	handle := "ceiling-" + string(vs.UID)
	// 1. The claim held.
	claim = claim.DeepCopy()
	metav1.SetMetaDataAnnotation(&claim.ObjectMeta, ceilingMark, "held")
	claim, err := claims.Update(ctx, claim, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	// 2. The snapshot updated.
	vs = vs.DeepCopy()
	metav1.SetMetaDataAnnotation(&vs.ObjectMeta, ceilingMark, "held")
	if vs, err = snaps.Update(ctx, vs, metav1.UpdateOptions{}); err != nil {
		return err
	}
	// 3. The content created.
	c, err := contents.Create(ctx, &snapv1.VolumeSnapshotContent{
		ObjectMeta: metav1.ObjectMeta{Name: handle},
		Spec: snapv1.VolumeSnapshotContentSpec{
			VolumeSnapshotRef: corev1.ObjectReference{Kind: "VolumeSnapshot", APIVersion: snapv1.SchemeGroupVersion.String(),
				Namespace: vs.Namespace, Name: vs.Name, UID: vs.UID},
			DeletionPolicy:          snapv1.VolumeSnapshotContentRetain,
			Driver:                  hostpath.DriverName,
			VolumeSnapshotClassName: ptr.To(bundle.SnapshotClass),
			Source:                  snapv1.VolumeSnapshotContentSource{VolumeHandle: ptr.To(handle)},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	// 4. The snapshot's status, then the content marked, its status
	// written, unmarked; the snapshot's status again; the claim released.
	now := time.Now()
	vs.Status.CreationTime = &metav1.Time{Time: now.Add(time.Hour)}
	if vs, err = snaps.UpdateStatus(ctx, vs, metav1.UpdateOptions{}); err != nil {
		return err
	}
	mark := `{"metadata":{"labels":{"` + ceilingMark + `":"yes"}}}`
	if c, err = contents.Patch(ctx, c.Name, types.MergePatchType, []byte(mark), metav1.PatchOptions{}); err != nil {
		return err
	}
	c.Status = &snapv1.VolumeSnapshotContentStatus{SnapshotHandle: ptr.To(handle), ReadyToUse: ptr.To(true),
		CreationTime: ptr.To(now.UnixNano()), RestoreSize: ptr.To(int64(snapshotVolumeSize))}
	if _, err := contents.UpdateStatus(ctx, c, metav1.UpdateOptions{}); err != nil {
		return err
	}
	unmark := `{"metadata":{"labels":{"` + ceilingMark + `":null}}}`
	if _, err := contents.Patch(ctx, c.Name, types.MergePatchType, []byte(unmark), metav1.PatchOptions{}); err != nil {
		return err
	}
	vs.Status.CreationTime = &metav1.Time{Time: now.Add(2 * time.Hour)}
	if _, err := snaps.UpdateStatus(ctx, vs, metav1.UpdateOptions{}); err != nil {
		return err
	}
	delete(claim.Annotations, ceilingMark)
	_, err = claims.Update(ctx, claim, metav1.UpdateOptions{})
	return err
}

// snapshotWording turns the report's bind wording into the snapshot
// scenario's; the JSON keeps its field names.
var snapshotWording = strings.NewReplacer(
	"claims bound", "snapshots ready",
	"time to bind all", "time to all ready",
	"binds/s", "snapshots/s",
	"time to Bound", "time to ready",
	"per bind", "per snapshot",
)

// wording is the printed report s in the words of r's scenario.
func (r Report) wording(s string) string {
	switch r.Scenario {
	case Snapshot:
		return snapshotWording.Replace(s)
	case Attach:
		return attachWording.Replace(s)
	case Expand:
		return expandWording.Replace(s)
	case Protection:
		return protectionWording.Replace(s)
	case Dynamic:
		return dynamicWording.Replace(s)
	}
	return s
}

// writeBreakdown adds, for the snapshot scenario, each side's writes per
// snapshot by kind.
func (r Report) writeBreakdown(b *strings.Builder) {
	if r.Scenario != Snapshot && r.Scenario != Attach && r.Scenario != Expand && r.Scenario != Protection && r.Scenario != Dynamic {
		return
	}
	kinds := map[string]bool{}
	for _, s := range r.Sides {
		for k := range s.WritesBy {
			kinds[k] = true
		}
	}
	if len(kinds) == 0 {
		return
	}
	b.WriteString("\nwrites per bind by kind:\n")
	tw := tabwriter.NewWriter(b, 0, 0, 3, ' ', 0)
	for _, s := range r.Sides {
		fmt.Fprintf(tw, "\t%s", s.Name)
	}
	fmt.Fprint(tw, "\n")
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		fmt.Fprintf(tw, "  %s", k)
		for _, s := range r.Sides {
			fmt.Fprintf(tw, "\t%.2f", float64(s.WritesBy[k])/float64(max(s.Bound, 1)))
		}
		fmt.Fprint(tw, "\n")
	}
	_ = tw.Flush()
}
