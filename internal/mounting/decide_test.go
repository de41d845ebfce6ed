package mounting

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/attachment"
)

const (
	node     = "node-1"
	local    = "local.csi"
	network  = "network.csi"
	podUID   = types.UID("uid-1")
	otherUID = types.UID("uid-2")
)

// world is a node with the claim ns/data bound to PV pv-1 (handle h-1 of
// driver), both drivers served, local needing no attach.
func world(driver string, mods ...func(*World)) World {
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data", UID: "claim-uid"},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1"}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"}, Spec: corev1.PersistentVolumeSpec{
		ClaimRef:               &corev1.ObjectReference{Namespace: "ns", Name: "data", UID: "claim-uid"},
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: "h-1"}}}}
	w := World{Node: node,
		Claims:  map[string]*corev1.PersistentVolumeClaim{"ns/data": claim},
		Volumes: map[string]*corev1.PersistentVolume{"pv-1": pv},
		CSIDrivers: map[string]*storagev1.CSIDriver{
			local:   {ObjectMeta: metav1.ObjectMeta{Name: local}, Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false)}},
			network: {ObjectMeta: metav1.ObjectMeta{Name: network}, Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(true)}}},
		Drivers: map[string]Driver{local: {Stage: true}, network: {Stage: true}},
	}
	for _, m := range mods {
		m(&w)
	}
	return w
}

func pod(uid types.UID, claims ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pod-" + string(uid), UID: uid},
		Spec: corev1.PodSpec{NodeName: node, Volumes: []corev1.Volume{
			{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
			{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}}}
	for _, c := range claims {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "vol-" + c,
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
	}
	return p
}

func deleting(p *corev1.Pod) *corev1.Pod { p.DeletionTimestamp = &metav1.Time{}; return p }

func withPods(pods ...*corev1.Pod) func(*World) { return func(w *World) { w.Pods = pods } }

func attachedAndReported(w *World) {
	u := attachment.UniqueVolumeName(network, "h-1")
	w.Reported = []corev1.UniqueVolumeName{u}
	w.Attached = map[corev1.UniqueVolumeName]bool{u: true}
	name := attachment.Name("h-1", network, node)
	w.Attachments = map[string]*storagev1.VolumeAttachment{name: {ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: storagev1.VolumeAttachmentStatus{Attached: true}}}
}

func staged(driver string, done bool) func(*World) {
	return func(w *World) {
		w.Staged = append(w.Staged, Staged{Driver: driver, Handle: "h-1", PV: "pv-1", Done: done})
	}
}

func published(uid types.UID, driver string, done bool) func(*World) {
	return func(w *World) {
		w.Published = append(w.Published, Published{PodUID: uid, Driver: driver, Handle: "h-1", PV: "pv-1", Done: done})
		w.PodDirs = append(w.PodDirs, uid)
	}
}

// The next step of a pod's one claim volume, for every state it can be in.
func TestEachClaimVolumeStepsFromClaimToPublished(t *testing.T) {
	notBound := func(w *World) { w.Claims["ns/data"].Status.Phase = corev1.ClaimPending }
	claimDeleting := func(w *World) { w.Claims["ns/data"].DeletionTimestamp = &metav1.Time{} }
	protectedDeleting := func(w *World) {
		claimDeleting(w)
		w.Claims["ns/data"].Finalizers = []string{"kubernetes.io/pvc-protection"}
	}
	noPV := func(w *World) { delete(w.Volumes, "pv-1") }
	otherClaim := func(w *World) { w.Volumes["pv-1"].Spec.ClaimRef.UID = "other" }
	notServed := func(w *World) { delete(w.Drivers, local) }
	reportedOnly := func(w *World) {
		attachedAndReported(w)
		w.Attached = nil
	}
	attachFailed := func(w *World) {
		attachedAndReported(w)
		for _, va := range w.Attachments {
			va.Status.Attached, va.Status.AttachError = false, &storagev1.VolumeError{Message: "rpc error: boom"}
		}
	}
	for _, tc := range []struct {
		name   string
		w      World
		action Action
		reason Reason
		err    string
	}{
		{"claim missing", world(local, withPods(pod(podUID, "missing"))), Wait, ClaimNotFound,
			`error processing PVC ns/missing: failed to fetch PVC from API server: persistentvolumeclaims "missing" not found`},
		{"claim not bound", world(local, withPods(pod(podUID, "data")), notBound), Wait, ClaimNotBound, "error processing PVC ns/data: PVC is not bound"},
		{"claim being deleted", world(local, withPods(pod(podUID, "data")), claimDeleting), Wait, ClaimBeingDeleted, "error processing PVC ns/data: PVC is being deleted"},
		{"protected claim being deleted still mounts", world(local, withPods(pod(podUID, "data")), protectedDeleting), Stage, "", ""},
		{"PV missing", world(local, withPods(pod(podUID, "data")), noPV), Wait, VolumeNotFound,
			`error processing PVC ns/data: failed to fetch PV pv-1 from API server: persistentvolumes "pv-1" not found`},
		{"PV bound to another claim", world(local, withPods(pod(podUID, "data")), otherClaim), Wait, VolumeNotBoundToClaim,
			"error processing PVC ns/data: found PV object pv-1 but its pv.Spec.ClaimRef.UID other does not point to claim.UID claim-uid"},
		{"driver not served", world(local, withPods(pod(podUID, "data")), notServed), Wait, DriverNotServed, "kubernetes.io/csi: attacher.MountDevice failed to create newCsiDriverClient: driver name local.csi not found in the list of registered CSI drivers"},
		{"no attach needed: stage", world(local, withPods(pod(podUID, "data"))), Stage, "", ""},
		{"half-done staging is staged again", world(local, withPods(pod(podUID, "data")), staged(local, false)), Stage, "", ""},
		{"staged: publish", world(local, withPods(pod(podUID, "data")), staged(local, true)), Publish, "", ""},
		{"published", world(local, withPods(pod(podUID, "data")), staged(local, true), published(podUID, local, true)), Done, "", ""},
		{"attachable: reported in use first", world(network, withPods(pod(podUID, "data"))), Wait, NotReportedInUse, ""},
		{"attachable: not in volumesAttached", world(network, withPods(pod(podUID, "data")), reportedOnly), Wait, NotAttached, ""},
		{"attachable: attach error", world(network, withPods(pod(podUID, "data")), attachFailed), Wait, NotAttached, "rpc error: boom"},
		{"attachable and attached: stage", world(network, withPods(pod(podUID, "data")), attachedAndReported), Stage, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := Decide(tc.w)
			if len(plan.Pods) != 1 || len(plan.Pods[0].Steps) != 1 {
				t.Fatalf("plan %+v: want one pod with one CSI step (configMap and emptyDir need nothing)", plan.Pods)
			}
			s := plan.Pods[0].Steps[0]
			if s.Action != tc.action || s.Reason != tc.reason || s.Err != tc.err {
				t.Errorf("step %v %q %q, want %v %q %q", s.Action, s.Reason, s.Err, tc.action, tc.reason, tc.err)
			}
			if got := plan.Pods[0].Ready(); got != (tc.action == Done) {
				t.Errorf("Ready() = %v with step %v", got, s.Action)
			}
		})
	}
}

func TestPodWithoutCSIVolumesIsReadyAtOnce(t *testing.T) {
	plan := Decide(world(local, withPods(pod(podUID))))
	if len(plan.Pods) != 1 || !plan.Pods[0].Ready() || len(plan.VolumesInUse) != 0 {
		t.Fatalf("plan %+v: want the pod ready and nothing in use", plan)
	}
}

// Only processing failures (the claim's problems) make the pod-level event;
// a wait for attachment does not.
func TestPodLevelFailedMountOnlyForClaimProblems(t *testing.T) {
	plan := Decide(world(local, withPods(pod(podUID, "missing", "data"))))
	want := `Unable to attach or mount volumes: unmounted volumes=[vol-data vol-missing], unattached volumes=[], failed to process volumes=[vol-missing]: error processing PVC ns/missing: failed to fetch PVC from API server: persistentvolumeclaims "missing" not found`
	if got := plan.Pods[0].FailureMessage(); got != want {
		t.Errorf("message\n got %s\nwant %s", got, want)
	}
	if got := Decide(world(network, withPods(pod(podUID, "data")))).Pods[0].FailureMessage(); got != "" {
		t.Errorf("a plain wait for attachment made the message %q", got)
	}
}

// A Block volume in volumeMounts, or a Filesystem one in volumeDevices,
// is never staged: the pod gets the kubelet's processing failure.
func TestVolumeModeTheContainersDoNotAskForIsNotMounted(t *testing.T) {
	block := func(w *World) { w.Volumes["pv-1"].Spec.VolumeMode = ptr.To(corev1.PersistentVolumeBlock) }
	mountedAt := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.Containers = []corev1.Container{{Name: "app", VolumeMounts: []corev1.VolumeMount{{Name: "vol-data", MountPath: "/data"}}}}
		return p
	}
	deviceAt := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.InitContainers = []corev1.Container{{Name: "init", VolumeDevices: []corev1.VolumeDevice{{Name: "vol-data", DevicePath: "/dev/x"}}}}
		return p
	}
	for _, tc := range []struct {
		name  string
		world World
		want  string
	}{
		{"block in volumeMounts", world(local, block, withPods(mountedAt(pod(podUID, "data")))),
			"failed to process volumes=[vol-data]: volume vol-data has volumeMode Block, but is specified in volumeMounts"},
		{"filesystem in volumeDevices", world(local, withPods(deviceAt(pod(podUID, "data")))),
			"failed to process volumes=[vol-data]: volume vol-data has volumeMode Filesystem, but is specified in volumeDevices"},
		{"block in volumeDevices", world(local, block, withPods(deviceAt(pod(podUID, "data")))), ""},
		{"filesystem in volumeMounts", world(local, withPods(mountedAt(pod(podUID, "data")))), ""},
	} {
		pp := Decide(tc.world).Pods[0]
		got := pp.FailureMessage()
		if !strings.HasSuffix(got, tc.want) || (tc.want == "") != (got == "") {
			t.Errorf("%s: message %q, want it to end with %q", tc.name, got, tc.want)
		}
		if staging := pp.Steps[0].Action == Stage; staging != (tc.want == "") {
			t.Errorf("%s: step %+v", tc.name, pp.Steps[0])
		}
	}
}

func TestVolumesInUseListsAttachableVolumesWantedOrStillMounted(t *testing.T) {
	u := attachment.UniqueVolumeName(network, "h-1")
	for _, tc := range []struct {
		name string
		w    World
		want []corev1.UniqueVolumeName
	}{
		{"wanted by a live pod", world(network, withPods(pod(podUID, "data"))), []corev1.UniqueVolumeName{u}},
		{"no attach needed: never listed", world(local, withPods(pod(podUID, "data"))), nil},
		{"pod gone, still staged", world(network, staged(network, true)), []corev1.UniqueVolumeName{u}},
		{"pod gone, nothing on disk", world(network), nil},
		{"claim missing: not wanted", world(network, withPods(pod(podUID, "missing"))), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Decide(tc.w).VolumesInUse; !slices.Equal(got, tc.want) {
				t.Errorf("VolumesInUse = %v, want %v", got, tc.want)
			}
		})
	}
}

// Teardown: unpublish first; once nothing of the pod is published its
// deletion is finished (the kubelet's podVolumesExist), in the same plan as
// the unstage and the removal of its directory, and whatever the node still
// reports in use.
func TestTeardownUnpublishesThenFinishesWithTheUnstage(t *testing.T) {
	gone := deleting(pod(podUID, "data"))
	for _, tc := range []struct {
		name                                  string
		w                                     World
		unpublish, unstage, removeDir, finish int
	}{
		{"published: unpublish only", world(local, withPods(gone), staged(local, true), published(podUID, local, true)), 1, 0, 0, 0},
		{"half-published: unpublish only", world(local, withPods(gone), staged(local, true), published(podUID, local, false)), 1, 0, 0, 0},
		{"unpublished: finish, unstage and remove the dir", world(local, withPods(gone), staged(local, true), func(w *World) { w.PodDirs = []types.UID{podUID} }), 0, 1, 1, 1},
		{"another pod uses it: keep the staging", world(local, withPods(gone, pod(otherUID, "data")), staged(local, true), published(otherUID, local, true)), 0, 0, 0, 1},
		{"all torn down: finish", world(local, withPods(gone)), 0, 0, 0, 1},
		{"half-done publication of a vanished pod is unpublished", world(local, staged(local, true), published(podUID, local, false)), 1, 0, 0, 0},
		{"still reported in use: finish all the same", world(network, withPods(gone), func(w *World) {
			w.Reported = []corev1.UniqueVolumeName{attachment.UniqueVolumeName(network, "h-1")}
		}), 0, 0, 0, 1},
		{"no Node object: nothing finished", world(local, withPods(gone), func(w *World) { w.Registered = false }), 0, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := tc.w
			w.Registered = w.Registered || !strings.HasPrefix(tc.name, "no Node")
			p := Decide(w)
			if len(p.Unpublish) != tc.unpublish || len(p.Unstage) != tc.unstage || len(p.RemovePodDirs) != tc.removeDir || len(p.Finish) != tc.finish {
				t.Errorf("unpublish %d unstage %d removeDirs %d finish %d, want %d %d %d %d",
					len(p.Unpublish), len(p.Unstage), len(p.RemovePodDirs), len(p.Finish), tc.unpublish, tc.unstage, tc.removeDir, tc.finish)
			}
		})
	}
}

func TestLayoutIsTheKubelets(t *testing.T) {
	l := Layout{Root: NodeRoot("/d", "node-1")}
	if got := l.StagingPath("drv", "h"); !strings.HasPrefix(got, "/d/nodes/node-1/plugins/kubernetes.io/csi/drv/aaa9402664f1a41f40ebbc52c9993eb66aeb366602958fdfaa283b71e64db123/globalmount") {
		t.Errorf("staging path %s", got)
	}
	if got := l.TargetPath("u", "pv-1"); got != "/d/nodes/node-1/pods/u/volumes/kubernetes.io~csi/pv-1/mount" {
		t.Errorf("target path %s", got)
	}
}
