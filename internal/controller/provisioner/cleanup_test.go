package provisioner

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/volplane/volplane/internal/provisioning"
)

func pinnedTo(node string) func(*v1.PersistentVolumeClaim) {
	return func(c *v1.PersistentVolumeClaim) { c.Annotations[provisioning.AnnEndpointNode] = node }
}

// The request recorded on the claim holds what rebuilds it without class or
// source, and never the secrets.
func TestRecordedRequestKeepsNoSecretsAndNoTopology(t *testing.T) {
	req := &csipb.CreateVolumeRequest{Name: "pvc-uid-1", CapacityRange: &csipb.CapacityRange{RequiredBytes: 1 << 20},
		Parameters: map[string]string{"tier": "gold"}, Secrets: map[string]string{"password": "hunter2"},
		VolumeCapabilities: fillerRequest(1).VolumeCapabilities,
		VolumeContentSource: &csipb.VolumeContentSource{Type: &csipb.VolumeContentSource_Volume{
			Volume: &csipb.VolumeContentSource_VolumeSource{VolumeId: "src"}}},
		AccessibilityRequirements: &csipb.TopologyRequirement{Requisite: []*csipb.Topology{{Segments: map[string]string{topoKey: "a"}}}}}
	rec, err := provisioning.RecordRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(rec, "hunter2") {
		t.Errorf("the record %s holds a secret", rec)
	}
	got, ok, err := provisioning.RecordedRequest(claim(func(c *v1.PersistentVolumeClaim) { c.Annotations[provisioning.AnnCreateRequest] = rec }))
	switch {
	case err != nil || !ok:
		t.Fatalf("recordedRequest = %v, %v", ok, err)
	case got.GetName() != "pvc-uid-1" || got.GetParameters()["tier"] != "gold" || got.GetCapacityRange().GetRequiredBytes() != 1<<20:
		t.Errorf("name, parameters or size lost: %v", got)
	case got.GetVolumeContentSource().GetVolume().GetVolumeId() != "src" || len(got.GetVolumeCapabilities()) != 1:
		t.Errorf("source or capabilities lost: %v", got)
	case got.GetSecrets() != nil || got.GetAccessibilityRequirements() != nil:
		t.Errorf("secrets or topology recorded: %v", got)
	}
	if _, _, err := provisioning.RecordedRequest(claim(func(c *v1.PersistentVolumeClaim) { c.Annotations[provisioning.AnnCreateRequest] = "{" })); err == nil {
		t.Error("a broken record must be an error, not an empty request")
	}
}

// The StorageClass is deleted while a provisioning is in progress (the
// backend volume made, its PV not yet), then the claim: the request
// recorded with the finalizer finds the volume, which is deleted, and the
// finalizer goes.
func TestClassDeletedWhileProvisioningInProgressThenClaimDeletedLeavesNoVolume(t *testing.T) {
	gold := func(c *storagev1.StorageClass) { c.Parameters = map[string]string{"tier": "gold"} }
	w := newWorld(t, claim(), class(gold))
	w.client.PrependReactor("create", "persistentvolumes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("injected: PV create refused")
	})
	w.start()
	w.eventually("the backend volume made, the request recorded", func() string {
		c := w.claim()
		if b := w.backend(); len(b) != 1 || !hasFinalizer(c.Finalizers, provisioning.ClaimFinalizer) || c.Annotations[provisioning.AnnCreateRequest] == "" {
			return fmt.Sprintf("backend %v, finalizers %v, annotations %v", b, c.Finalizers, c.Annotations)
		}
		return ""
	})
	if err := w.client.StorageV1().StorageClasses().Delete(w.ctx, "fast", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	w.markDeleted()
	w.expectCleanedUp()
}

// A claim pinned by a provisioner that recorded no request, whose class is
// gone: the request built from the claim alone finds the volume on the
// pinned node.
func TestPinnedClaimWithoutRecordOrClassIsCleanedUpFromTheClaimAlone(t *testing.T) {
	w := newWorld(t, claim(withFinalizer, deleting, pinnedTo("b")))
	req := fillerRequest(1 << 20)
	req.Name = "pvc-uid-1"
	w.createOn("b", req)
	w.start()
	w.expectCleanedUp()
}

// When the rebuilt request does not match the volume (here a clone, and
// the claim recorded neither request nor class), the driver answers
// AlreadyExists: the volume exists, so the finalizer stays and the user is
// told what to do.
func TestCleanupThatCannotMatchTheVolumeKeepsTheFinalizer(t *testing.T) {
	w := newWorld(t, claim(withFinalizer, deleting, pinnedTo("b")))
	src := w.createOn("b", fillerRequest(1<<20))
	clone := fillerRequest(1 << 20)
	clone.Name = "pvc-uid-1"
	clone.VolumeContentSource = &csipb.VolumeContentSource{Type: &csipb.VolumeContentSource_Volume{
		Volume: &csipb.VolumeContentSource_VolumeSource{VolumeId: src.GetVolumeId()}}}
	w.createOn("b", clone)
	w.start()
	w.eventually("ProvisioningCleanupFailed", func() string {
		if !w.sawEvent("Warning ProvisioningCleanupFailed failed to delete the volume that may have been provisioned for the claim: volume pvc-uid-1 exists but does not match") {
			return fmt.Sprintf("events %v", w.events)
		}
		return ""
	})
	if b := w.backend(); len(b) != 2 || !hasFinalizer(w.claim().Finalizers, provisioning.ClaimFinalizer) {
		t.Errorf("backend %v, finalizers %v: the volume may exist, so the finalizer must stay", b, w.claim().Finalizers)
	}
}

// A claim with our finalizer but no pin, record or class, on a driver
// served on two nodes: which node may hold its volume cannot be told, so
// the user is told and the finalizer stays.
func TestUnpinnedCleanupWithoutClassIsReported(t *testing.T) {
	w := newWorld(t, claim(withFinalizer, deleting))
	w.start()
	w.eventually("ProvisioningCleanupFailed", func() string {
		if !w.sawEvent("Warning ProvisioningCleanupFailed ") {
			return fmt.Sprintf("events %v", w.events)
		}
		return ""
	})
	if !hasFinalizer(w.claim().Finalizers, provisioning.ClaimFinalizer) {
		t.Error("finalizer removed though the volume may exist")
	}
}

// markDeleted sets the claim's deletionTimestamp, as a delete with a
// finalizer left would.
func (w *world) markDeleted() {
	w.t.Helper()
	c := w.claim()
	c.DeletionTimestamp = &metav1.Time{}
	if _, err := w.client.CoreV1().PersistentVolumeClaims("ns").Update(w.ctx, c, metav1.UpdateOptions{}); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) expectCleanedUp() {
	w.t.Helper()
	w.eventually("backend volume deleted, finalizer gone", func() string {
		c := w.claim()
		if b := w.backend(); len(b) != 0 || provisioning.MarkedInProgress(c) {
			return fmt.Sprintf("backend %v, finalizers %v, annotations %v, events %v", b, c.Finalizers, c.Annotations, w.events)
		}
		return ""
	})
}

// createOn makes a volume on the node's driver, as an earlier attempt did.
func (w *world) createOn(node string, req *csipb.CreateVolumeRequest) *csipb.Volume {
	w.t.Helper()
	vol, err := w.pool.ForSegment(testDriver, map[string]string{topoKey: node}).CreateVolume(w.ctx, req)
	if err != nil {
		w.t.Fatal(err)
	}
	return vol
}

// A refusal of a request rebuilt from the claim alone proves nothing (the
// class's parameters, say, are missing from it): the finalizer stays and
// the user is told.
func TestRefusedRebuiltRequestKeepsTheFinalizer(t *testing.T) {
	rwx := func(c *v1.PersistentVolumeClaim) {
		c.Spec.AccessModes = []v1.PersistentVolumeAccessMode{v1.ReadWriteMany}
	}
	w := newWorld(t, claim(withFinalizer, deleting, pinnedTo("b"), rwx))
	w.start()
	w.eventually("ProvisioningCleanupFailed", func() string {
		if !w.sawEvent("Warning ProvisioningCleanupFailed failed to delete the volume that may have been provisioned for the claim: the request rebuilt without the claim's class or clone source was refused") {
			return fmt.Sprintf("events %v", w.events)
		}
		return ""
	})
	if !hasFinalizer(w.claim().Finalizers, provisioning.ClaimFinalizer) {
		t.Error("finalizer removed on a refusal that proves nothing")
	}
}

// A cleanup on a cached copy whose finalizer is already gone on the API
// server (an earlier cleanup removed it and the claim went) touches no
// backend: replaying the create would make again the volume that cleanup
// deleted, with nothing left to delete it (the soak's leak, seed 390067).
// The stale copy is pinned to a node no driver serves, so any step toward
// the backend would fail.
func TestCleanupOfAStaleCopyTouchesNoBackend(t *testing.T) {
	for name, live := range map[string][]runtime.Object{
		"claim gone":          nil,
		"finalizer gone":      {claim(deleting)},
		"another claim since": {claim(withFinalizer, deleting, func(c *v1.PersistentVolumeClaim) { c.UID = "uid-2" })},
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, live...)
			c, err := New(Config{Client: w.client, Informers: informers.NewSharedInformerFactory(w.client, 0), Pool: w.pool,
				Recorder: func(string) record.EventRecorder { return w.recorder }})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.cleanup(w.ctx, claim(withFinalizer, deleting, pinnedTo("nowhere")), nil); err != nil {
				t.Errorf("cleanup of a stale copy: %v, want nothing done", err)
			}
			if b := w.backend(); len(b) != 0 {
				t.Errorf("backend %v, want empty", b)
			}
		})
	}
}
