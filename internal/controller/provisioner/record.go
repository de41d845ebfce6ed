package provisioner

import (
	"fmt"
	"maps"
	"slices"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Records on claims. The request and the pin the provisioner writes on a
// claim are a cache of its own decision, on an object the claim's user can
// write too; each is checked against what it must be before it is used
// (doc.go says what is done with one that fails).

// recordRequest is the AnnCreateRequest value for req: without secrets,
// which must not be written to the claim, and without topology, which the
// endpoint pin decides again (and which can list every node).
func recordRequest(req *csipb.CreateVolumeRequest) (string, error) {
	b, err := protojson.Marshal(recordable(req))
	if err != nil {
		return "", fmt.Errorf("record the CreateVolume request: %w", err)
	}
	return string(b), nil
}

// recordable is req as it is recorded.
func recordable(req *csipb.CreateVolumeRequest) *csipb.CreateVolumeRequest {
	r := proto.Clone(req).(*csipb.CreateVolumeRequest)
	r.Secrets, r.AccessibilityRequirements = nil, nil
	return r
}

// recordedRequest reads AnnCreateRequest; ok is false without one. Any
// text is refused with an error, never a panic: sizes that are not int64,
// unknown fields, a request with secrets or topology (never recorded).
func recordedRequest(claim *v1.PersistentVolumeClaim) (req *csipb.CreateVolumeRequest, ok bool, err error) {
	rec := claim.Annotations[AnnCreateRequest]
	if rec == "" {
		return nil, false, nil
	}
	req, err = parseRecord(rec)
	if err != nil {
		return nil, false, fmt.Errorf("annotation %s: %w", AnnCreateRequest, err)
	}
	return req, true, nil
}

func parseRecord(rec string) (*csipb.CreateVolumeRequest, error) {
	req := &csipb.CreateVolumeRequest{}
	if err := protojson.Unmarshal([]byte(rec), req); err != nil {
		return nil, err
	}
	switch {
	case req.GetCapacityRange().GetRequiredBytes() < 0 || req.GetCapacityRange().GetLimitBytes() < 0:
		return nil, fmt.Errorf("negative size %d..%d", req.GetCapacityRange().GetRequiredBytes(), req.GetCapacityRange().GetLimitBytes())
	case len(req.GetSecrets()) > 0 || req.GetAccessibilityRequirements() != nil:
		return nil, fmt.Errorf("secrets or topology, which are never recorded")
	}
	return req, nil
}

// recordFacts is what a recorded request is checked against: what the
// claim, its class and its data source give now.
type recordFacts struct {
	// name is pvc-<the claim's UID>.
	name string
	// classKnown: the claim's class exists and provisions for the driver;
	// params are then its driver parameters.
	classKnown bool
	params     map[string]string
	// mutableKnown: the claim's attributes class (if it names one)
	// resolves; mutable are then its parameters.
	mutableKnown bool
	mutable      map[string]string
	// source is the volume handle of the claim's data source, "" for a
	// claim without one; sourceErr says why it cannot be told (the source
	// claim gone, not bound back, another namespace's).
	source    string
	sourceErr error
	// formerSources, when the source cannot be told, are the handles of
	// the driver's PVs whose claimRef names a claim of the data source's
	// namespace and name: the source claim is gone, and its PV (an object
	// of the administrator's and the binder's, not the user's) still says
	// which volume was that claim's.
	formerSources []string
}

// factsOf are the facts of a request the provisioner builds itself: the
// record it writes must pass them.
func factsOf(req *csipb.CreateVolumeRequest) recordFacts {
	return recordFacts{name: req.GetName(), classKnown: true, params: req.GetParameters(),
		mutableKnown: true, mutable: req.GetMutableParameters(), source: req.GetVolumeContentSource().GetVolume().GetVolumeId()}
}

// whyNotOurs says why rec is not a request the provisioner could have
// sent for the claim the facts describe, "" if it could be: its name is
// the claim's, its content source the claim's data source's volume, and
// its parameters the class's. Parameters nobody can check any more (the
// class is gone) are refused: a driver may take a parameter to name
// where a volume lives (a share, a directory), and a replayed create
// followed by a delete would then remove what is there.
func whyNotOurs(rec *csipb.CreateVolumeRequest, f recordFacts) string {
	if rec.GetName() != f.name {
		return fmt.Sprintf("it names volume %q, but this claim's volume is always %q", rec.GetName(), f.name)
	}
	if why := wrongSource(rec.GetVolumeContentSource(), f); why != "" {
		return why
	}
	switch {
	case !f.classKnown && len(rec.GetParameters()) > 0:
		return "it carries parameters, and the claim's class, which alone gives them, is gone or is not this driver's"
	case f.classKnown && !maps.Equal(rec.GetParameters(), f.params):
		return "its parameters are not those of the claim's class"
	case !f.mutableKnown && len(rec.GetMutableParameters()) > 0:
		return "it carries mutable parameters, and the claim's VolumeAttributesClass, which alone gives them, cannot be read"
	case f.mutableKnown && !maps.Equal(rec.GetMutableParameters(), f.mutable):
		return "its mutable parameters are not those of the claim's VolumeAttributesClass"
	}
	return ""
}

// wrongSource says why a recorded content source is not the claim's own
// data source's volume, "" if it is.
func wrongSource(src *csipb.VolumeContentSource, f recordFacts) string {
	id := src.GetVolume().GetVolumeId()
	switch {
	case src.GetSnapshot() != nil:
		return "it restores a snapshot, which this provisioner never asks"
	case src != nil && id == "":
		return "its content source names no volume"
	case id == "" && f.source != "":
		return fmt.Sprintf("it has no content source, but the claim's data source gives %q", f.source)
	case id == "":
		// Nothing to clone: a replay can only make (and delete) an empty
		// volume of the claim's own name.
		return ""
	case f.sourceErr != nil && slices.Contains(f.formerSources, id):
		return ""
	case f.sourceErr != nil:
		return fmt.Sprintf("it clones volume %q, and the claim's data source cannot be checked: %v", id, f.sourceErr)
	case id != f.source:
		return fmt.Sprintf("it clones volume %q, but the claim's data source gives %q", id, f.source)
	}
	return ""
}

// recordFacts reads what the claim, its class (nil if gone) and its data
// source give now.
func (c *Controller) recordFacts(claim *v1.PersistentVolumeClaim, class *storagev1.StorageClass, driver string) recordFacts {
	f := recordFacts{name: volumeName(claim)}
	if kind, name, _, _ := dataSource(claim); kind != "" {
		f.sourceErr = clonable(claim)
		if f.sourceErr == nil {
			var pv *v1.PersistentVolume
			if pv, f.sourceErr = c.boundSource(claim, name, driver); f.sourceErr == nil {
				f.source = pv.Spec.CSI.VolumeHandle
			}
		}
		if f.sourceErr != nil {
			f.formerSources = c.handlesBoundTo(claim.Namespace, name, driver)
		}
	}
	if class != nil && provisionsFor(class, driver) {
		if params, err := driverParameters(class.Parameters); err == nil {
			f.classKnown, f.params = true, params
		}
	}
	info, _ := c.pool.Info(driver)
	if m, err := c.mutableParameters(claim, info); err == nil {
		f.mutableKnown, f.mutable = true, m
	}
	return f
}

// handlesBoundTo are the volume handles of driver's PVs whose claimRef
// names the claim ns/name (whatever its UID: that claim may be gone).
func (c *Controller) handlesBoundTo(ns, name, driver string) []string {
	pvs, _ := c.pvs.List(labels.Everything())
	var out []string
	for _, pv := range pvs {
		ref := pv.Spec.ClaimRef
		if ref != nil && ref.Namespace == ns && ref.Name == name && pv.Spec.CSI != nil && pv.Spec.CSI.Driver == driver {
			out = append(out, pv.Spec.CSI.VolumeHandle)
		}
	}
	return out
}
