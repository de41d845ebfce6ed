package mounting

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/fuzzing"
)

var (
	fuzzDrivers = []string{local, network}
	fuzzHandles = []string{"h-1", "h-2"} // two PVs may name one volume
	fuzzPodUIDs = []types.UID{"pod-p", "pod-q", "pod-gone"}
)

// fuzzPod is a pod on the node, of any tenant, whose volumes name claims by
// claimName or are generic ephemeral volumes, and whose containers mount
// them as files or devices.
func fuzzPod(in *fuzzing.Input) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: fuzzing.Pick(in, fuzzing.Namespaces...),
		Name: in.Word("p", "q"), UID: fuzzing.Pick(in, fuzzPodUIDs[:2]...)}, Spec: corev1.PodSpec{NodeName: node}}
	c := corev1.Container{Name: "c"}
	for n := in.Intn(4); n > 0; n-- {
		vol := corev1.Volume{Name: in.Word("cache", "data")}
		if in.Bool() {
			vol.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: in.Word("data", "b", "p-cache"), ReadOnly: in.Bool()}
		} else {
			vol.Ephemeral = &corev1.EphemeralVolumeSource{}
		}
		if slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == vol.Name }) {
			continue // the API refuses a pod with two volumes of one name
		}
		p.Spec.Volumes = append(p.Spec.Volumes, vol)
		switch in.Intn(3) {
		case 1:
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: vol.Name})
		case 2:
			c.VolumeDevices = append(c.VolumeDevices, corev1.VolumeDevice{Name: vol.Name})
		}
	}
	p.Spec.Containers = []corev1.Container{c}
	if in.Intn(4) == 0 {
		p.DeletionTimestamp = &metav1.Time{}
	}
	p.Status.Phase = fuzzing.Pick(in, corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed)
	return p
}

// fuzzWorld decodes a node's world: pods first, then the claims their
// volumes name, mostly in the pod's namespace, Bound and (for ephemeral
// volumes) controlled by the pod, but any of that may be forged; PVs mostly
// bound back to one of those claims; drivers, attachments and what is found
// on disk.
func fuzzWorld(in *fuzzing.Input) World {
	names := []string{"pv-0", "pv-1", "pv-2"}
	w := World{Node: node, Claims: map[string]*corev1.PersistentVolumeClaim{}, Volumes: map[string]*corev1.PersistentVolume{},
		CSIDrivers: map[string]*storagev1.CSIDriver{}, Drivers: map[string]Driver{}, Attached: map[corev1.UniqueVolumeName]bool{},
		Attachments: map[string]*storagev1.VolumeAttachment{}}
	for n := in.Intn(4); n > 0; n-- {
		w.Pods = append(w.Pods, fuzzPod(in))
	}
	var claims []*corev1.PersistentVolumeClaim
	for _, pod := range w.Pods {
		for _, key := range claimsNamed(pod) {
			if in.Intn(4) == 0 {
				continue
			}
			c := fuzzClaim(in, pod, key, names, len(claims))
			claims = append(claims, c)
			w.Claims[c.Namespace+"/"+c.Name] = c
		}
	}
	for _, name := range names {
		if in.Intn(5) == 0 {
			continue
		}
		pv := in.Volume(name)
		pv.Spec.CSI = &corev1.CSIPersistentVolumeSource{Driver: in.Word(fuzzDrivers...), VolumeHandle: fuzzing.Pick(in, fuzzHandles...)}
		pv.Spec.ClaimRef = fuzzClaimRef(in, name, claims)
		w.Volumes[name] = pv
	}
	fuzzDriversAndAttachments(in, &w)
	fuzzDisk(in, &w, names)
	return w
}

// fuzzClaimRef mostly points the PV back at the claim that names it, else
// at any claim (another tenant's, too), or at none.
func fuzzClaimRef(in *fuzzing.Input, name string, claims []*corev1.PersistentVolumeClaim) *corev1.ObjectReference {
	if len(claims) == 0 || in.Intn(5) == 0 {
		return nil
	}
	c := fuzzing.Pick(in, claims...)
	if i := slices.IndexFunc(claims, func(c *corev1.PersistentVolumeClaim) bool { return c.Spec.VolumeName == name }); i >= 0 && in.Intn(4) > 0 {
		c = claims[i]
	}
	return &corev1.ObjectReference{Namespace: c.Namespace, Name: c.Name, UID: c.UID}
}

// claimsNamed are the namespace and name of each claim the pod's volumes
// name, in the pod's namespace (a volume cannot name another).
func claimsNamed(pod *corev1.Pod) [][2]string {
	var out [][2]string
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			out = append(out, [2]string{pod.Namespace, v.PersistentVolumeClaim.ClaimName})
		case v.Ephemeral != nil:
			out = append(out, [2]string{pod.Namespace, pod.Name + "-" + v.Name})
		}
	}
	return out
}

// fuzzClaim is the claim at key (or, forged, in another namespace), bound
// to one of the PVs mostly, maybe controlled by the pod.
func fuzzClaim(in *fuzzing.Input, pod *corev1.Pod, key [2]string, names []string, i int) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: key[0], Name: key[1], UID: types.UID(fmt.Sprintf("claim-%d", i))}}
	if in.Intn(8) == 0 {
		c.Namespace = fuzzing.Pick(in, fuzzing.Namespaces...)
	}
	c.Spec.VolumeName = in.Word(names...)
	c.Spec.AccessModes = in.AccessModes()
	c.Status.Phase = corev1.ClaimBound
	if in.Intn(4) == 0 {
		c.Status.Phase = fuzzing.Pick(in, corev1.ClaimPending, corev1.ClaimLost)
	}
	if in.Intn(3) > 0 {
		uid := pod.UID
		if in.Intn(4) == 0 {
			uid = fuzzing.Pick(in, fuzzPodUIDs...)
		}
		c.OwnerReferences = []metav1.OwnerReference{{Kind: "Pod", Name: pod.Name, UID: uid, Controller: ptr.To(in.Intn(4) > 0)}}
	}
	if in.Intn(6) == 0 {
		c.DeletionTimestamp = &metav1.Time{}
	}
	if in.Bool() {
		c.Finalizers = []string{pvcProtectionFinalizer}
	}
	if q, ok := in.Quantity(); ok {
		c.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: q}
	}
	if in.Bool() {
		c.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{
			corev1.ResourceStorage: fuzzing.Pick(in, corev1.PersistentVolumeClaimNodeResizePending, corev1.PersistentVolumeClaimNodeResizeInProgress,
				corev1.PersistentVolumeClaimControllerResizeInProgress, corev1.PersistentVolumeClaimNodeResizeInfeasible)}
	}
	return c
}

func fuzzDriversAndAttachments(in *fuzzing.Input, w *World) {
	for _, d := range fuzzDrivers {
		if in.Intn(4) > 0 {
			w.CSIDrivers[d] = &storagev1.CSIDriver{Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(d == network)}}
		}
		if in.Intn(4) > 0 {
			w.Drivers[d] = Driver{Stage: true, Expand: in.Bool()}
		}
		for _, h := range fuzzHandles {
			u := attachment.UniqueVolumeName(d, h)
			if in.Bool() {
				w.Reported = append(w.Reported, u)
			}
			w.Attached[u] = in.Bool()
			if in.Bool() {
				name := attachment.Name(h, d, node)
				w.Attachments[name] = &storagev1.VolumeAttachment{Status: storagev1.VolumeAttachmentStatus{Attached: in.Bool()}}
			}
		}
	}
}

func fuzzDisk(in *fuzzing.Input, w *World, names []string) {
	for n := in.Intn(3); n > 0; n-- {
		s := Staged{Driver: in.Word(fuzzDrivers...), Handle: fuzzing.Pick(in, fuzzHandles...), PV: fuzzing.Pick(in, names...), Done: in.Bool()}
		s.Size, _ = in.Quantity()
		s.RefusedInUse, _ = in.Quantity()
		w.Staged = append(w.Staged, s)
	}
	for n := in.Intn(3); n > 0; n-- {
		w.Published = append(w.Published, Published{PodUID: fuzzing.Pick(in, fuzzPodUIDs...), Driver: in.Word(fuzzDrivers...),
			Handle: fuzzing.Pick(in, fuzzHandles...), PV: fuzzing.Pick(in, names...), Done: in.Bool()})
	}
	for n := in.Intn(3); n > 0; n-- {
		w.PodDirs = append(w.PodDirs, fuzzing.Pick(in, fuzzPodUIDs...))
	}
}

// checkStep: a volume is only ever resolved through a claim of the pod's
// own namespace that is bound to it (PV claimRef UID = claim UID), an
// ephemeral volume only through the claim the pod controls, and only
// mounted once the claim is Bound and attached where it must be.
func checkStep(w World, pod *corev1.Pod, s Step) error {
	i := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == s.Name })
	if i < 0 {
		return fmt.Errorf("step for volume %q the pod does not have", s.Name)
	}
	v := s.Volume
	if v == nil {
		if s.Action != Wait {
			return fmt.Errorf("%s without a volume", s.Action)
		}
		return nil
	}
	switch {
	case v.Claim.Namespace != pod.Namespace:
		return fmt.Errorf("claim %s/%s of another namespace", v.Claim.Namespace, v.Claim.Name)
	case v.PV.Spec.ClaimRef == nil || v.PV.Spec.ClaimRef.UID != v.Claim.UID || v.Claim.Spec.VolumeName != v.PV.Name:
		return fmt.Errorf("PV %s not bound to claim %s", v.PV.Name, v.Claim.Name)
	case pod.Spec.Volumes[i].Ephemeral != nil && !metav1.IsControlledBy(v.Claim, pod):
		return fmt.Errorf("ephemeral claim %s not the pod's", v.Claim.Name)
	case s.Action == Wait:
		return nil
	case v.Claim.Status.Phase != corev1.ClaimBound:
		return fmt.Errorf("%s of a claim in phase %q", s.Action, v.Claim.Status.Phase)
	}
	if v.Attachable && (s.Action == Stage || s.Action == Publish) {
		va := w.Attachments[v.Attachment]
		if !slices.Contains(w.Reported, v.Unique) || !w.Attached[v.Unique] || va == nil || !va.Status.Attached {
			return fmt.Errorf("%s of %s before it is reported in use and attached", s.Action, v.Unique)
		}
	}
	status := v.Claim.Status.AllocatedResourceStatuses[corev1.ResourceStorage]
	if e := s.Expand; e != nil && !e.Size.Equal(newSize(v.Claim, status, v.PV.Spec.Capacity[corev1.ResourceStorage])) {
		return fmt.Errorf("expands to %s, not the claim's allocated size or the PV's capacity", e.Size.String())
	}
	return nil
}

// checkTeardown: only the publications of pods that are not live are
// unpublished, no staging a live pod wants or a publication still uses is
// unstaged, and every attachable volume still staged or published stays
// in volumesInUse (no detach under a mount).
func checkTeardown(w World, plan Plan) error {
	live := map[types.UID]bool{}
	wanted := map[volumeKey]bool{}
	for _, pp := range plan.Pods {
		live[pp.Pod.UID] = true
		for _, s := range pp.Steps {
			if s.Volume != nil {
				wanted[volumeKey{s.Volume.Driver, s.Volume.Handle}] = true
			}
		}
	}
	for _, p := range plan.Unpublish {
		if live[p.PodUID] {
			return fmt.Errorf("unpublishes %s from live pod %s", p.PV, p.PodUID)
		}
	}
	for _, s := range plan.Unstage {
		if wanted[s.key()] || slices.ContainsFunc(w.Published, func(p Published) bool { return p.key() == s.key() }) {
			return fmt.Errorf("unstages %s %s, still wanted or published", s.Driver, s.Handle)
		}
	}
	if !slices.IsSorted(plan.VolumesInUse) || len(slices.Compact(slices.Clone(plan.VolumesInUse))) != len(plan.VolumesInUse) {
		return fmt.Errorf("volumesInUse %v not sorted and unique", plan.VolumesInUse)
	}
	for _, k := range slices.Concat(stagedKeys(w.Staged), publishedKeys(w.Published)) {
		if w.attachable(k.driver) && !slices.Contains(plan.VolumesInUse, attachment.UniqueVolumeName(k.driver, k.handle)) {
			return fmt.Errorf("%s %s still on disk but not in use", k.driver, k.handle)
		}
	}
	for _, pod := range plan.Finish {
		if pod.DeletionTimestamp == nil {
			return fmt.Errorf("finishes pod %s that is not being deleted", pod.Name)
		}
	}
	return nil
}

func stagedKeys(ss []Staged) []volumeKey {
	var out []volumeKey
	for _, s := range ss {
		out = append(out, s.key())
	}
	return out
}

func publishedKeys(ps []Published) []volumeKey {
	var out []volumeKey
	for _, p := range ps {
		out = append(out, p.key())
	}
	return out
}

// FuzzDecide: the node agent's plan, from any pods, claims and disk state,
// mounts only what the pod's own bound claims give it and never tears down
// under a live pod (checkStep, checkTeardown); each pod's plan is the one
// DecidePod makes from the pod's own records (World.ForPod).
func FuzzDecide(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x01\x01\x00\x01\x01\x01\x01\x01\x00\x00\x00\x00\x00\x00\x01\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x00\x00\x00\x01\x00\x01\x00\x00\x01\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		w := fuzzWorld(fuzzing.New(data))
		plan := Decide(w)
		for _, pp := range plan.Pods {
			if !isLive(pp.Pod) {
				t.Fatalf("plan for pod %s that is not live", pp.Pod.Name)
			}
			_ = pp.FailureMessage()
			if own, _, _ := DecidePod(w.ForPod(pp.Pod), pp.Pod); !reflect.DeepEqual(own, pp) {
				t.Fatalf("pod %s: DecidePod on its own records %+v, Decide %+v", pp.Pod.Name, own, pp)
			}
			for _, s := range pp.Steps {
				if err := checkStep(w, pp.Pod, s); err != nil {
					t.Fatalf("pod %s/%s volume %s: %v", pp.Pod.Namespace, pp.Pod.Name, s.Name, err)
				}
			}
		}
		if err := checkTeardown(w, plan); err != nil {
			t.Fatal(err)
		}
	})
}
