package provisioner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/hostpath/hostpathtest"
	"github.com/volplane/volplane/internal/provisioning"
)

func attributesClass(name, driver string, params map[string]string) *storagev1.VolumeAttributesClass {
	return &storagev1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: name}, DriverName: driver, Parameters: params}
}

func withAttributes(name string) func(*v1.PersistentVolumeClaim) {
	return func(c *v1.PersistentVolumeClaim) { c.Spec.VolumeAttributesClassName = ptr.To(name) }
}

var goldParams = map[string]string{hostpath.ParamTier: hostpath.TierPremium, hostpath.ParamIOPS: "3000"}

// createdWith records the mutable parameters of every CreateVolume that
// succeeded, by volume name.
type createdWith struct {
	mu     sync.Mutex
	params map[string][]map[string]string
}

func (c *createdWith) intercept(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	resp, err := h(ctx, req)
	if r, ok := req.(*csipb.CreateVolumeRequest); ok && err == nil {
		c.mu.Lock()
		c.params[r.GetName()] = append(c.params[r.GetName()], r.GetMutableParameters())
		c.mu.Unlock()
	}
	return resp, err
}

func (c *createdWith) of(name string) []map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.params[name]
}

// A claim with an attributes class: the driver gets the class's parameters
// with CreateVolume and the PV records the class (which the binder matches).
func TestProvisionsWithTheAttributesClassParameters(t *testing.T) {
	created := &createdWith{params: map[string][]map[string]string{}}
	w := newWorldOf(t, func(t testing.TB, node string, capacity int64) string {
		return hostpathtest.ServeIntercepted(t, node, capacity, created.intercept)
	}, claim(withAttributes("gold")), class(), attributesClass("gold", testDriver, goldParams))
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
	got := created.of("pvc-uid-1")
	if len(got) == 0 {
		t.Fatal("no CreateVolume succeeded")
	}
	for _, params := range got {
		if !maps.Equal(params, goldParams) {
			t.Errorf("CreateVolume with mutable parameters %v, want %v", params, goldParams)
		}
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
	if !errors.Is(err, provisioning.ErrNoModify) || !provisioning.IsFinal(err) {
		t.Errorf("got %v, want the final %v", err, provisioning.ErrNoModify)
	}
	params, err := c.mutableParameters(claim(), csi.Info{Driver: testDriver})
	if params != nil || err != nil {
		t.Errorf("a claim without a class got %v, %v; want nothing", params, err)
	}
	got, err := provisioning.ClassParameters(attributesClass("gold", testDriver, goldParams), testDriver)
	if err != nil || !maps.Equal(got, goldParams) {
		t.Errorf("classParameters = %v, %v; want %v", got, err, goldParams)
	}
}
