package mounting

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// The kubelet's mount checks, in its order: the attachment as the node
// reports it, then node affinity and ReadWriteOncePod, then the
// VolumeAttachment, then the driver; the lifecycle mode is checked at
// publish, after staging.
func TestMountChecksComeInTheKubeletsOrder(t *testing.T) {
	notServed := func(w *World) { delete(w.Drivers, network) }
	elsewhere := func(w *World) {
		w.Volumes["pv-1"].Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"b"}}}}}}}
		w.Registered, w.NodeLabels = true, map[string]string{"zone": "a"}
	}
	rwop := func(w *World) {
		w.Volumes["pv-1"].Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}
	}
	ephemeralOnly := func(w *World) {
		w.CSIDrivers[local].Spec.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecycleEphemeral}
	}
	unattached := func(w *World) {
		attachedAndReported(w)
		for _, va := range w.Attachments {
			va.Status.Attached = false
		}
	}
	for _, tc := range []struct {
		name    string
		w       World
		action  Action
		reason  Reason
		refused bool
	}{
		{"driver missing, not reported in use yet", world(network, withPods(pod(podUID, "data")), notServed), Wait, NotReportedInUse, false},
		{"driver missing once attached", world(network, withPods(pod(podUID, "data")), notServed, attachedAndReported), Wait, DriverNotServed, false},
		{"affinity before the attachment", world(network, withPods(pod(podUID, "data")), elsewhere, unattached), Wait, NodeAffinityMismatch, false},
		{"affinity matches", world(local, withPods(pod(podUID, "data")), elsewhere, func(w *World) { w.NodeLabels["zone"] = "b" }), Stage, "", false},
		{"affinity of an unregistered node is not checked", world(local, withPods(pod(podUID, "data")), elsewhere, func(w *World) { w.Registered = false }), Stage, "", false},
		{"ReadWriteOncePod published to another pod", world(local, withPods(pod(podUID, "data")), rwop, staged(local, true), published(otherUID, local, true)), Wait, InUseByAnotherPod, false},
		{"ReadWriteOncePod alone", world(local, withPods(pod(podUID, "data")), rwop, staged(local, true)), Publish, "", false},
		{"ReadWriteOnce shared on the node", world(local, withPods(pod(podUID, "data")), staged(local, true), published(otherUID, local, true)), Publish, "", false},
		{"lifecycle mode: staged, publish refused", world(local, withPods(pod(podUID, "data")), ephemeralOnly), Stage, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Decide(tc.w).Pods[0].Steps[0]
			if s.Action != tc.action || s.Reason != tc.reason || (s.Volume.PublishRefused != "") != tc.refused {
				t.Errorf("step %v %q (publish refused %q), want %v %q (refused %v)", s.Action, s.Reason, s.Volume.PublishRefused, tc.action, tc.reason, tc.refused)
			}
		})
	}
	w := world(local, withPods(pod(podUID, "data")), ephemeralOnly)
	want := `kubernetes.io/csi: mounter.SetupAt failed to check volume lifecycle mode: volume mode "Persistent" not supported by driver local.csi (only supports ["Ephemeral"])`
	if got := Decide(w).Pods[0].Steps[0].Volume.PublishRefused; got != want {
		t.Errorf("publish refused %q, want %q", got, want)
	}
	if !InUseByAnotherPod.Retries() || NotAttached.Retries() {
		t.Error("only the ReadWriteOncePod refusal retries with backoff")
	}
}

// NodePublishVolume is read-only when the pod's claim source says so; the
// PV's csi.readOnly is for ControllerPublishVolume only, as in the kubelet.
func TestPublishReadOnlyIsThePodsClaimSource(t *testing.T) {
	l := Layout{Root: "/root"}
	for _, tc := range []struct {
		name        string
		claim, csi  bool
		wantPublish bool
	}{{"neither", false, false, false}, {"pod's claim source", true, false, true}, {"PV only", false, true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			p := pod(podUID, "data")
			p.Spec.Volumes[2].PersistentVolumeClaim.ReadOnly = tc.claim
			w := world(local, withPods(p), func(w *World) { w.Volumes["pv-1"].Spec.CSI.ReadOnly = tc.csi })
			v := Decide(w).Pods[0].Steps[0].Volume
			if got := l.PublishRequest(w, p, v).Readonly; got != tc.wantPublish {
				t.Errorf("readonly %v, want %v", got, tc.wantPublish)
			}
		})
	}
}

// A CSI volume of the pod's own spec: refused with the kubelet's SetUp text
// when the driver's CSIDriver does not list Ephemeral (or is missing); the
// pod does not run (inline_test.go: a driver that lists it).
func TestInlineVolumeIsRefusedAsTheKubeletRefusesIt(t *testing.T) {
	inline := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "scratch",
			VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: local}}})
		return p
	}
	persistentOnly := func(w *World) {
		w.CSIDrivers[local].Spec.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}
	}
	for _, tc := range []struct {
		name   string
		mod    func(*World)
		reason Reason
		text   string
	}{
		{"persistent only", persistentOnly, EphemeralNotSupported,
			`MountVolume.SetUp failed for volume "scratch" : kubernetes.io/csi: mounter.SetupAt failed to check volume lifecycle mode: volume mode "Ephemeral" not supported by driver local.csi (only supports ["Persistent"])`},
		{"no CSIDriver", func(w *World) { delete(w.CSIDrivers, local) }, EphemeralNotSupported,
			`MountVolume.SetUp failed for volume "scratch" : kubernetes.io/csi: mounter.SetupAt failed to check volume lifecycle mode: volume mode "Ephemeral" not supported by driver local.csi (no CSIDriver object)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pp := Decide(world(local, withPods(inline(pod(podUID))), tc.mod)).Pods[0]
			s := pp.Steps[0]
			if len(pp.Steps) != 1 || s.Action != Wait || s.Reason != tc.reason || s.WaitMessage() != tc.text {
				t.Errorf("steps %+v: want one wait %s with %q", pp.Steps, tc.reason, tc.text)
			}
			if !pp.Waits() || pp.MarkRunning() || pp.FailureMessage() != "" {
				t.Errorf("the pod must wait, not run, with no pod-level event")
			}
		})
	}
}
