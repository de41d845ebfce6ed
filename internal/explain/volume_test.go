package explain_test

import (
	"bytes"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	storagehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/volplane/volplane/internal/explain"
)

// A volume's sentence says why it is in its phase and what reclaim does next.
func TestVolumeSummarySaysWhyAndWhatHappensNext(t *testing.T) {
	gone := pvClaim("ns", "old", "uid-old")
	tests := []struct {
		name    string
		pv      *v1.PersistentVolume
		claims  []*v1.PersistentVolumeClaim
		pods    []*v1.Pod
		serving map[string]explain.Provisioner
		want    string
		reclaim string
	}{
		{name: "new", pv: newPV("v", "1Gi", pvPhase(v1.VolumePending)),
			want: "New: the binder has not marked it Available yet."},
		{name: "available, no claim waits", pv: newPV("v", "1Gi"),
			want: "Available; no claim is waiting for a volume."},
		{name: "available, a claim fits", pv: newPV("v", "1Gi"), claims: []*v1.PersistentVolumeClaim{newClaim("a", "1Gi"), newClaim("b", "5Gi")},
			want: "Available; it fits the waiting claim ns/a, which the binder binds next."},
		{name: "available, nothing fits", pv: newPV("v", "1Gi"), claims: []*v1.PersistentVolumeClaim{newClaim("b", "5Gi"), newClaim("c", "1Gi", claimClass("slow"))},
			want: "Available; 0/2 waiting claims fit: 1 other class, 1 too small."},
		{name: "pre-bound", pv: newPV("v", "1Gi", pvClaim("ns", "later", "")),
			want: "Reserved (pre-bound) for claim ns/later, which does not exist yet."},
		{name: "retain", pv: newPV("v", "1Gi", pvPhase(v1.VolumeReleased), gone), reclaim: "Retain",
			want: "Its claim ns/old is gone; policy Retain keeps the volume and its data until you act: give it to one claim with `volplane release pv v --to NAMESPACE/NAME`, or save or wipe the data and `volplane release pv v` gives it to any claim that fits (or delete the PV)."},
		{name: "retain, name reused", pv: newPV("v", "1Gi", pvPhase(v1.VolumeReleased), gone), claims: []*v1.PersistentVolumeClaim{newClaim("old", "1Gi", func(c *v1.PersistentVolumeClaim) { c.UID = "uid-new" })},
			reclaim: "Retain",
			want:    "Its claim ns/old was deleted (a new claim has the name); policy Retain keeps the volume and its data until you act: give it to one claim with `volplane release pv v --to NAMESPACE/NAME`, or save or wipe the data and `volplane release pv v` gives it to any claim that fits (or delete the PV)."},
		{name: "delete", pv: newPV("v", "1Gi", pvPhase(v1.VolumeReleased), gone, pvPolicy(v1.PersistentVolumeReclaimDelete),
			pvCSI("csi.example.com", "h"), pvAnn(storagehelpers.AnnDynamicallyProvisioned, "csi.example.com")), reclaim: "External",
			serving: map[string]explain.Provisioner{"csi.example.com": {Note: "no provisioner is serving csi.example.com"}},
			want:    "Its claim ns/old is gone; policy Delete: csi.example.com deletes the backend volume, then the PV. No provisioner is serving csi.example.com."},
		{name: "delete without deleter", pv: newPV("v", "1Gi", pvPhase(v1.VolumeReleased), gone, pvPolicy(v1.PersistentVolumeReclaimDelete)),
			reclaim: "Failed",
			want:    `Its claim ns/old is gone; reclaim failed: Error getting deleter volume plugin for volume "v": no volume plugin matched. Fix the cause, or delete the PV.`},
		{name: "recycle blocked", pv: newPV("v", "1Gi", pvPhase(v1.VolumeReleased), gone, pvPolicy(v1.PersistentVolumeReclaimRecycle)),
			pods: []*v1.Pod{newPod("web", "n1", "old")}, reclaim: "RecycleBlocked",
			want: "Its claim ns/old is gone; policy Recycle waits: Volume is used by pods: ns/web."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := facts()
			f.Claims, f.Pods, f.Provisioners = tt.claims, tt.pods, tt.serving
			f.Volumes = []*v1.PersistentVolume{tt.pv}
			r := explain.Volume(tt.pv, f)
			if r.Summary != tt.want {
				t.Errorf("summary = %q\nwant      %q", r.Summary, tt.want)
			}
			if r.Reclaim != tt.reclaim {
				t.Errorf("reclaim = %q, want %q", r.Reclaim, tt.reclaim)
			}
		})
	}
}

func TestBoundVolumeSaysWhichClaimAndNode(t *testing.T) {
	pv := newPV("vol", "1Gi", pvCSI("csi.example.com", "h1"))
	claim := newClaim("data", "1Gi", claimBoundTo(pv))
	f := facts()
	f.Claims, f.Volumes = []*v1.PersistentVolumeClaim{claim}, []*v1.PersistentVolume{pv}
	f.Pods = []*v1.Pod{newPod("web", "n1", "data")}
	f.Drivers = []*storagev1.CSIDriver{{}}
	f.Drivers[0].Name, f.Drivers[0].Spec.AttachRequired = "csi.example.com", new(bool)
	r := explain.Volume(pv, f)
	if r.Summary != "Bound to claim ns/data." || r.ClaimState != "Bound" {
		t.Errorf("summary %q, claim state %q", r.Summary, r.ClaimState)
	}
	if len(r.Nodes) != 1 || r.Nodes[0].Summary != "the node does not exist; mounted for web" {
		t.Errorf("nodes = %+v", r.Nodes)
	}
}

func TestDeletingVolumeSaysWhatHoldsIt(t *testing.T) {
	pv := newPV("vol", "1Gi", pvCSI("csi.example.com", "h1"),
		pvDeleting("kubernetes.io/pv-protection", "external-attacher/csi-example-com", storagehelpers.PVDeletionProtectionFinalizer))
	claim := newClaim("data", "1Gi", claimBoundTo(pv))
	f := facts()
	f.Claims, f.Volumes = []*v1.PersistentVolumeClaim{claim}, []*v1.PersistentVolume{pv}
	f.Attachments = []*storagev1.VolumeAttachment{attachmentOf("va1", "vol", "n1", true, "")}
	r := explain.Volume(pv, f)
	want := "Being deleted; kubernetes.io/pv-protection keeps it while it is Bound to ns/data; the attacher keeps it while volumeattachment/va1 exist; csi.example.com deletes the backend volume first."
	if r.Summary != want {
		t.Errorf("summary = %q\nwant      %q", r.Summary, want)
	}
	if join(r.Deletion.HeldBy) != "pvc/data volumeattachment/va1" {
		t.Errorf("held by %v", r.Deletion.HeldBy)
	}
}

// The table fits 80 columns whatever the lengths of names and messages.
func TestTableLinesFitEightyColumns(t *testing.T) {
	long := strings.Repeat("x", 120)
	f := facts()
	f.Volumes = []*v1.PersistentVolume{newPV(long, "1Gi"), newPV("small", "1Gi")}
	for i := range 8 {
		f.Volumes = append(f.Volumes, newPV("v"+strings.Repeat("y", i), "1Gi"))
	}
	claim := newClaim("data", "5Gi", claimAnn(storagehelpers.AnnStorageProvisioner, "csi.example.com"))
	f.Events = []*v1.Event{event(claim, "ProvisioningFailed", strings.Repeat("word ", 60)+long, 1, 1)}
	var buf bytes.Buffer
	if err := explain.Claim(claim, f).Table(&buf); err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(buf.String(), "\n") {
		if n := len([]rune(line)); n > explain.Width && !strings.Contains(line, long) {
			t.Errorf("line %d is %d columns: %q", i+1, n, line)
		}
	}
	if !strings.Contains(buf.String(), "... and 5 more (-o json lists them all)") {
		t.Errorf("a group of 10 should list 5 and say how many more:\n%s", buf.String())
	}
}
