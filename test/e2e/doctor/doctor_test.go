package doctor

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	csispec "github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/checkup"
	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/doctor"
	"github.com/volplane/volplane/internal/hostpath"
)

// manual is a class no StorageClass object names: static volumes only.
const manual = "doctor-manual"

// holdFinalizer keeps a volume being deleted until the test ends.
const holdFinalizer = "example.com/hold"

func TestDoctorOnAHealthyClusterFindsNothing(t *testing.T) {
	e := newEnv(t)
	r, table, json := e.doctor()
	if len(r.Findings) != 0 {
		t.Errorf("findings on a healthy cluster: %+v", r.Findings)
	}
	golden(t, "healthy.txt", table)
	golden(t, "healthy.json", json)
}

// Every kind of problem at once: what the loops leave (a Released Retain
// volume of a deleted claim, a claim no volume fits, a claim deletion held
// by its pod), then, with the loops stopped so that nothing repairs it,
// what only a bug, a crash or a hand edit leaves.
func TestDoctorFindsEveryKindOfProblemWithItsFix(t *testing.T) {
	e := newEnv(t)
	t.Cleanup(func() { e.cleanUp("small", "kept", "lost", "held") })
	node := stack.CP.Nodes[0]
	e.pv("small", manual, hostPath("small"))
	e.pv("kept", manual, hostPath("kept"))
	// Both volumes fit claim old: it names kept, so that kept is the one
	// Released (a busy binder that had not seen kept yet chose small).
	e.claimOf("old", "kept")
	e.eventually("claim old Bound", e.claimPhase("old", corev1.ClaimBound))
	e.deleteClaim("old")
	e.eventually("volume kept Released", e.volumePhase("kept", corev1.VolumeReleased))
	e.claim("stuck", "5Gi", manual)
	e.claim("shared", "1Gi", bundle.NetworkClass)
	e.pod("app", node, "shared")
	e.eventually("pod app Running", e.podRunning("app"))
	e.deleteClaim("shared")
	e.eventually("claim shared being deleted", func() string {
		if e.getClaim("shared").DeletionTimestamp == nil {
			return "not yet"
		}
		return ""
	})
	sharedPV := e.getClaim("shared").Spec.VolumeName

	e.must(stack.StopLoops())
	t.Cleanup(func() { stack.StartLoops() })
	e.pv("lost", manual, corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
		Driver: hostpath.NetworkDriverName, VolumeHandle: "vol-00000000000000000000000000000000"}})
	e.pv("held", manual, hostPath("held"), holdFinalizer)
	e.must(e.client.CoreV1().PersistentVolumes().Delete(e.ctx, "held", metav1.DeleteOptions{}))
	e.attachment("doctor-node-gone", sharedPV, "gone-node")
	e.attachment("doctor-unused", "kept", stack.CP.Nodes[1])
	orphan := e.backendVolume(stack.Drivers.Endpoints[0], "doctor-orphan")
	e.boundGhost("ghost", "no-such-volume")

	r, table, json := e.doctor()
	golden(t, "problems.txt", table)
	golden(t, "problems.json", json)
	kinds := map[doctor.Kind]bool{}
	for _, f := range r.Findings {
		kinds[f.Kind] = true
	}
	for _, k := range doctor.Kinds() {
		if k == doctor.KindOrphanedContent || k == doctor.KindOrphanedBackendSnapshot || k == doctor.KindMissingBackendSnapshot {
			continue // TestDoctorFindsSnapshotProblemsWithSafeFixes
		}
		if k == doctor.KindVolumeUnhealthy {
			continue // test/e2e/health: TestRemovedVolumeIsReportedAndItsRepairClears
		}
		if !kinds[k] {
			t.Errorf("no %s finding", k)
		}
	}
	// What only the loops' absence left is removed before they restart.
	for _, va := range []string{"doctor-node-gone", "doctor-unused"} {
		e.must(e.client.StorageV1().VolumeAttachments().Delete(e.ctx, va, metav1.DeleteOptions{}))
	}
	e.must(orphan.delete())
}

// attachment creates a VolumeAttachment of the network driver by hand.
func (e *env) attachment(name, pv, node string) {
	e.t.Helper()
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: hostpath.NetworkDriverName, NodeName: node,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To(pv)}}}
	_, err := e.client.StorageV1().VolumeAttachments().Create(e.ctx, va, metav1.CreateOptions{})
	e.must(err)
}

// boundGhost creates a claim that says it is Bound to a volume that does
// not exist, as a hand edit would.
func (e *env) boundGhost(name, volume string) {
	e.t.Helper()
	c := e.claim(name, "1Gi", manual)
	c.Spec.VolumeName = volume
	c, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Update(e.ctx, c, metav1.UpdateOptions{})
	e.must(err)
	c.Status.Phase = corev1.ClaimBound
	_, err = e.client.CoreV1().PersistentVolumeClaims(e.ns).UpdateStatus(e.ctx, c, metav1.UpdateOptions{})
	e.must(err)
}

func (e *env) unhold(name string) {
	if pv, err := e.client.CoreV1().PersistentVolumes().Get(e.ctx, name, metav1.GetOptions{}); err == nil {
		// A patch of that finalizer alone: a full update raced
		// pv-protection's own finalizer write and, refused, left the
		// volume held for every later test.
		patch := binding.FinalizerPatch(pv.UID, "", nil, holdFinalizer, true)
		_, _ = e.client.CoreV1().PersistentVolumes().Patch(e.ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	}
}

// backend is a volume made on a driver behind the cluster's back.
type backend struct {
	e        *env
	endpoint *csi.Endpoint
	id       string
}

func (b backend) delete() error {
	defer b.endpoint.Close()
	return b.endpoint.DeleteVolume(b.e.ctx, b.id, nil)
}

func (e *env) backendVolume(endpoint, name string) backend {
	e.t.Helper()
	ep, err := csi.Dial(e.ctx, endpoint, nil)
	e.must(err)
	vol, err := ep.CreateVolume(e.ctx, &csispec.CreateVolumeRequest{Name: name,
		CapacityRange: &csispec.CapacityRange{RequiredBytes: 1 << 30},
		VolumeCapabilities: []*csispec.VolumeCapability{{
			AccessType: &csispec.VolumeCapability_Mount{Mount: &csispec.VolumeCapability_MountVolume{}},
			AccessMode: &csispec.VolumeCapability_AccessMode{Mode: csispec.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}}})
	if err != nil {
		ep.Close()
		e.t.Fatal(err)
	}
	return backend{e: e, endpoint: ep, id: vol.GetVolumeId()}
}

// A finalizer fix, pasted once the object changed, fails on the API
// server instead of acting on what doctor did not see; pasted on the
// object doctor read, it removes that finalizer.
func TestDoctorFinalizerFixAppliesOnlyToTheObjectItRead(t *testing.T) {
	e := newEnv(t)
	t.Cleanup(func() { e.cleanUp("held-once") })
	e.pv("held-once", manual, hostPath("held-once"), holdFinalizer)
	e.must(e.client.CoreV1().PersistentVolumes().Delete(e.ctx, "held-once", metav1.DeleteOptions{}))
	// The loops write the volume until it is at rest: only then does a fix
	// read once stay good.
	e.eventually("volume held-once at rest, held by "+holdFinalizer, func() string {
		pv := e.getVolume("held-once")
		if !slices.Equal(pv.Finalizers, []string{holdFinalizer}) || pv.Status.Phase != corev1.VolumeAvailable {
			return fmt.Sprintf("finalizers %v, phase %s", pv.Finalizers, pv.Status.Phase)
		}
		return ""
	})

	patch := e.finalizerFix("held-once", holdFinalizer)
	pv := e.getVolume("held-once")
	pv.Labels = map[string]string{"touched": "yes"}
	_, err := e.client.CoreV1().PersistentVolumes().Update(e.ctx, pv, metav1.UpdateOptions{})
	e.must(err)
	if _, err := e.client.CoreV1().PersistentVolumes().Patch(e.ctx, "held-once", types.JSONPatchType, patch, metav1.PatchOptions{}); err == nil {
		t.Fatalf("the fix applied to the object changed since doctor read it: %s", patch)
	}
	if !slices.Contains(e.getVolume("held-once").Finalizers, holdFinalizer) {
		t.Fatal("the failed fix removed the finalizer")
	}

	patch = e.finalizerFix("held-once", holdFinalizer)
	if _, err := e.client.CoreV1().PersistentVolumes().Patch(e.ctx, "held-once", types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("the fix on the object doctor read: %v", err)
	}
	e.eventually("volume held-once gone", func() string {
		if _, err := e.client.CoreV1().PersistentVolumes().Get(e.ctx, "held-once", metav1.GetOptions{}); err == nil {
			return "still there"
		}
		return ""
	})
}

// finalizerFix is the JSON patch doctor's fix pastes to remove fin from
// the PV name.
func (e *env) finalizerFix(name, fin string) []byte {
	e.t.Helper()
	r, _, _ := e.doctor()
	prefix := "kubectl patch pv " + name + " --type=json -p '"
	for _, f := range r.Findings {
		for _, fix := range f.Fixes {
			if strings.HasPrefix(fix.Command, prefix) && strings.Contains(fix.Says, fin) {
				return []byte(strings.TrimSuffix(strings.TrimPrefix(fix.Command, prefix), "'"))
			}
		}
	}
	e.t.Fatalf("no fix removes %s from %s: %+v", fin, name, r.Findings)
	return nil
}

// A PV of the node-local driver whose node affinity names its node by
// hostname only is reported missing only from a listing of every node that
// runs the driver and that the affinity allows.
func TestDoctorReportsAMissingNodeLocalVolumeOnlyFromACompleteListing(t *testing.T) {
	e := newEnv(t)
	t.Cleanup(func() { e.cleanUp("far-away") })
	far := stack.CP.Nodes[1]
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "far-away"},
		Spec: corev1.PersistentVolumeSpec{StorageClassName: manual,
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: hostpath.DriverName, VolumeHandle: "vol-00000000000000000000000000000000"}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{far}}}}}}}}}
	_, err := e.client.CoreV1().PersistentVolumes().Create(e.ctx, pv, metav1.CreateOptions{})
	e.must(err)

	partial := e.report(stack.Drivers.Endpoints[:1]) // the first node's driver only
	if len(partial.Findings) != 0 || !slices.ContainsFunc(partial.Notes, func(n string) bool {
		return strings.Contains(n, "the endpoints of node(s) "+far+" were not read")
	}) {
		t.Errorf("with %s's endpoint not read: findings %+v, notes %q", far, partial.Findings, partial.Notes)
	}
	full := e.report(stack.Drivers.Endpoints)
	if len(full.Findings) != 1 || full.Findings[0].Kind != doctor.KindMissingBackendVolume || full.Findings[0].Object.Name != "far-away" {
		t.Errorf("with every endpoint read: %+v", full.Findings)
	}
}

// report is doctor's report with these CSI endpoints.
func (e *env) report(endpoints []string) doctor.Report {
	e.t.Helper()
	r, err := checkup.Doctor(e.ctx, e.client, checkup.DoctorConfig{Endpoints: endpoints, Output: "json"}, io.Discard)
	e.must(err)
	return r
}
