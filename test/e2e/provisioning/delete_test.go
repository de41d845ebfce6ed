package provisioning

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/snapshotapi"
)

// A Released PV that a VolumeAttachment still names keeps its backend
// volume: the PV gets VolumeFailedDelete with the external-provisioner's
// message and waits; once the attachment is deleted, the volume and the PV
// go.
func TestReleasedVolumeStillAttachedWaitsForItsVolumeAttachment(t *testing.T) {
	e := newEnv(t)
	_, pv, vol := e.provisioned("data", classImmediate)
	va := e.createAttachment(pv.Name, vol.node)

	e.deleteClaim("data")
	e.waitClaimGone("data")
	e.waitPVEvent(pv.Name, corev1.EventTypeWarning, "VolumeFailedDelete",
		fmt.Sprintf("persistentvolume %s is still attached to node %s", pv.Name, vol.node))
	e.holds("PV and backend volume kept while attached", time.Second, func() string {
		if p := e.findPV(pv.Name); p == nil || p.DeletionTimestamp != nil {
			return "PV deleted"
		}
		if vols := e.newVolumes(); len(vols) != 1 {
			return fmt.Sprintf("backend volumes %v, want %s", vols, vol)
		}
		return ""
	})

	e.noError(e.client.StorageV1().VolumeAttachments().Delete(e.ctx, va, metav1.DeleteOptions{}), "delete VolumeAttachment")
	e.waitPVDeleted(pv.Name)
	e.eventually("backend volume deleted once detached", func() string {
		if vols := e.newVolumes(); len(vols) > 0 {
			return fmt.Sprintf("still there: %v", vols)
		}
		return ""
	})
}

// A Released PV whose volume lives on a node whose driver the provisioner
// does not serve is not handed to another node's driver (which would answer
// NotFound, so the PV would go and the data stay): the PV gets
// VolumeFailedDelete naming its node and waits; a provisioner serving that
// node's driver deletes both.
func TestReleasedVolumeWaitsWhileItsNodesDriverIsNotServed(t *testing.T) {
	e, rc := crashBed(t)
	full := startLoops(rc, provisionerOnly...)
	t.Cleanup(func() { _ = full.Stop() })
	_, pv, vol := e.provisioned("data", classImmediate)
	e.noError(full.Stop(), "provisioner")
	var others []string
	for _, d := range bed.drivers {
		if d.node != vol.node {
			others = append(others, d.endpoint)
		}
	}
	partial := startLoopsServing(rc, others, provisionerOnly...)
	t.Cleanup(func() { _ = partial.Stop() })

	e.deleteClaim("data")
	e.waitClaimGone("data")
	e.waitPVEvent(pv.Name, corev1.EventTypeWarning, "VolumeFailedDelete",
		fmt.Sprintf("cannot delete volume %s yet: ", vol.id))
	for _, ev := range e.events("PersistentVolume", metav1.NamespaceDefault, pv.Name) {
		if ev.Reason == "VolumeFailedDelete" && !strings.Contains(ev.Message, topologyKey+" in ["+vol.node+"]") {
			t.Errorf("VolumeFailedDelete %q does not name the volume's node %s", ev.Message, vol.node)
		}
	}
	e.holds("PV and backend volume kept", time.Second, func() string {
		if p := e.findPV(pv.Name); p == nil || p.DeletionTimestamp != nil {
			return "PV deleted"
		}
		if vols := e.newVolumes(); len(vols) != 1 {
			return fmt.Sprintf("backend volumes %v, want %s", vols, vol)
		}
		return ""
	})
	e.noError(partial.Stop(), "provisioner of the other nodes")

	runLoops(t, rc, provisionerOnly...)
	e.waitPVDeleted(pv.Name)
	e.eventually("backend volume deleted by its node's driver", func() string {
		if vols := e.newVolumes(); len(vols) > 0 {
			return fmt.Sprintf("still there: %v", vols)
		}
		return ""
	})
}

// The class is deleted while a provisioning is in progress (backend volume
// made, PV create not done: the provisioner crashed), then the claim: the
// next provisioner finds the volume from the request recorded on the claim,
// deletes it, and lets the claim go.
func TestClassDeletedWhileProvisioningInProgressThenClaimDeletedLeavesNothing(t *testing.T) {
	e, rc := crashBed(t)
	class := e.createClass("own-"+e.ns, parameters(map[string]string{"tier": "gold"}))
	c := e.createClaim(e.claim("data", class, "100Mi"))
	e.crashProvisioner(&faultyWrites{allowed: 1, matches: provisioningWrite(e.ns, c.Name)}, rc)
	e.expectPartialProvisioning(1, c.Name)
	if len(e.newVolumes()) != 1 {
		t.Fatalf("backend volumes %v, want the one made before the crash", e.newVolumes())
	}

	e.noError(e.client.StorageV1().StorageClasses().Delete(e.ctx, class, metav1.DeleteOptions{}), "delete class")
	e.deleteClaim(c.Name)
	runLoops(t, rc, provisionerOnly...)
	e.expectNothingLeftOf(c.Name)
}

// A clone's provisioning is in progress (backend volume made from the
// source, PV create not done), then its source claim is deleted and gone,
// (forced out by hand past its cloning protection), then the clone's
// claim: the cleanup replays the recorded request, source
// included, so the driver recognises the clone and it is deleted.
func TestCloneSourceDeletedWhileProvisioningInProgressThenClaimDeletedLeavesNothing(t *testing.T) {
	e, rc := crashBed(t)
	first := startLoops(rc, provisionerOnly...)
	t.Cleanup(func() { _ = first.Stop() })
	e.provisioned("origin", classImmediate)
	e.noError(first.Stop(), "provisioner")
	c := e.createClaim(e.claim("copy", classImmediate, "100Mi", clonedFrom("origin")))
	e.crashProvisioner(&faultyWrites{allowed: 1, matches: provisioningWrite(e.ns, c.Name)}, rc)
	if c = e.getClaim(c.Name); !slices.Contains(c.Finalizers, claimFinalizer) || e.findPV(provisionedName(c)) != nil {
		t.Fatalf("claim finalizers %v, PV %v: want in progress", c.Finalizers, e.findPV(provisionedName(c)) != nil)
	}
	if vols := e.newVolumes(); len(vols) != 2 || !slices.ContainsFunc(vols, func(v backendVolume) bool { return v.clonedFrom != "" }) {
		t.Fatalf("backend volumes %v, want the origin and its clone", vols)
	}

	// The source is held while it is being cloned (cloning-protection);
	// its user forces it out by hand.
	e.deleteClaim("origin")
	if f := e.getClaim("origin").Finalizers; !slices.Contains(f, snapshotapi.CloningFinalizer) {
		t.Fatalf("source claim finalizers %v while it is being cloned, want %s", f, snapshotapi.CloningFinalizer)
	}
	e.noError(e.dropClaimFinalizers("origin", snapshotapi.CloningFinalizer), "drop the cloning protection")
	e.waitClaimGone("origin")
	e.deleteClaim(c.Name)
	runLoops(t, rc, provisionerOnly...)
	e.expectNothingLeftOf(c.Name)
}

// createAttachment makes a VolumeAttachment of the PV to the node, as the
// attach/detach controller would for a pod there, and removes it after the
// test; it returns its name.
func (e *env) createAttachment(pv, node string) string {
	e.t.Helper()
	va := &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: "attach-" + e.ns},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: hostpath.DriverName, NodeName: node,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To(pv)}},
	}
	_, err := e.client.StorageV1().VolumeAttachments().Create(e.ctx, va, metav1.CreateOptions{})
	e.noError(err, "create VolumeAttachment")
	e.t.Cleanup(func() {
		err := e.client.StorageV1().VolumeAttachments().Delete(e.ctx, va.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			e.t.Errorf("delete VolumeAttachment %s: %v", va.Name, err)
		}
	})
	return va.Name
}

// waitPVEvent waits for an event of the type and reason on the PV whose
// message starts with prefix. Events of cluster-scoped objects are in the
// default namespace.
func (e *env) waitPVEvent(pv, eventType, reason, prefix string) {
	e.t.Helper()
	e.eventually(fmt.Sprintf("%s %s event on PV %s", eventType, reason, pv), func() string {
		evs := e.events("PersistentVolume", metav1.NamespaceDefault, pv)
		if !slices.ContainsFunc(evs, func(ev corev1.Event) bool {
			return ev.Type == eventType && ev.Reason == reason && strings.HasPrefix(ev.Message, prefix)
		}) {
			return fmt.Sprintf("want %q…; have %s", prefix, describe(evs))
		}
		return ""
	})
}
