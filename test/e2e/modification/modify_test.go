package modification

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/controller/resizing"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/invariants"
	"github.com/volplane/volplane/internal/modification"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// env is one test's world: a client and a fresh namespace.
type env struct {
	t      *testing.T
	ctx    context.Context
	client kubernetes.Interface
	ns     string
}

func newEnv(t *testing.T) *env {
	return &env{t: t, ctx: context.Background(), client: stacktest.ControlPlane(t).Client, ns: stacktest.Namespace(t)}
}

func (e *env) eventually(what string, cond func() string) {
	e.t.Helper()
	stacktest.Eventually(e.t, what, cond, func() error {
		if bed.modifier != nil {
			if err := bed.modifier.EndedEarly(); err != nil {
				return fmt.Errorf("the modifier: %w", err)
			}
		}
		return bed.loops.EndedEarly()
	})
}

// boundClaim creates claim "data" asking for the attributes class vac and
// waits until it is Bound.
// checkInvariants waits until no promise of attributes classes
// (invariants.Attributes) is broken across the cluster, with the mutable
// parameters the driver holds for each volume; every test ends with it.
func (e *env) checkInvariants() {
	e.t.Helper()
	support.Holds(e.t, stacktest.WaitTimeout, func() []string {
		s := support.ReadState(e.t, e.client, bed.endpoint)
		for i := range s.Backends {
			b := &s.Backends[i]
			b.Parameters = map[string]map[string]string{}
			for _, id := range b.VolumeIDs {
				b.Parameters[id], _ = bed.driver.MutableParameters(id)
			}
		}
		classes, err := e.client.StorageV1().VolumeAttributesClasses().List(e.ctx, metav1.ListOptions{})
		if err != nil {
			return []string{err.Error()}
		}
		return invariants.Attributes(s, classes.Items)
	})
}

func (e *env) boundClaim(vac string) *corev1.PersistentVolumeClaim {
	e.t.Helper()
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:               []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName:          ptr.To(class),
			VolumeAttributesClassName: ptr.To(vac),
			Resources:                 corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}},
		}}
	if _, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Create(e.ctx, c, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create claim: %v", err)
	}
	e.t.Cleanup(func() {
		_ = e.client.CoreV1().PersistentVolumeClaims(e.ns).Delete(context.Background(), "data", metav1.DeleteOptions{})
	})
	e.eventually("claim Bound", func() string {
		if c = e.claim(); c.Status.Phase != corev1.ClaimBound {
			return "phase " + string(c.Status.Phase)
		}
		return ""
	})
	return c
}

func (e *env) claim() *corev1.PersistentVolumeClaim {
	e.t.Helper()
	c, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Get(e.ctx, "data", metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

func (e *env) pv(name string) *corev1.PersistentVolume {
	e.t.Helper()
	pv, err := e.client.CoreV1().PersistentVolumes().Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return pv
}

// want sets the claim's spec.volumeAttributesClassName, as a user edits it.
func (e *env) want(vac string) {
	e.t.Helper()
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"volumeAttributesClassName": vac}})
	if _, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Patch(e.ctx, "data", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		e.t.Fatalf("set the claim's class to %s: %v", vac, err)
	}
}

// driverHolds checks the mutable parameters the driver holds for the PV's volume.
func (e *env) driverHolds(pv *corev1.PersistentVolume, want map[string]string) string {
	got, ok := bed.driver.MutableParameters(pv.Spec.CSI.VolumeHandle)
	switch {
	case !ok:
		return "the driver has no volume " + pv.Spec.CSI.VolumeHandle
	case !maps.Equal(got, want):
		return fmt.Sprintf("the driver holds %v, want %v", got, want)
	}
	return ""
}

// modified waits until the claim and its PV have the class vac and the
// claim has nothing in progress.
func (e *env) modified(vac string) {
	e.t.Helper()
	e.eventually("modified to "+vac, func() string {
		c := e.claim()
		switch {
		case c.Status.ModifyVolumeStatus != nil:
			return fmt.Sprintf("modifyVolumeStatus %+v", *c.Status.ModifyVolumeStatus)
		case modification.CurrentClass(c) != vac:
			return "current class " + modification.CurrentClass(c)
		case len(c.Status.Conditions) != 0:
			return fmt.Sprintf("conditions %+v", c.Status.Conditions)
		case ptr.Deref(e.pv(c.Spec.VolumeName).Spec.VolumeAttributesClassName, "") != vac:
			return "the PV's class is not " + vac
		}
		return ""
	})
}

// events are the claim's events of reason: "type message (count, source)".
func (e *env) events(reason string) []string {
	e.t.Helper()
	list, err := e.client.CoreV1().Events(e.ns).List(e.ctx, metav1.ListOptions{
		FieldSelector: fields.Set{"involvedObject.name": "data", "reason": reason}.String()})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, ev := range list.Items {
		out = append(out, fmt.Sprintf("%s %s (%d, %s)", ev.Type, ev.Message, ev.Count, ev.Source.Component))
	}
	return out
}

func (e *env) sawEvent(reason, want string) func() string {
	return func() string {
		got := e.events(reason)
		for _, g := range got {
			if g == want {
				return ""
			}
		}
		return fmt.Sprintf("%s events %q, want %q", reason, got, want)
	}
}

var source = resizing.EventComponent(hostpath.DriverName)

// A class given at creation reaches the driver and is recorded on the PV
// and the claim; a class changed later is applied through the driver.
func TestClassAtCreationThenChanged(t *testing.T) {
	e := newEnv(t)
	c := e.boundClaim(bundle.StandardAttributes)
	pv := e.pv(c.Spec.VolumeName)
	standard := map[string]string{hostpath.ParamTier: hostpath.TierStandard}
	switch {
	case modification.CurrentClass(c) != bundle.StandardAttributes:
		t.Errorf("claim's current class %q, want %s", modification.CurrentClass(c), bundle.StandardAttributes)
	case ptr.Deref(pv.Spec.VolumeAttributesClassName, "") != bundle.StandardAttributes:
		t.Errorf("PV's class %v", pv.Spec.VolumeAttributesClassName)
	}
	if wrong := e.driverHolds(pv, standard); wrong != "" {
		t.Error(wrong)
	}

	e.want(bundle.FastAttributes)
	e.modified(bundle.FastAttributes)
	if wrong := e.driverHolds(pv, map[string]string{hostpath.ParamTier: hostpath.TierPremium, hostpath.ParamIOPS: "3000"}); wrong != "" {
		t.Error(wrong)
	}
	e.eventually("VolumeModify", e.sawEvent(modification.EventModify,
		fmt.Sprintf("Normal external resizer is modifying volume data with vac %s (1, %s)", bundle.FastAttributes, source)))
	e.eventually("VolumeModifySuccessful", e.sawEvent(modification.EventModifySuccessful,
		fmt.Sprintf("Normal external resizer modified volume data with vac %s successfully (1, %s)", bundle.FastAttributes, source)))

	// Back to standard: the tier changes, the IOPS set by fast stay (the
	// driver changes only the parameters named).
	e.want(bundle.StandardAttributes)
	e.modified(bundle.StandardAttributes)
	if wrong := e.driverHolds(pv, map[string]string{hostpath.ParamTier: hostpath.TierStandard, hostpath.ParamIOPS: "3000"}); wrong != "" {
		t.Error(wrong)
	}
	e.checkInvariants()
}

// An unknown class: Pending, reported once; once created, it is applied.
func TestUnknownClassIsPendingUntilCreated(t *testing.T) {
	e := newEnv(t)
	e.boundClaim(bundle.StandardAttributes)
	later := e.ns + "-later"
	e.want(later)
	e.eventually("Pending", func() string {
		if st := e.claim().Status.ModifyVolumeStatus; st == nil || st.Status != corev1.PersistentVolumeClaimModifyVolumePending {
			return fmt.Sprintf("modifyVolumeStatus %+v", st)
		}
		return ""
	})
	e.eventually("VolumeModifyFailed", e.sawEvent(modification.EventModifyFailed,
		fmt.Sprintf("Warning VAC %q does not exist. (1, %s)", later, source)))
	if c := e.claim(); modification.CurrentClass(c) != bundle.StandardAttributes {
		t.Errorf("current class %q while Pending", modification.CurrentClass(c))
	}

	vac := &storagev1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: later}, DriverName: hostpath.DriverName,
		Parameters: map[string]string{hostpath.ParamIOPS: "500"}}
	if _, err := e.client.StorageV1().VolumeAttributesClasses().Create(e.ctx, vac, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.client.StorageV1().VolumeAttributesClasses().Delete(context.Background(), later, metav1.DeleteOptions{})
	})
	e.modified(later)
	if wrong := e.driverHolds(e.pv(e.claim().Spec.VolumeName), map[string]string{hostpath.ParamTier: hostpath.TierStandard, hostpath.ParamIOPS: "500"}); wrong != "" {
		t.Error(wrong)
	}
	if got := e.events(modification.EventModifyFailed); len(got) != 1 {
		t.Errorf("VolumeModifyFailed events %q, want the one", got)
	}
	e.checkInvariants()
}

// A class the driver refuses: Infeasible with the driver's reason, the
// volume unchanged; another class is then applied without waiting.
func TestRefusedClassIsInfeasible(t *testing.T) {
	e := newEnv(t)
	c := e.boundClaim(bundle.StandardAttributes)
	e.want(refused)
	e.eventually("Infeasible", func() string {
		c := e.claim()
		st := c.Status.ModifyVolumeStatus
		var cond *corev1.PersistentVolumeClaimCondition
		for i := range c.Status.Conditions {
			if c.Status.Conditions[i].Type == corev1.PersistentVolumeClaimVolumeModifyVolumeError {
				cond = &c.Status.Conditions[i]
			}
		}
		switch {
		case st == nil || st.Status != corev1.PersistentVolumeClaimModifyVolumeInfeasible || st.TargetVolumeAttributesClassName != refused:
			return fmt.Sprintf("modifyVolumeStatus %+v", st)
		case cond == nil || cond.Reason != "InvalidArgument" || !strings.Contains(cond.Message, `value "gold"`):
			return fmt.Sprintf("ModifyVolumeError %+v", cond)
		}
		return ""
	})
	e.eventually("VolumeModifyFailed", func() string {
		for _, ev := range e.events(modification.EventModifyFailed) {
			if strings.HasPrefix(ev, "Warning rpc error: code = InvalidArgument desc = mutable parameter \"tier\"") {
				return ""
			}
		}
		return fmt.Sprintf("events %q", e.events(modification.EventModifyFailed))
	})
	pv := e.pv(c.Spec.VolumeName)
	if ptr.Deref(pv.Spec.VolumeAttributesClassName, "") != bundle.StandardAttributes {
		t.Errorf("the PV's class changed to %v", pv.Spec.VolumeAttributesClassName)
	}
	if wrong := e.driverHolds(pv, map[string]string{hostpath.ParamTier: hostpath.TierStandard}); wrong != "" {
		t.Error(wrong)
	}
	e.want(bundle.FastAttributes)
	e.modified(bundle.FastAttributes)
	e.checkInvariants()
}

// A claim naming a class that does not exist yet is not provisioned: the
// provisioner says why and retries; once the class exists the claim is
// provisioned with it and bound.
func TestClaimWithAnUnknownClassIsProvisionedOnceItExists(t *testing.T) {
	e := newEnv(t)
	later := e.ns + "-at-creation"
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:               []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName:          ptr.To(class),
			VolumeAttributesClassName: ptr.To(later),
			Resources:                 corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}},
		}}
	if _, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Create(e.ctx, c, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.client.CoreV1().PersistentVolumeClaims(e.ns).Delete(context.Background(), "data", metav1.DeleteOptions{})
	})
	e.eventually("ProvisioningFailed", func() string {
		want := fmt.Sprintf(`volumeattributesclasses.storage.k8s.io "%s" not found`, later)
		for _, ev := range e.events("ProvisioningFailed") {
			if strings.HasPrefix(ev, "Warning "+want+" (") {
				return ""
			}
		}
		return fmt.Sprintf("ProvisioningFailed events %q", e.events("ProvisioningFailed"))
	})
	if c := e.claim(); c.Status.Phase != corev1.ClaimPending || c.Spec.VolumeName != "" {
		t.Fatalf("claim %s bound to %q without its class", c.Status.Phase, c.Spec.VolumeName)
	}
	vac := &storagev1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: later}, DriverName: hostpath.DriverName,
		Parameters: map[string]string{hostpath.ParamTier: hostpath.TierPremium}}
	if _, err := e.client.StorageV1().VolumeAttributesClasses().Create(e.ctx, vac, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.client.StorageV1().VolumeAttributesClasses().Delete(context.Background(), later, metav1.DeleteOptions{})
	})
	e.eventually("Bound with the class", func() string {
		c := e.claim()
		switch {
		case c.Status.Phase != corev1.ClaimBound:
			return "phase " + string(c.Status.Phase)
		case modification.CurrentClass(c) != later:
			return "current class " + modification.CurrentClass(c)
		}
		return e.driverHolds(e.pv(c.Spec.VolumeName), vac.Parameters)
	})
	e.checkInvariants()
}

// A claim whose class the driver refuses is not provisioned: it stays
// Pending with the driver's reason.
// (The API server forbids changing the class of a claim not yet bound, so
// the user deletes it or the class's parameters are fixed.)
func TestClaimWithARefusedClassStaysPending(t *testing.T) {
	e := newEnv(t)
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:               []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName:          ptr.To(class),
			VolumeAttributesClassName: ptr.To(refused),
			Resources:                 corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}},
		}}
	if _, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Create(e.ctx, c, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.client.CoreV1().PersistentVolumeClaims(e.ns).Delete(context.Background(), "data", metav1.DeleteOptions{})
	})
	e.eventually("ProvisioningFailed", func() string {
		for _, ev := range e.events("ProvisioningFailed") {
			if strings.Contains(ev, `code = InvalidArgument desc = mutable parameter "tier": value "gold"`) {
				return ""
			}
		}
		return fmt.Sprintf("ProvisioningFailed events %q", e.events("ProvisioningFailed"))
	})
	if got := e.claim(); got.Status.Phase != corev1.ClaimPending || got.Spec.VolumeName != "" {
		t.Errorf("claim %s, volume %q", got.Status.Phase, got.Spec.VolumeName)
	}
	e.checkInvariants()
}

// The manager's resizer loop runs the modifier too: with it instead of the
// test's own modifier, a class change is applied the same way.
func TestTheResizerLoopModifies(t *testing.T) {
	e := newEnv(t)
	bed.modifier.Stop()
	if err := bed.modifier.Err(); err != nil {
		t.Fatalf("stopping the modifier: %v", err)
	}
	bed.modifier = nil
	cp := stacktest.ControlPlane(t)
	resizer := stacktest.StartLoops(manager.Config{REST: cp.RESTConfig, CSIEndpoints: []string{bed.endpoint},
		Controllers: []string{manager.Resizer}, Workers: 2, ResyncPeriod: 2 * time.Second})
	t.Cleanup(func() {
		if err := resizer.Stop(); err != nil {
			t.Errorf("resizer loop: %v", err)
		}
		var err error
		if bed.modifier, err = startModifier(cp); err != nil {
			t.Fatalf("restarting the modifier: %v", err)
		}
	})
	e.boundClaim(bundle.StandardAttributes)
	e.want(bundle.FastAttributes)
	e.modified(bundle.FastAttributes)
	e.eventually("VolumeModifySuccessful", e.sawEvent(modification.EventModifySuccessful,
		fmt.Sprintf("Normal external resizer modified volume data with vac %s successfully (1, %s)", bundle.FastAttributes, source)))
	if err := resizer.EndedEarly(); err != nil {
		t.Error(err)
	}
	e.checkInvariants()
}
