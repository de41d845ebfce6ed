package doctor

import (
	"strings"
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/doctor"
	"github.com/volplane/volplane/internal/snapshotapi"
)

// A ready content whose backend snapshot the driver lost is found once
// the driver's ListSnapshots no longer has it, and only then; the advice
// explains and takes the snapshot again, and never deletes the content
// its VolumeSnapshot is bound to.
func TestDoctorFindsAReadyContentWhoseBackendSnapshotIsGone(t *testing.T) {
	e := newEnv(t)
	t.Cleanup(func() { e.cleanUp() })
	e.claim("db", "1Gi", bundle.NetworkClass)
	e.eventually("claim db Bound", e.claimPhase("db", corev1.ClaimBound))
	volume := e.getVolume(e.getClaim("db").Spec.VolumeName).Spec.CSI.VolumeHandle
	e.must(stack.StopLoops())
	t.Cleanup(stack.StartLoops)
	w := newSnapWorld(e)

	vs := &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "lost"},
		Spec: snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To("db")},
			VolumeSnapshotClassName: ptr.To(bundle.NetworkSnapshotClass)}}
	vs, err := w.api.SnapshotV1().VolumeSnapshots(e.ns).Create(e.ctx, vs, metav1.CreateOptions{})
	e.must(err)
	w.snaps = append(w.snaps, vs.Name)
	handle := w.backendSnapshot(snapshotapi.BackendName(vs.UID), volume)
	content := snapshotapi.ContentName(vs.UID)
	w.content(content, vs.Name, vs.UID, snapv1.VolumeSnapshotContentDelete, volume, handle)
	vs.Status = &snapv1.VolumeSnapshotStatus{BoundVolumeSnapshotContentName: ptr.To(content), ReadyToUse: ptr.To(true)}
	_, err = w.api.SnapshotV1().VolumeSnapshots(e.ns).UpdateStatus(e.ctx, vs, metav1.UpdateOptions{})
	e.must(err)

	missing := func() []doctor.Finding {
		var out []doctor.Finding
		for _, f := range e.report(stack.Drivers.Endpoints).Findings {
			if f.Kind == doctor.KindMissingBackendSnapshot && f.Object.Name == content {
				out = append(out, f)
			}
		}
		return out
	}
	if fs := missing(); len(fs) != 0 {
		t.Fatalf("backend snapshot %s exists, yet: %+v", handle, fs)
	}

	e.must(w.ep.DeleteSnapshot(e.ctx, handle, nil)) // the driver loses it
	fs := missing()
	if len(fs) != 1 {
		t.Fatalf("missing backend snapshot %s: %+v", handle, fs)
	}
	f := fs[0]
	if f.Severity != doctor.SeverityProblem || !strings.Contains(f.Problem, "no longer has its backend snapshot "+handle) ||
		!strings.Contains(f.Problem, "every claim restored from it fails") {
		t.Errorf("finding %+v", f)
	}
	var commands []string
	for _, fix := range f.Fixes {
		commands = append(commands, fix.Command)
		if strings.Contains(fix.Command, "delete") {
			t.Errorf("fix %q deletes", fix.Command)
		}
	}
	if len(commands) != 2 || commands[0] != "volplane explain volumesnapshot "+e.ns+"/lost" ||
		!strings.Contains(commands[1], "persistentVolumeClaimName: \"db\"") {
		t.Errorf("fixes %q", commands)
	}
	if _, err := w.api.SnapshotV1().VolumeSnapshotContents().Get(e.ctx, content, metav1.GetOptions{}); err != nil {
		t.Errorf("content %s: %v", content, err)
	}
}
