package explain

import (
	"fmt"
	"strings"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	v1 "k8s.io/api/core/v1"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/provisioning"
	"github.com/volplane/volplane/internal/snapshotapi"
)

// Restore is a claim's data source as the provisioner checks it: the
// VolumeSnapshot it restores from or the claim it clones, what the
// provisioner reads of it, and its verdict. The verdict is the
// provisioner's own check (provisioning.ClaimSource, RestoreSource, and
// for a clone SourceClaimDeleting, SourceClaimProblem,
// SourceVolumeProblem), run on what explain read; the other fields are the
// facts it looked at, for people.
type Restore struct {
	// Kind is the data source's kind: VolumeSnapshot, PersistentVolumeClaim
	// or what the claim names; Namespace is set when a dataSourceRef names
	// one.
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	// State is Usable (the provisioner can use it now), Waiting (it tries
	// again), Refused (final: it fails until the claim or the source
	// changes), Done (the claim is bound) or Unchecked (not read).
	State   string `json:"state"`
	Summary string `json:"summary"`
	// The snapshot's facts: its bound content (and the snapshot that
	// content names back), the drivers, readiness, sizes and volume modes.
	// Bound is whether the snapshot (when it exists) names a bound
	// content.
	Bound           *bool  `json:"bound,omitempty"`
	Content         string `json:"content,omitempty"`
	ContentSnapshot string `json:"contentSnapshot,omitempty"`
	ContentDriver   string `json:"contentDriver,omitempty"`
	ClassDriver     string `json:"classDriver,omitempty"`
	Ready           *bool  `json:"ready,omitempty"`
	RestoreSize     string `json:"restoreSize,omitempty"`
	Request         string `json:"request,omitempty"`
	SourceMode      string `json:"sourceVolumeMode,omitempty"`
	ClaimMode       string `json:"claimVolumeMode,omitempty"`
	// AllowModeChange is the content's
	// snapshot.storage.kubernetes.io/allow-volume-mode-change annotation,
	// "" when it has none.
	AllowModeChange string `json:"allowVolumeModeChange,omitempty"`
	// SourceVolume is a clone source's volume.
	SourceVolume string `json:"sourceVolume,omitempty"`
}

// The states of a Restore.
const (
	RestoreUsable    = "Usable"
	RestoreWaiting   = "Waiting"
	RestoreRefused   = "Refused"
	RestoreDone      = "Done"
	RestoreUnchecked = "Unchecked"
)

// SnapshotToRead is the VolumeSnapshot a claim restores from, as the
// provisioner would read it: always in the claim's own namespace; ok is
// false when the claim restores from none, or names one the provisioner
// refuses (another namespace, another API group), which must not be read.
func SnapshotToRead(claim *v1.PersistentVolumeClaim) (name string, ok bool) {
	kind, name, err := provisioning.ClaimSource(claim)
	return name, err == nil && kind == provisioning.SnapshotSource
}

// restoreOf is the claim's data source report, nil for a claim without
// one.
func restoreOf(claim *v1.PersistentVolumeClaim, f *Facts) *Restore {
	kind, name, group, ns := provisioning.DataSource(claim)
	if kind == "" {
		return nil
	}
	r := &Restore{Kind: kind, Name: name, Namespace: ns}
	if group != "" && group != snapshotapi.Group {
		r.Kind = kind + "." + group
	}
	source, _, err := provisioning.ClaimSource(claim)
	if err != nil {
		r.State, r.Summary = RestoreRefused, Sentence("the provisioner refuses it: "+err.Error())
		return r
	}
	bound := claim.Status.Phase == v1.ClaimBound || claim.Spec.VolumeName != ""
	var class, driver string
	if c := f.FindClass(binding.ClaimClass(claim)); c != nil {
		class = c.Name
		if p, err := binding.ExternalProvisioner(c); err == nil {
			driver = p
		}
	}
	r.ClassDriver = driver
	switch source {
	case provisioning.SnapshotSource:
		err = snapshotRestore(claim, name, class, driver, f, r)
	case provisioning.CloneSource:
		err = cloneSource(claim, name, driver, f, r)
	}
	switch {
	case r.State != "":
	case bound:
		r.State, r.Summary = RestoreDone, "Done: the claim is bound to the volume made from it."
	case class == "":
		r.State, r.Summary = RestoreUnchecked, "Not checked: the claim's class does not exist, so its driver is not known."
	case driver == "":
		r.State, r.Summary = RestoreUnchecked, fmt.Sprintf("Not checked: class %s names no CSI provisioner.", class)
	case err == nil:
		r.State, r.Summary = RestoreUsable, "The provisioner's checks pass: it can make the volume from it."
	case provisioning.IsFinal(err):
		r.State, r.Summary = RestoreRefused, Sentence("the provisioner refuses it: "+err.Error())
	default:
		r.State, r.Summary = RestoreWaiting, Sentence("the provisioner waits and tries again: "+err.Error())
	}
	return r
}

// snapshotRestore fills in what the provisioner reads of the snapshot and
// returns RestoreSource's verdict.
func snapshotRestore(claim *v1.PersistentVolumeClaim, name, class, driver string, f *Facts, r *Restore) error {
	r.Namespace = claim.Namespace
	if f.SnapshotsUnread != "" {
		r.State, r.Summary = RestoreUnchecked, Sentence("not checked: "+f.SnapshotsUnread)
		return nil
	}
	read := provisioning.SnapshotRead{Name: name, Snapshot: f.FindSnapshot(claim.Namespace, name)}
	if read.Snapshot == nil {
		read.SnapshotErr = fmt.Errorf("volumesnapshots.%s %q not found", snapshotapi.Group, name)
	} else {
		vs := read.Snapshot
		if st := vs.Status; st != nil {
			r.Ready = st.ReadyToUse
			if st.RestoreSize != nil {
				r.RestoreSize = st.RestoreSize.String()
			}
		}
		content := provisioning.BoundContent(vs)
		r.Bound = ptrTo(content != "")
		if content != "" {
			r.Content = content
			if read.Content = f.FindContent(content); read.Content == nil {
				read.ContentErr = fmt.Errorf("volumesnapshotcontents.%s %q not found", snapshotapi.Group, content)
			} else {
				contentFacts(read.Content, r)
			}
		}
	}
	size := claim.Spec.Resources.Requests[v1.ResourceStorage]
	r.Request = size.String()
	r.ClaimMode = string(v1.PersistentVolumeFilesystem)
	if m := claim.Spec.VolumeMode; m != nil {
		r.ClaimMode = string(*m)
	}
	if driver == "" {
		return nil
	}
	_, err := provisioning.RestoreSource(claim, read, class, driver)
	return err
}

func contentFacts(c *snapv1.VolumeSnapshotContent, r *Restore) {
	ref := c.Spec.VolumeSnapshotRef
	r.ContentSnapshot = ref.Namespace + "/" + ref.Name
	r.ContentDriver = c.Spec.Driver
	if c.Status != nil && c.Status.RestoreSize != nil && r.RestoreSize == "" {
		r.RestoreSize = fmt.Sprintf("%d bytes", *c.Status.RestoreSize)
	}
	if m := c.Spec.SourceVolumeMode; m != nil {
		r.SourceMode = string(*m)
	}
	r.AllowModeChange = c.Annotations[snapshotapi.AllowVolumeModeChange]
}

// cloneSource fills in the source claim's volume and returns the
// provisioner's verdict on it.
func cloneSource(claim *v1.PersistentVolumeClaim, name, driver string, f *Facts, r *Restore) error {
	r.Namespace = claim.Namespace
	src := f.FindClaim(claim.Namespace, name)
	if src == nil {
		return fmt.Errorf("data source claim %q does not exist", name)
	}
	if err := provisioning.SourceClaimDeleting(claim, src); err != nil {
		return err
	}
	if err := provisioning.SourceClaimProblem(claim, src); err != nil {
		return err
	}
	r.SourceVolume = src.Spec.VolumeName
	pv := f.FindVolume(src.Spec.VolumeName)
	if pv == nil {
		return fmt.Errorf("volume %q of data source claim %q: not found", src.Spec.VolumeName, name)
	}
	if driver == "" {
		return nil
	}
	return provisioning.SourceVolumeProblem(src, pv, driver)
}

// String is the data source in one line: "volumesnapshot NS/NAME".
func (r *Restore) String() string {
	kind := strings.ToLower(r.Kind)
	switch r.Kind {
	case snapshotapi.KindSnapshot:
		kind = "volumesnapshot"
	case "PersistentVolumeClaim":
		kind = "pvc"
	}
	if r.Namespace == "" {
		return kind + " " + r.Name
	}
	return kind + " " + r.Namespace + "/" + r.Name
}

func ptrTo[T any](v T) *T { return &v }
