package mounting

import (
	"maps"
	"slices"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/utils/ptr"
)

// inlineHandle is the kubelet's handle of pod uid-1's volume "scratch":
// "csi-" + hex(sha256("uid-1" + "scratch")), computed outside Go.
const inlineHandle = "csi-a919eb5a57ed1bf8c61a802fc713b36e9bfa4fbf009dfb5f4206d253a3a3dc32"

// withInline adds the inline volume "scratch" of driver to the pod.
func withInline(p *corev1.Pod, driver string, mod func(*corev1.CSIVolumeSource)) *corev1.Pod {
	src := &corev1.CSIVolumeSource{Driver: driver}
	if mod != nil {
		mod(src)
	}
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{CSI: src}})
	return p
}

// ephemeralDriver makes driver's CSIDriver take inline volumes, with
// podInfoOnMount as the bundled driver's.
func ephemeralDriver(driver string) func(*World) {
	return func(w *World) {
		spec := &w.CSIDrivers[driver].Spec
		spec.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent, storagev1.VolumeLifecycleEphemeral}
		spec.PodInfoOnMount = ptr.To(true)
	}
}

// The kubelet's publish of an inline volume, key by key: its handle, no
// stage, the pod's target path named by the volume, the source's fsType and
// readOnly, the author's attributes under the kubelet's keys (a forged pod
// name is overridden), the secret of the pod's own namespace, a record with
// the Ephemeral mode.
func TestInlineVolumeIsPublishedAsTheKubeletPublishesIt(t *testing.T) {
	p := withInline(pod(podUID), local, func(s *corev1.CSIVolumeSource) {
		s.FSType, s.ReadOnly = ptr.To("ext4"), ptr.To(true)
		s.VolumeAttributes = map[string]string{"size": "1Mi", PodNameKey: "someone-else"}
		s.NodePublishSecretRef = &corev1.LocalObjectReference{Name: "creds"}
	})
	p.Spec.ServiceAccountName = "sa"
	w := world(local, withPods(p), ephemeralDriver(local))
	plan := Decide(w)
	s := plan.Pods[0].Steps[0]
	if s.Action != Publish || !slices.Equal(s.Ops(), []Op{OpPublish}) || s.Expand != nil {
		t.Fatalf("step %+v, ops %v: want a publish alone", s, s.Ops())
	}
	v := s.Volume
	if v.Handle != inlineHandle || v.PV != nil || v.Claim != nil || v.Attachable {
		t.Fatalf("volume %+v: want handle %s, no PV, claim nor attach", v, inlineHandle)
	}
	req := Layout{Root: "/root"}.PublishRequest(w, p, v)
	want := &csipb.NodePublishVolumeRequest{VolumeId: inlineHandle, TargetPath: "/root/pods/uid-1/volumes/kubernetes.io~csi/scratch/mount",
		Readonly: true, VolumeCapability: &csipb.VolumeCapability{
			AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
			AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{FsType: "ext4"}}},
		VolumeContext: map[string]string{"size": "1Mi", PodNameKey: p.Name, PodNamespaceKey: "ns", PodUIDKey: string(podUID),
			ServiceAccountNameKey: "sa", EphemeralKey: "true"}}
	if req.String() != want.String() {
		t.Errorf("publish request\n%v\nwant\n%v", req, want)
	}
	if got := p.Spec.Volumes[2].CSI.VolumeAttributes[PodNameKey]; got != "someone-else" {
		t.Errorf("the pod's own attributes were changed: %q", got)
	}
	if ref := v.PublishSecretRef(p); ref == nil || *ref != (corev1.SecretReference{Name: "creds", Namespace: "ns"}) {
		t.Errorf("secret ref %v: want creds of the pod's namespace ns", ref)
	}
	rec := PublicationRecord(node, v)
	if rec.PV != "scratch" || rec.Handle != inlineHandle || rec.Mode != string(storagev1.VolumeLifecycleEphemeral) {
		t.Errorf("record %+v: want named scratch, mode Ephemeral", rec)
	}
	if len(plan.VolumesInUse) != 0 {
		t.Errorf("volumesInUse %v: an inline volume is never reported", plan.VolumesInUse)
	}
}

// Without podInfoOnMount the author's attributes go alone (the ephemeral
// key is a podInfoOnMount key); a node with SINGLE_NODE_MULTI_WRITER gets
// the kubelet's ReadWriteOnce mapped; the pod's fsGroup follows the
// kubelet's rules for inline volumes.
func TestInlineVolumeContextCapabilityAndOwnership(t *testing.T) {
	p := withInline(pod(podUID), local, func(s *corev1.CSIVolumeSource) { s.VolumeAttributes = map[string]string{"size": "1Mi"} })
	p.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: ptr.To[int64](2000)}
	w := world(local, withPods(p), ephemeralDriver(local), func(w *World) {
		w.CSIDrivers[local].Spec.PodInfoOnMount = nil
		w.Drivers[local] = Driver{SingleNodeMultiWriter: true}
	})
	v := Decide(w).Pods[0].Steps[0].Volume
	req := Layout{Root: "/root"}.PublishRequest(w, p, v)
	if !maps.Equal(req.VolumeContext, map[string]string{"size": "1Mi"}) || req.StagingTargetPath != "" || req.PublishContext != nil {
		t.Errorf("request %v: want the author's attributes alone, no staging path, no publish context", req)
	}
	if m := req.VolumeCapability.GetAccessMode().GetMode(); m != csipb.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER {
		t.Errorf("access mode %s, want ReadWriteOnce mapped to SINGLE_NODE_MULTI_WRITER", m)
	}
	if o := w.OwnershipFor(p, v); o != nil {
		t.Errorf("ownership %+v of an inline volume without fsType under ReadWriteOnceWithFSType: want none", o)
	}
	p.Spec.Volumes[2].CSI.FSType = ptr.To("ext4")
	if o := w.OwnershipFor(p, v); o == nil || o.GID != 2000 {
		t.Errorf("ownership %+v of an inline ext4 volume: want fsGroup 2000", o)
	}
}

// Published, the pod is ready; its publication is torn down with the pod,
// with no unstage, and never counts in volumesInUse, even for a driver
// that attaches its persistent volumes.
func TestInlineVolumeDoneThenUnpublishedWithThePod(t *testing.T) {
	rec := Published{PodUID: podUID, Driver: network, Handle: inlineHandle, PV: "scratch", Done: true, Inline: true}
	live := withInline(pod(podUID), network, nil)
	w := world(network, withPods(live), ephemeralDriver(network), func(w *World) { w.Published = []Published{rec} })
	plan := Decide(w)
	if s := plan.Pods[0].Steps[0]; s.Action != Done || !plan.Pods[0].Ready() {
		t.Fatalf("step %+v: want done, the pod ready", s)
	}
	if len(plan.VolumesInUse) != 0 || len(plan.Unpublish) != 0 {
		t.Errorf("in use %v, unpublish %v: want neither", plan.VolumesInUse, plan.Unpublish)
	}
	w.Pods = []*corev1.Pod{deleting(withInline(pod(podUID), network, nil))}
	plan = Decide(w)
	if !slices.Equal(plan.Unpublish, []Published{rec}) || len(plan.Unstage) != 0 || len(plan.VolumesInUse) != 0 {
		t.Errorf("plan %+v: want the inline publication unpublished, nothing unstaged or in use", plan)
	}
	if (PublicationRecord(node, &Volume{Inline: &corev1.CSIVolumeSource{}, Name: "scratch", Driver: network, Handle: inlineHandle})).Published(podUID, false) != (Published{PodUID: podUID, Driver: network, Handle: inlineHandle, PV: "scratch", Inline: true}) {
		t.Error("a record read back is not the inline publication it records")
	}
}

// A driver not served here: the pod waits with the kubelet's SetUp text.
func TestInlineVolumeOfADriverNotServedWaits(t *testing.T) {
	p := withInline(pod(podUID), local, nil)
	s := Decide(world(local, withPods(p), ephemeralDriver(local), func(w *World) { delete(w.Drivers, local) })).Pods[0].Steps[0]
	want := `MountVolume.SetUp failed for volume "scratch" : kubernetes.io/csi: mounter.SetUpAt failed to get CSI client: driver name local.csi not found in the list of registered CSI drivers`
	if s.Action != Wait || s.Reason != DriverNotServed || s.WaitMessage() != want {
		t.Errorf("step %+v, message %q: want a DriverNotServed wait with %q", s, s.WaitMessage(), want)
	}
}

// The handle is the pod's and the volume's: two pods with the same inline
// volume never share one, and nothing the author writes changes it.
func TestInlineHandleIsThePodsOwn(t *testing.T) {
	a := withInline(pod(podUID), local, nil)
	b := withInline(pod(otherUID), local, func(s *corev1.CSIVolumeSource) {
		s.VolumeAttributes = map[string]string{"volumeHandle": inlineHandle, "volumeID": "h-1"}
	})
	plan := Decide(world(local, withPods(a, b), ephemeralDriver(local)))
	ha, hb := plan.Pods[0].Steps[0].Volume.Handle, plan.Pods[1].Steps[0].Volume.Handle
	if ha != inlineHandle || hb == ha || hb == "h-1" {
		t.Errorf("handles %s and %s: want the kubelet's, one per pod", ha, hb)
	}
}

// Tokens a CSIDriver asks for are sent to inline volumes too, as the
// kubelet sends them.
func TestInlineVolumeGetsTheTokens(t *testing.T) {
	p := withInline(pod(podUID), local, nil)
	w := world(local, withPods(p), ephemeralDriver(local), func(w *World) {
		w.CSIDrivers[local].Spec.TokenRequests = []storagev1.TokenRequest{{Audience: "vault"}}
	})
	v := Decide(w).Pods[0].Steps[0].Volume
	if tk := w.TokensFor(v, p); tk == nil || len(tk.Requests) != 1 || tk.Requests[0].Spec.BoundObjectRef.UID != podUID {
		t.Errorf("tokens %+v: want one bound to the pod", tk)
	}
}
