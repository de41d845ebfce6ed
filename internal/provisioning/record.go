package provisioning

import (
	"fmt"
	"maps"
	"slices"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
)

// Records on claims. The request and the pin the provisioner writes on a
// claim are a cache of its own decision, on an object the claim's user can
// write too; each is checked against what it must be before it is used
// (doc.go says what is done with one that fails).

// RecordRequest is the AnnCreateRequest value for req: without secrets,
// which must not be written to the claim, and without topology, which the
// endpoint pin decides again (and which can list every node).
func RecordRequest(req *csipb.CreateVolumeRequest) (string, error) {
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

// RecordedRequest reads AnnCreateRequest; ok is false without one. Any
// text is refused with an error, never a panic: sizes that are not int64,
// unknown fields, a request with secrets or topology (never recorded).
func RecordedRequest(claim *v1.PersistentVolumeClaim) (req *csipb.CreateVolumeRequest, ok bool, err error) {
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

// RecordFacts is what a recorded request is checked against: what the
// claim, its class and its data source give now.
type RecordFacts struct {
	// Name is pvc-<the claim's UID>.
	Name string
	// ClassKnown: the claim's class exists and provisions for the driver;
	// Params are then its driver parameters.
	ClassKnown bool
	Params     map[string]string
	// MutableKnown: the claim's attributes class (if it names one)
	// resolves; Mutable are then its parameters.
	MutableKnown bool
	Mutable      map[string]string
	// Source is the volume handle of the claim's data source claim, ""
	// for a claim without one; SourceErr says why it cannot be told (the source
	// claim gone, not bound back, another namespace's).
	Source string
	// Snapshot is the snapshot handle of the claim's data source
	// VolumeSnapshot, re-derived (SnapshotHandle), "" for a claim without
	// one; SourceErr then says why it cannot be told.
	Snapshot  string
	SourceErr error
	// FormerSources, when the source cannot be told, are the handles of
	// the driver's PVs whose claimRef names a claim of the data source's
	// namespace and name: the source claim is gone, and its PV (an object
	// of the administrator's and the binder's, not the user's) still says
	// which volume was that claim's.
	FormerSources []string
}

// FactsOf are the facts of a request the provisioner builds itself: the
// record it writes must pass them.
func FactsOf(req *csipb.CreateVolumeRequest) RecordFacts {
	return RecordFacts{Name: req.GetName(), ClassKnown: true, Params: req.GetParameters(),
		MutableKnown: true, Mutable: req.GetMutableParameters(), Source: req.GetVolumeContentSource().GetVolume().GetVolumeId(),
		Snapshot: req.GetVolumeContentSource().GetSnapshot().GetSnapshotId()}
}

// WhyNotOurs says why rec is not a request the provisioner could have
// sent for the claim the facts describe, "" if it could be: its name is
// the claim's, its content source the claim's data source's volume, and
// its parameters the class's. Parameters nobody can check any more (the
// class is gone) are refused: a driver may take a parameter to name
// where a volume lives (a share, a directory), and a replayed create
// followed by a delete would then remove what is there.
func WhyNotOurs(rec *csipb.CreateVolumeRequest, f RecordFacts) string {
	if rec.GetName() != f.Name {
		return fmt.Sprintf("it names volume %q, but this claim's volume is always %q", rec.GetName(), f.Name)
	}
	if why := wrongSource(rec.GetVolumeContentSource(), f); why != "" {
		return why
	}
	switch {
	case !f.ClassKnown && len(rec.GetParameters()) > 0:
		return "it carries parameters, and the claim's class, which alone gives them, is gone or is not this driver's"
	case f.ClassKnown && !maps.Equal(rec.GetParameters(), f.Params):
		return "its parameters are not those of the claim's class"
	case !f.MutableKnown && len(rec.GetMutableParameters()) > 0:
		return "it carries mutable parameters, and the claim's VolumeAttributesClass, which alone gives them, cannot be read"
	case f.MutableKnown && !maps.Equal(rec.GetMutableParameters(), f.Mutable):
		return "its mutable parameters are not those of the claim's VolumeAttributesClass"
	}
	return ""
}

// wrongSource says why a recorded content source is not the claim's own
// data source's volume or snapshot, "" if it is.
func wrongSource(src *csipb.VolumeContentSource, f RecordFacts) string {
	if src.GetSnapshot() != nil {
		return wrongSnapshot(src.GetSnapshot().GetSnapshotId(), f)
	}
	id := src.GetVolume().GetVolumeId()
	switch {
	case src != nil && id == "":
		return "its content source names no volume"
	case id == "" && f.Source != "":
		return fmt.Sprintf("it has no content source, but the claim's data source gives %q", f.Source)
	case id == "" && f.Snapshot != "":
		return fmt.Sprintf("it has no content source, but the claim's data source gives snapshot %q", f.Snapshot)
	case id == "":
		// Nothing to clone: a replay can only make (and delete) an empty
		// volume of the claim's own name.
		return ""
	case f.SourceErr != nil && slices.Contains(f.FormerSources, id):
		return ""
	case f.SourceErr != nil:
		return fmt.Sprintf("it clones volume %q, and the claim's data source cannot be checked: %v", id, f.SourceErr)
	case id != f.Source:
		return fmt.Sprintf("it clones volume %q, but the claim's data source gives %q", id, f.Source)
	}
	return ""
}

// wrongSnapshot says why a recorded snapshot source is not the snapshot
// the claim's data source gives now (re-derived through its bound
// content, SnapshotHandle), "" if it is. A snapshot that cannot be
// derived any more is refused: the handle on the claim is the claim
// user's to write, and a replay would restore (and then delete) a volume
// made from whatever snapshot it names.
func wrongSnapshot(id string, f RecordFacts) string {
	switch {
	case id == "":
		return "its content source names no snapshot"
	case f.SourceErr != nil:
		return fmt.Sprintf("it restores snapshot %q, and the claim's data source cannot be checked: %v", id, f.SourceErr)
	case id != f.Snapshot:
		return fmt.Sprintf("it restores snapshot %q, but the claim's data source gives %q", id, f.Snapshot)
	}
	return ""
}
