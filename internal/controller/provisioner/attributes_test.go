package provisioner

import (
	"errors"
	"fmt"
	"maps"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/hostpath"
)

func attributesClass(name, driver string, params map[string]string) *storagev1.VolumeAttributesClass {
	return &storagev1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: name}, DriverName: driver, Parameters: params}
}

func withAttributes(name string) func(*v1.PersistentVolumeClaim) {
	return func(c *v1.PersistentVolumeClaim) { c.Spec.VolumeAttributesClassName = ptr.To(name) }
}

var goldParams = map[string]string{hostpath.ParamTier: hostpath.TierPremium, hostpath.ParamIOPS: "3000"}

// holds says whether the endpoint of the PV's node holds the claim's
// volume with exactly params: the driver returns a volume asked again by
// name only with the mutable parameters it holds (AlreadyExists otherwise).
func (w *world) holds(pv *v1.PersistentVolume, params map[string]string) bool {
	w.t.Helper()
	node := pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values[0]
	for _, e := range w.pool.Endpoints(testDriver) {
		if e.Info.NodeID != node {
			continue
		}
		_, err := e.CreateVolume(w.ctx, &csipb.CreateVolumeRequest{Name: pv.Name, MutableParameters: params,
			CapacityRange: &csipb.CapacityRange{RequiredBytes: 1 << 20},
			VolumeCapabilities: []*csipb.VolumeCapability{{
				AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
				AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{}}}}})
		if err != nil && status.Code(err) != codes.AlreadyExists {
			w.t.Fatalf("asking %s for the volume again: %v", node, err)
		}
		return err == nil
	}
	w.t.Fatalf("no endpoint of node %q", node)
	return false
}

// A claim with an attributes class: the driver gets the class's parameters
// with CreateVolume and the PV records the class (which the binder matches).
func TestProvisionsWithTheAttributesClassParameters(t *testing.T) {
	w := newWorld(t, claim(withAttributes("gold")), class(), attributesClass("gold", testDriver, goldParams))
	w.start()
	w.eventually("PV made with the attributes class", func() string {
		pv := w.pv("pvc-uid-1")
		switch {
		case pv == nil:
			return "no PV"
		case ptr.Deref(pv.Spec.VolumeAttributesClassName, "") != "gold":
			return fmt.Sprintf("PV volumeAttributesClassName %v", pv.Spec.VolumeAttributesClassName)
		}
		return ""
	})
	pv := w.pv("pvc-uid-1")
	if !w.holds(pv, goldParams) {
		t.Errorf("the driver does not hold the volume with %v", goldParams)
	}
	if w.holds(pv, map[string]string{hostpath.ParamTier: hostpath.TierStandard}) {
		t.Error("the volume matches other mutable parameters too")
	}
}

// A class that does not exist yet: the failure is reported (naming it) and
// nothing is made; once the class is created the claim is provisioned.
func TestMissingAttributesClassFailsUntilCreated(t *testing.T) {
	w := newWorld(t, claim(withAttributes("gold")), class())
	w.start()
	w.eventually("failure reported", func() string {
		if !w.sawEvent(`Warning ProvisioningFailed volumeattributesclasses.storage.k8s.io "gold" not found`) {
			return fmt.Sprintf("events %v", w.events)
		}
		return ""
	})
	if b := w.backend(); len(b) != 0 || w.pv("pvc-uid-1") != nil {
		t.Fatalf("backend %v, PV %v; want nothing", b, w.pv("pvc-uid-1"))
	}
	if _, err := w.client.StorageV1().VolumeAttributesClasses().Create(w.ctx, attributesClass("gold", testDriver, goldParams), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.eventually("provisioned once the class exists", func() string {
		if pv := w.pv("pvc-uid-1"); pv == nil || ptr.Deref(pv.Spec.VolumeAttributesClassName, "") != "gold" {
			return "no PV with the class"
		}
		return ""
	})
}

func TestAttributesClassOfAnotherDriverIsRefused(t *testing.T) {
	w := newWorld(t, claim(withAttributes("other")), class(), attributesClass("other", "other.example.com", goldParams))
	w.start()
	w.eventually("mismatch reported", func() string {
		want := "Warning ProvisioningFailed VAC other referenced in PVC is for driver other.example.com which does not match driver name " + testDriver
		if !w.sawEvent(want) {
			return fmt.Sprintf("events %v", w.events)
		}
		return ""
	})
	if b := w.backend(); len(b) != 0 || w.pv("pvc-uid-1") != nil {
		t.Errorf("backend %v, PV %v; want nothing", b, w.pv("pvc-uid-1"))
	}
}

func TestAttributesClassNeedsModifyVolume(t *testing.T) {
	c := &Controller{}
	_, err := c.mutableParameters(claim(withAttributes("gold")), csi.Info{Driver: testDriver})
	if !errors.Is(err, errNoModify) || !isFinal(err) {
		t.Errorf("got %v, want the final %v", err, errNoModify)
	}
	params, err := c.mutableParameters(claim(), csi.Info{Driver: testDriver})
	if params != nil || err != nil {
		t.Errorf("a claim without a class got %v, %v; want nothing", params, err)
	}
	got, err := classParameters(attributesClass("gold", testDriver, goldParams), testDriver)
	if err != nil || !maps.Equal(got, goldParams) {
		t.Errorf("classParameters = %v, %v; want %v", got, err, goldParams)
	}
}
