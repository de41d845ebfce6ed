package provisioning

import (
	"slices"
	"strconv"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"

	v1 "k8s.io/api/core/v1"

	"github.com/volplane/volplane/internal/binding"
)

// RecordPasses says whether the claim records a request that passes the
// check against req, the request about to be sent: an earlier attempt's is
// kept (it may have made the volume); one written by anyone else, or none,
// is replaced by req's.
func RecordPasses(claim *v1.PersistentVolumeClaim, req *csipb.CreateVolumeRequest) bool {
	rec, ok, err := RecordedRequest(claim)
	return err == nil && ok && WhyNotOurs(rec, FactsOf(req)) == ""
}

// MarkedInProgress: the claim carries any of what Unpin removes.
func MarkedInProgress(c *v1.PersistentVolumeClaim) bool {
	return slices.Contains(c.Finalizers, ClaimFinalizer) || c.Annotations[AnnEndpointNode] != "" || c.Annotations[AnnCreateRequest] != ""
}

// OnlyMarksChanged says whether cur differs from old in the in-progress
// marks (finalizer, pin, recorded request) and in nothing else but its
// version.
func OnlyMarksChanged(old, cur *v1.PersistentVolumeClaim) bool {
	if marks(old) == marks(cur) {
		return false
	}
	o, n := old.DeepCopy(), cur.DeepCopy()
	Unpin(o)
	Unpin(n)
	o.ResourceVersion, n.ResourceVersion = "", ""
	o.ManagedFields, n.ManagedFields = nil, nil
	return apiequality.Semantic.DeepEqual(o, n)
}

// marks are the claim's in-progress marks, comparable.
func marks(c *v1.PersistentVolumeClaim) [3]string {
	return [3]string{strconv.FormatBool(slices.Contains(c.Finalizers, ClaimFinalizer)), c.Annotations[AnnEndpointNode], c.Annotations[AnnCreateRequest]}
}

// Unpin removes the in-progress finalizer, the endpoint pin and the
// recorded request from upd.
func Unpin(upd *v1.PersistentVolumeClaim) {
	upd.Finalizers, _ = binding.WithoutFinalizer(upd.Finalizers, ClaimFinalizer)
	delete(upd.Annotations, AnnEndpointNode)
	delete(upd.Annotations, AnnCreateRequest)
}

// MarkInProgress is the claim with the marks a create needs before it is
// sent: the in-progress finalizer, the pin to node if the claim has none
// (node "" pins nothing: an endpoint without a node ID is not one of
// several), and req recorded unless the claim records a request that
// passes against it (RecordPasses). nil when the claim has them all
// already; claim itself is not modified.
func MarkInProgress(claim *v1.PersistentVolumeClaim, node string, req *csipb.CreateVolumeRequest) (*v1.PersistentVolumeClaim, error) {
	needsPin := node != "" && claim.Annotations[AnnEndpointNode] == ""
	needsRecord := !RecordPasses(claim, req)
	if slices.Contains(claim.Finalizers, ClaimFinalizer) && !needsPin && !needsRecord {
		return nil, nil
	}
	upd := claim.DeepCopy()
	if !slices.Contains(upd.Finalizers, ClaimFinalizer) {
		upd.Finalizers = append(upd.Finalizers, ClaimFinalizer)
	}
	if upd.Annotations == nil {
		upd.Annotations = map[string]string{}
	}
	if needsPin {
		upd.Annotations[AnnEndpointNode] = node
	}
	if needsRecord {
		rec, err := RecordRequest(req)
		if err != nil {
			return nil, err
		}
		upd.Annotations[AnnCreateRequest] = rec
	}
	return upd, nil
}

// MarkFirst says whether the claim's in-progress marks are written before
// its CreateVolume is sent, rather than only when the call outlasts the
// provisioner's mark delay or answers in a way that leaves a volume
// possible (AfterCreate does not unpin). They are written first when
// markAfter is 0 (always first), when any of them is on already (an
// earlier attempt's, which the marks complete), and for a claim made from
// a data source: the source's finalizer is held only under the marks,
// which release it. A create marked late leaves a window, from the call
// until the PV exists (or the mark is written), in which a crash followed
// by the claim's deletion leaks the volume, as with the reference, which
// never marks; the driver's listing then shows it to doctor.
func MarkFirst(claim *v1.PersistentVolumeClaim, markAfter time.Duration) bool {
	if markAfter <= 0 || MarkedInProgress(claim) {
		return true
	}
	kind, _, err := ClaimSource(claim)
	return err != nil || kind != NoSource
}
