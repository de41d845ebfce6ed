package provisioner

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/hostpath/hostpathtest"
	"github.com/volplane/volplane/internal/provisioning"
)

// provisionAndRelease waits until the world's claim has its PV and backend
// volume, then marks the PV Released as the binder would once the claim is
// gone, and returns it.
func (w *world) provisionAndRelease() *v1.PersistentVolume {
	w.t.Helper()
	w.eventually("provisioned", func() string {
		if w.pv("pvc-uid-1") == nil || len(w.backend()) != 1 {
			return fmt.Sprintf("PV %v, backend %v", w.pv("pvc-uid-1") != nil, w.backend())
		}
		return ""
	})
	pv := w.pv("pvc-uid-1")
	pv.Status.Phase = v1.VolumeReleased
	out, err := w.client.CoreV1().PersistentVolumes().UpdateStatus(w.ctx, pv, metav1.UpdateOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	return out
}

// The informer still says Delete, but an administrator switched the PV to
// Retain a moment ago: the live PV is read before DeleteVolume, so the data
// stays and so does the PV.
func TestReleasedVolumeSwitchedToRetainKeepsItsData(t *testing.T) {
	w := newWorld(t, claim(), class())
	var liveReads atomic.Int32
	var retainLive atomic.Bool
	w.client.PrependReactor("get", "persistentvolumes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if !retainLive.Load() {
			return false, nil, nil
		}
		obj, err := w.client.Tracker().Get(a.GetResource(), "", a.(k8stesting.GetAction).GetName())
		if err != nil {
			return true, nil, err
		}
		pv := obj.(*v1.PersistentVolume).DeepCopy()
		pv.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimRetain
		liveReads.Add(1)
		return true, pv, nil
	})
	w.start()
	w.eventually("provisioned", func() string {
		if w.pv("pvc-uid-1") == nil {
			return "no PV"
		}
		return ""
	})
	retainLive.Store(true)
	w.provisionAndRelease()
	w.eventually("several delete attempts (or a deletion)", func() string {
		if n := liveReads.Load(); n < 4 && len(w.backend()) == 1 {
			return fmt.Sprintf("%d live reads", n)
		}
		return ""
	})
	pv := w.pv("pvc-uid-1")
	switch b := w.backend(); {
	case len(b) != 1:
		t.Errorf("backend %v: the volume of a PV switched to Retain was deleted", b)
	case pv == nil || pv.DeletionTimestamp != nil:
		t.Errorf("PV %v: deleted though switched to Retain", pv)
	}
}

// A Released PV whose volume lives on a node whose driver is not served is
// not deleted through another node's driver (which would answer NotFound,
// so the PV would go and the data stay): the user is told which node, and
// the PV waits.
func TestReleasedVolumeOfAnUnservedNodeWaitsForItsDriver(t *testing.T) {
	onC := provisioning.BuildVolume(claim(), class(), testDriver, &csipb.Volume{VolumeId: "vol-on-c",
		AccessibleTopology: []*csipb.Topology{{Segments: map[string]string{topoKey: "c"}}}})
	onC.Status.Phase = v1.VolumeReleased
	w := newWorld(t, onC)
	w.start()
	w.eventually("VolumeFailedDelete naming the node", func() string {
		if !w.sawEvent("Warning VolumeFailedDelete cannot delete volume vol-on-c yet: ") {
			return fmt.Sprintf("events %v", w.events)
		}
		return ""
	})
	for _, e := range w.events {
		if strings.Contains(e, "VolumeFailedDelete") && !strings.Contains(e, topoKey+" in [c]") {
			t.Errorf("event %q does not name the volume's node", e)
		}
	}
	if pv := w.pv(onC.Name); pv == nil || pv.DeletionTimestamp != nil {
		t.Errorf("PV %v deleted while its volume may still exist on node c", pv)
	}
}

// For a driver with an attach step, a Released PV that a VolumeAttachment
// still names waits (VolumeFailedDelete, as the external-provisioner says
// it); once the attachment goes, the volume and the PV are deleted.
func TestReleasedVolumeWaitsUntilDetached(t *testing.T) {
	w := newWorldOf(t, hostpathtest.ServeAttachRequired, claim(), class())
	w.start()
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va-1"}, Spec: storagev1.VolumeAttachmentSpec{
		Attacher: testDriver, NodeName: "a", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pvc-uid-1")}}}
	if _, err := w.client.StorageV1().VolumeAttachments().Create(w.ctx, va, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.provisionAndRelease()
	w.eventually("VolumeFailedDelete", func() string {
		if !w.sawEvent("Warning VolumeFailedDelete persistentvolume pvc-uid-1 is still attached to node a") {
			return fmt.Sprintf("events %v", w.events)
		}
		return ""
	})
	if b := w.backend(); len(b) != 1 || w.pv("pvc-uid-1") == nil {
		t.Fatalf("backend %v, PV %v: deleted while attached", b, w.pv("pvc-uid-1"))
	}
	if err := w.client.StorageV1().VolumeAttachments().Delete(w.ctx, "va-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	w.eventually("volume and PV deleted once detached", func() string {
		if b := w.backend(); len(b) != 0 || w.pv("pvc-uid-1") != nil {
			return fmt.Sprintf("backend %v, PV %v", b, w.pv("pvc-uid-1") != nil)
		}
		return ""
	})
}

// Our finalizer goes before the PV is deleted: pv-protection removes its
// own as soon as it sees the deletion, on the version it saw, and a write
// of ours after the deletion refused it (a conflict per PV). When the
// delete fails after the finalizer went (as a crash between the two), the
// next sync finishes: the PV, Released, under Delete and not deleted, is
// decided again and deleted.
func TestOurFinalizerGoesBeforeThePVIsDeleted(t *testing.T) {
	w := newWorld(t, claim(), class())
	var (
		mu     sync.Mutex
		writes []string
		failed bool
	)
	w.client.PrependReactor("*", "persistentvolumes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if v := a.GetVerb(); v == "patch" || v == "delete" {
			mu.Lock()
			defer mu.Unlock()
			writes = append(writes, v)
			if v == "delete" && !failed {
				failed = true
				return true, nil, errors.New("injected: the delete never reached the API server")
			}
		}
		return false, nil, nil
	})
	w.start()
	w.provisionAndRelease()
	w.eventually("backend volume and PV deleted", func() string {
		if b := w.backend(); len(b) != 0 {
			return fmt.Sprintf("backend %v", b)
		}
		if w.pv("pvc-uid-1") != nil {
			return "PV still there"
		}
		return ""
	})
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"patch", "delete", "delete"}; !slices.Equal(writes, want) {
		t.Errorf("PV writes %v, want %v (finalizer, the failed delete, the delete)", writes, want)
	}
}
