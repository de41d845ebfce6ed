package nodeagent

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/mounting"
	"github.com/volplane/volplane/internal/stacktest"
)

// The node calls carry what the kubelet v1.36 sends: the staging and
// target paths of its layout, the access mode as mapped for a node service
// with SINGLE_NODE_MULTI_WRITER (ReadWriteOnce is SINGLE_NODE_MULTI_WRITER),
// the PV's fsType, and, for a CSIDriver with podInfoOnMount, the pod's
// identity in the publish volume context only; the publication record
// names the volume's attachment as the kubelet's does, the staging record
// only the driver and the handle.
func TestNodeCallsCarryWhatTheKubeletSends(t *testing.T) {
	ns := stacktest.Namespace(t)
	node := bed.cp.Nodes[1]
	pv := boundClaim(t, ns, "data", node)
	pod := runPod(t, ns, "app", node, "data")
	waitRunning(t, pod)
	pod, err := bed.cp.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	handle, l := pv.Spec.CSI.VolumeHandle, layout(node)
	stages, publishes := bed.tap.callsOf("NodeStageVolume", handle), bed.tap.callsOf("NodePublishVolume", handle)
	if len(stages) != 1 || len(publishes) != 1 {
		t.Fatalf("%d stage and %d publish calls, want one each", len(stages), len(publishes))
	}
	stage, publish := stages[0].(*csipb.NodeStageVolumeRequest), publishes[0].(*csipb.NodePublishVolumeRequest)
	snmw := csipb.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER
	if stage.GetStagingTargetPath() != l.StagingPath(hostpath.DriverName, handle) || stage.GetVolumeCapability().GetAccessMode().GetMode() != snmw ||
		stage.GetVolumeCapability().GetMount().GetFsType() != "ext4" || stage.GetVolumeContext()[mounting.PodNameKey] != "" {
		t.Errorf("NodeStageVolume %v: want the staging path, %v, ext4 and no pod info", stage, snmw)
	}
	want := map[string]string{mounting.PodNameKey: pod.Name, mounting.PodNamespaceKey: ns, mounting.PodUIDKey: string(pod.UID),
		mounting.ServiceAccountNameKey: pod.Spec.ServiceAccountName, mounting.EphemeralKey: "false"}
	for k, v := range want {
		if publish.GetVolumeContext()[k] != v {
			t.Errorf("NodePublishVolume volume context %s = %q, want %q", k, publish.GetVolumeContext()[k], v)
		}
	}
	if publish.GetTargetPath() != l.TargetPath(pod.UID, pv.Name) || publish.GetStagingTargetPath() != stage.GetStagingTargetPath() ||
		publish.GetVolumeCapability().GetAccessMode().GetMode() != snmw || publish.GetReadonly() {
		t.Errorf("NodePublishVolume %v: want the target and staging paths, %v, read-write", publish, snmw)
	}
	raw, err := os.ReadFile(filepath.Join(l.TargetDir(pod.UID, pv.Name), mounting.VolDataFile))
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatal(err)
	}
	if rec["attachmentID"] != attachment.Name(handle, hostpath.DriverName, node) || rec["volumeLifecycleMode"] != "Persistent" || rec["specVolID"] != pv.Name {
		t.Errorf("publication record %s: want the kubelet's attachmentID, lifecycle mode and spec name", raw)
	}
	// The staging record next to globalmount: the kubelet's driverName and
	// volumeHandle, and only the agent's own keys besides.
	raw, err = os.ReadFile(filepath.Join(l.StagingDir(hostpath.DriverName, handle), mounting.VolDataFile))
	if err != nil {
		t.Fatal(err)
	}
	rec = nil
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatal(err)
	}
	for k := range rec {
		if k != "driverName" && k != "volumeHandle" && !strings.HasPrefix(k, "volplane") {
			t.Errorf("staging record %s: key %s is not the kubelet's", raw, k)
		}
	}
	if rec["driverName"] != hostpath.DriverName || rec["volumeHandle"] != handle {
		t.Errorf("staging record %s: want driverName %s and volumeHandle %s", raw, hostpath.DriverName, handle)
	}
	deletePodAndWaitGone(t, pod)
}

// A publish the driver refuses with a final answer leaves no record: the
// kubelet removes the target directory and its vol_data.json, so nothing
// is unpublished when the pod goes. A transient answer leaves the mount
// uncertain, and the teardown unpublishes it. Both are FailedMount events
// with the driver's own text.
func TestFinalMountErrorLeavesNothingToTearDown(t *testing.T) {
	for _, tc := range []struct {
		code  codes.Code
		final bool
	}{{codes.InvalidArgument, true}, {codes.Aborted, false}} {
		t.Run(tc.code.String(), func(t *testing.T) {
			ns := stacktest.Namespace(t)
			node := bed.cp.Nodes[1]
			pv := boundClaim(t, ns, "data", node)
			handle := pv.Spec.CSI.VolumeHandle
			bed.tap.refuseCall(t, "NodePublishVolume", handle, tc.code)
			pod := runPod(t, ns, "app", node, "data")
			text := fmt.Sprintf("MountVolume.SetUp failed for volume %q : rpc error: code = %s desc = refused by the test", pv.Name, tc.code)
			stacktest.Eventually(t, "FailedMount event", func() string { return hasEvent(t, ns, pod.Name, "FailedMount", text) }, alive)
			_, err := os.Stat(layout(node).TargetDir(pod.UID, pv.Name))
			if left := err == nil; left == tc.final {
				t.Errorf("publication directory left %v (%v), want %v", left, err, !tc.final)
			}
			deletePodAndWaitGone(t, pod)
			if n := len(bed.tap.callsOf("NodeUnpublishVolume", handle)); (n > 0) == tc.final {
				t.Errorf("%d NodeUnpublishVolume calls after a %s publish failure", n, tc.code)
			}
			// The unstage may follow the pod's deletion, as the kubelet's.
			stacktest.Eventually(t, "one NodeUnstageVolume (the staging succeeded)", func() string {
				if n := len(bed.tap.callsOf("NodeUnstageVolume", handle)); n != 1 {
					return fmt.Sprintf("%d calls", n)
				}
				return ""
			}, alive)
		})
	}
}

// A volume whose only access mode is ReadWriteOncePod is refused to a
// second pod of the node while the first has it, with the kubelet's
// event, and mounted once the first is gone.
func TestReadWriteOncePodVolumeIsRefusedToASecondPodOfTheNode(t *testing.T) {
	ns := stacktest.Namespace(t)
	node := bed.cp.Nodes[1]
	pv := boundClaimWithPV(t, ns, "data", bed.drivers[node], func(pv *corev1.PersistentVolume) {
		pv.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}
	}, func(c *corev1.PersistentVolumeClaim) {
		c.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}
	})
	first := runPod(t, ns, "first", node, "data")
	waitRunning(t, first)
	second := runPod(t, ns, "second", node, "data")
	text := fmt.Sprintf("MountVolume.SetUp failed for volume %q : volume uses the ReadWriteOncePod access mode and is already in use by another pod", pv.Name)
	stacktest.Eventually(t, "FailedMount event", func() string { return hasEvent(t, ns, second.Name, "FailedMount", text) }, alive)
	deletePodAndWaitGone(t, first)
	waitRunning(t, second)
	for _, r := range bed.tap.callsOf("NodePublishVolume", pv.Spec.CSI.VolumeHandle) {
		if m := r.(*csipb.NodePublishVolumeRequest).GetVolumeCapability().GetAccessMode().GetMode(); m != csipb.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER {
			t.Errorf("published as %v, want SINGLE_NODE_SINGLE_WRITER", m)
		}
	}
	deletePodAndWaitGone(t, second)
}

// A PV whose node affinity the node does not match is not mounted there:
// the kubelet's NodeAffinity event, until the node gets the label.
func TestVolumeOfAnotherNodeIsNotMountedUntilTheNodeMatches(t *testing.T) {
	ns := stacktest.Namespace(t)
	node := bed.cp.Nodes[1]
	key := "test.volplane.io/" + ns
	pv := boundClaimWithPV(t, ns, "data", bed.drivers[node], func(pv *corev1.PersistentVolume) {
		pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{"yes"}}}}}}}
	})
	pod := runPod(t, ns, "app", node, "data")
	text := fmt.Sprintf("MountVolume.NodeAffinity check failed for volume %q : no matching NodeSelectorTerms", pv.Name)
	stacktest.Eventually(t, "FailedMount event", func() string { return hasEvent(t, ns, pod.Name, "FailedMount", text) }, alive)
	if n := len(bed.tap.callsOf("NodeStageVolume", pv.Spec.CSI.VolumeHandle)); n != 0 {
		t.Errorf("%d NodeStageVolume calls for a volume of another node", n)
	}
	labelNode(t, node, key, "yes")
	waitRunning(t, pod)
	deletePodAndWaitGone(t, pod)
}

// labelNode sets a label on the node until the test ends.
func labelNode(t *testing.T, node, key, value string) {
	t.Helper()
	patch := func(v any) error {
		raw, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{key: v}}})
		_, err := bed.cp.Client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, raw, metav1.PatchOptions{})
		return err
	}
	if err := patch(value); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = patch(nil) })
}

// A CSIDriver with tokenRequests (the attach driver's, in the secrets) gets
// a token of the pod's service account for its audience at publish, bound
// to the pod, and the attachment's metadata as publish context.
func TestPublishCarriesThePodsServiceAccountToken(t *testing.T) {
	ns := stacktest.Namespace(t)
	node := bed.cp.Nodes[0]
	pv := boundClaimOf(t, ns, "net", bed.attachDriver)
	pod := runPod(t, ns, "app", node, "net")
	attachByHand(t, node, pv)
	waitRunning(t, pod)
	calls := bed.tap.callsOf("NodePublishVolume", pv.Spec.CSI.VolumeHandle)
	if len(calls) != 1 {
		t.Fatalf("%d NodePublishVolume calls, want 1", len(calls))
	}
	publish := calls[0].(*csipb.NodePublishVolumeRequest)
	if publish.GetVolumeContext()[mounting.TokensKey] != "" {
		t.Errorf("tokens in the volume context; the CSIDriver wants them in the secrets")
	}
	var tokens map[string]authenticationv1.TokenRequestStatus
	if err := json.Unmarshal([]byte(publish.GetSecrets()[mounting.TokensKey]), &tokens); err != nil {
		t.Fatalf("secrets %v: %v", publish.GetSecrets(), err)
	}
	if len(tokens) != 1 || tokens[tokenAudience].Token == "" || tokens[tokenAudience].ExpirationTimestamp.Time.IsZero() {
		t.Errorf("tokens %v: want one for %q", tokens, tokenAudience)
	}
	va, err := bed.cp.Client.StorageV1().VolumeAttachments().Get(ctx, attachment.Name(pv.Spec.CSI.VolumeHandle, attachDriverName, node), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(publish.GetPublishContext(), va.Status.AttachmentMetadata) {
		t.Errorf("publish context %v, want the attachment's metadata %v", publish.GetPublishContext(), va.Status.AttachmentMetadata)
	}
	deletePodAndWaitGone(t, pod)
}

// A block volume is staged and published at the kubelet's block mapper
// paths (volumeDevices/staging/<pv>, volumeDevices/publish/<pv>/<pod uid>,
// the staging path given to the publish), its record in
// volumeDevices/<pv>/data; all of it goes with the pod.
func TestBlockVolumeIsMappedAtTheKubeletsBlockPaths(t *testing.T) {
	ns := stacktest.Namespace(t)
	node := bed.cp.Nodes[1]
	block := corev1.PersistentVolumeBlock
	pv := boundClaimWithPV(t, ns, "raw", bed.drivers[node], func(pv *corev1.PersistentVolume) { pv.Spec.VolumeMode = &block },
		func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeMode = &block })
	pod := runPod(t, ns, "app", node, "raw")
	waitRunning(t, pod)
	handle, l := pv.Spec.CSI.VolumeHandle, layout(node)
	stages, publishes := bed.tap.callsOf("NodeStageVolume", handle), bed.tap.callsOf("NodePublishVolume", handle)
	if len(stages) != 1 || len(publishes) != 1 {
		t.Fatalf("%d stage and %d publish calls, want one each", len(stages), len(publishes))
	}
	stage, publish := stages[0].(*csipb.NodeStageVolumeRequest), publishes[0].(*csipb.NodePublishVolumeRequest)
	staging, target := l.BlockStagingPath(pv.Name), l.BlockPublishPath(pv.Name, pod.UID)
	if stage.GetStagingTargetPath() != staging || stage.GetVolumeCapability().GetBlock() == nil {
		t.Errorf("NodeStageVolume %v: want a block capability staged at %s", stage, staging)
	}
	if publish.GetTargetPath() != target || publish.GetStagingTargetPath() != staging || publish.GetVolumeCapability().GetBlock() == nil {
		t.Errorf("NodePublishVolume %v: want a block capability published at %s from %s", publish, target, staging)
	}
	for _, rec := range []string{l.BlockDataDir(pv.Name), filepath.Join(l.PodDevicesDir(pod.UID), pv.Name)} {
		if _, err := os.Stat(filepath.Join(rec, mounting.VolDataFile)); err != nil {
			t.Errorf("record: %v", err)
		}
	}
	deletePodAndWaitGone(t, pod)
	// The unstage and the directories' removal may follow the pod's
	// deletion, as the kubelet's.
	waitTornDown(t, staging, filepath.Dir(target), filepath.Dir(l.BlockDataDir(pv.Name)), l.PodDir(pod.UID))
	unpublished, unstaged := bed.tap.callsOf("NodeUnpublishVolume", handle), bed.tap.callsOf("NodeUnstageVolume", handle)
	if len(unpublished) != 1 || unpublished[0].(*csipb.NodeUnpublishVolumeRequest).GetTargetPath() != target ||
		len(unstaged) != 1 || unstaged[0].(*csipb.NodeUnstageVolumeRequest).GetStagingTargetPath() != staging {
		t.Errorf("unpublished %v, unstaged %v: want once each at the block paths", unpublished, unstaged)
	}
	for _, left := range []string{staging, filepath.Dir(target), filepath.Dir(l.BlockDataDir(pv.Name)), l.PodDir(pod.UID)} {
		if _, err := os.Stat(left); !os.IsNotExist(err) {
			t.Errorf("%s left behind (%v)", left, err)
		}
	}
}

// A pod with an fsGroup, on a driver without VOLUME_MOUNT_GROUP whose
// CSIDriver keeps the default fsGroupPolicy, gets its ReadWriteOnce ext4
// volume owned by that group (group read-write, setgid), as the kubelet
// changes it after NodePublishVolume.
func TestPublishedVolumeIsGivenThePodsFSGroup(t *testing.T) {
	ns := stacktest.Namespace(t)
	node := bed.cp.Nodes[1]
	pv := boundClaim(t, ns, "data", node)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}, Spec: corev1.PodSpec{NodeName: node,
		SecurityContext: &corev1.PodSecurityContext{FSGroup: ptr.To[int64](4321)},
		Containers:      []corev1.Container{{Name: "app", Image: "busybox"}},
		Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}
	pod, err := bed.cp.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitRunning(t, pod)
	target := layout(node).TargetPath(pod.UID, pv.Name)
	info, err := os.Stat(target)
	if err != nil {
		t.Fatal(err)
	}
	if st := info.Sys().(*syscall.Stat_t); st.Gid != 4321 || info.Mode().Perm()&0o770 != 0o770 || info.Mode()&os.ModeSetgid == 0 {
		t.Errorf("target %s: gid %d mode %v, want gid 4321, group rwx and setgid", target, st.Gid, info.Mode())
	}
	deletePodAndWaitGone(t, pod)
}

// A published claim's usage is reported as the kubelet reports it,
// kubelet_volume_stats_* by namespace and claim (and, here, node), from
// NodeGetVolumeStats at the target path, cached per VolumeStatsAggPeriod
// and served from the cache at each scrape; it goes with the pod.
func TestPublishedClaimsUsageIsReportedAsTheKubeletsVolumeStats(t *testing.T) {
	ns := stacktest.Namespace(t)
	node := bed.cp.Nodes[1]
	pv := boundClaim(t, ns, "data", node)
	pod := runPod(t, ns, "app", node, "data")
	waitRunning(t, pod)
	series := func(name string) (float64, bool) {
		families, err := bed.agent.metrics.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() != name {
				continue
			}
			for _, m := range f.GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if labels["namespace"] == ns && labels["persistentvolumeclaim"] == "data" && labels["node"] == node {
					return m.GetGauge().GetValue(), true
				}
			}
		}
		return 0, false
	}
	// Cached per VolumeStatsAggPeriod: reported from the first refresh
	// after the publication on.
	stacktest.Eventually(t, "capacity reported", func() string {
		if v, ok := series("kubelet_volume_stats_capacity_bytes"); !ok || v != float64(1<<20) {
			return fmt.Sprintf("capacity %v (reported %v), want the volume's 1Mi", v, ok)
		}
		return ""
	}, alive)
	// Kubernetes 1.37 removed the kubelet's health_status_abnormal series
	// with CSI's VolumeCondition.
	if v, ok := series("kubelet_volume_stats_health_status_abnormal"); ok {
		t.Errorf("health abnormal reported (%v): the kubelet of 1.37 has no such series", v)
	}
	calls := bed.tap.callsOf("NodeGetVolumeStats", pv.Spec.CSI.VolumeHandle)
	if len(calls) == 0 || calls[0].(*csipb.NodeGetVolumeStatsRequest).GetVolumePath() != layout(node).TargetPath(pod.UID, pv.Name) ||
		calls[0].(*csipb.NodeGetVolumeStatsRequest).GetStagingTargetPath() != "" {
		t.Errorf("NodeGetVolumeStats calls %v: want the target path and no staging path", calls)
	}
	// Scrapes are served from the cache, as the kubelet's: five in a row
	// ask the driver at most once (a refresh falling between), not five
	// times.
	before := len(bed.tap.callsOf("NodeGetVolumeStats", pv.Spec.CSI.VolumeHandle))
	for range 5 {
		series("kubelet_volume_stats_used_bytes")
	}
	if after := len(bed.tap.callsOf("NodeGetVolumeStats", pv.Spec.CSI.VolumeHandle)); after > before+1 {
		t.Errorf("%d NodeGetVolumeStats calls for 5 scrapes: want the cached stats served", after-before)
	}
	deletePodAndWaitGone(t, pod)
	stacktest.Eventually(t, "stats gone with the pod", func() string {
		if _, ok := series("kubelet_volume_stats_capacity_bytes"); ok {
			return "the claim's stats still reported after its pod is gone"
		}
		return ""
	}, alive)
}

// A CSI volume in the pod's own spec, of the bundled driver (its CSIDriver
// lists Persistent only), is refused as the kubelet's SetUp refuses it,
// and the pod does not run.
func TestInlineVolumeOfAPersistentOnlyDriverIsRefused(t *testing.T) {
	ns := stacktest.Namespace(t)
	node := bed.cp.Nodes[1]
	drv, err := bed.cp.Client.StorageV1().CSIDrivers().Get(ctx, hostpath.DriverName, metav1.GetOptions{})
	if err != nil || len(drv.Spec.VolumeLifecycleModes) != 1 {
		t.Fatalf("CSIDriver %v (%v): want the API's default, Persistent only", drv, err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "inline"}, Spec: corev1.PodSpec{NodeName: node,
		Containers: []corev1.Container{{Name: "app", Image: "busybox"}},
		Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{
			CSI: &corev1.CSIVolumeSource{Driver: hostpath.DriverName}}}}}}
	if pod, err = bed.cp.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	text := `MountVolume.SetUp failed for volume "scratch" : kubernetes.io/csi: mounter.SetupAt failed to check volume lifecycle mode: volume mode "Ephemeral" not supported by driver ` +
		hostpath.DriverName + ` (only supports ["Persistent"])`
	stacktest.Eventually(t, "FailedMount event", func() string { return hasEvent(t, ns, pod.Name, "FailedMount", text) }, alive)
	if p, err := bed.cp.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{}); err != nil || p.Status.Phase == corev1.PodRunning {
		t.Errorf("pod %v (%v): want it not running", p.Status.Phase, err)
	}
	deletePodAndWaitGone(t, pod)
}
