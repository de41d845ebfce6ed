package explain_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	storagehelpers "k8s.io/component-helpers/storage/volume"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/explain"
)

// Every situation the binder can leave a claim in has its own sentence,
// and the binder's next step is reported with it.
func TestClaimSummarySaysWhatTheClaimWaitsFor(t *testing.T) {
	bound := newPV("bound", "1Gi")
	boundClaim := newClaim("data", "1Gi", claimBoundTo(bound))
	halfBound := newPV("half", "1Gi")
	halfClaim := newClaim("data", "1Gi", claimBoundTo(halfBound))
	halfBound.Status.Phase = v1.VolumeAvailable
	lostClaim := newClaim("data", "1Gi", claimBoundTo(newPV("gone", "1Gi")))
	tests := []struct {
		name    string
		claim   *v1.PersistentVolumeClaim
		volumes []*v1.PersistentVolume
		pods    []*v1.Pod
		serving map[string]explain.Provisioner
		want    string
		next    string
	}{
		{name: "a volume fits", claim: newClaim("data", "1Gi"), volumes: []*v1.PersistentVolume{newPV("a", "2Gi")},
			want: "Volume a fits; the binder binds it at its next sync of the claim.", next: "Bind"},
		{name: "no class, no default", claim: newClaim("data", "1Gi", claimNoClass()),
			want: "Waiting: no persistent volumes available for this claim and no storage class is set.", next: "Pending"},
		{name: "class missing", claim: newClaim("data", "1Gi", claimClass("gold")),
			want: `Cannot provision a volume: storageclass.storage.k8s.io "gold" not found.`, next: "Pending"},
		{name: "no-provisioner class", claim: newClaim("data", "1Gi", claimClass("manual")),
			want: "No volume fits, and class manual provisions none (kubernetes.io/no-provisioner): create a volume that fits.", next: "Pending"},
		{name: "provisioning", claim: newClaim("data", "1Gi"),
			want: "No volume fits; waiting for csi.example.com to provision one.", next: "Provision"},
		{name: "provisioner not served", claim: newClaim("data", "1Gi"),
			serving: map[string]explain.Provisioner{"csi.example.com": {Note: "no provisioner is serving csi.example.com"}},
			want:    "No volume fits, and nothing serves its provisioner csi.example.com.", next: "Provision"},
		{name: "served on other nodes only", claim: newClaim("data", "1Gi", claimClass("late"), claimAnn(storagehelpers.AnnSelectedNode, "n3")),
			serving: map[string]explain.Provisioner{"csi.example.com": {Serving: true, Nodes: []string{"n1", "n2"}}},
			want:    "No volume fits, and csi.example.com is served on nodes n1, n2 but not on the selected node n3.", next: "Provision"},
		{name: "first consumer, no pod", claim: newClaim("data", "1Gi", claimClass("late")),
			want: "Waiting for a pod that uses the claim: its class binds on the first consumer.", next: "Pending"},
		{name: "first consumer, pod unscheduled", claim: newClaim("data", "1Gi", claimClass("late")),
			pods: []*v1.Pod{newPod("web", "", "data")},
			want: "Waiting for pod web to be scheduled: its class binds on the first consumer.", next: "Pending"},
		{name: "first consumer, node selected", claim: newClaim("data", "1Gi", claimClass("late"), claimAnn(storagehelpers.AnnSelectedNode, "n1")),
			want: "No volume fits; waiting for csi.example.com to provision one.", next: "Provision"},
		{name: "requested volume missing", claim: newClaim("data", "1Gi", func(c *v1.PersistentVolumeClaim) { c.Spec.VolumeName = "mine" }),
			want: "Waiting for volume mine, which the claim names and which does not exist.", next: "Pending"},
		{name: "requested volume too small", claim: newClaim("data", "5Gi", func(c *v1.PersistentVolumeClaim) { c.Spec.VolumeName = "mine" }),
			volumes: []*v1.PersistentVolume{newPV("mine", "1Gi")},
			want:    `Cannot bind to requested volume "mine": requested PV is too small.`, next: "Pending"},
		{name: "bound", claim: boundClaim, volumes: []*v1.PersistentVolume{bound},
			want: "Bound to volume bound (1Gi).", next: "None"},
		{name: "bind not finished", claim: halfClaim, volumes: []*v1.PersistentVolume{halfBound},
			want: "Being bound to volume half; the binder finishes at its next sync.", next: "Bind"},
		{name: "lost", claim: lostClaim,
			want: "Lost: Bound claim has lost its PersistentVolume. Data on the volume is lost!", next: "Lost"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := facts()
			f.Volumes, f.Pods, f.Provisioners = tt.volumes, tt.pods, tt.serving
			r := explain.Claim(tt.claim, f)
			if r.Summary != tt.want {
				t.Errorf("summary = %q\nwant      %q", r.Summary, tt.want)
			}
			if r.Next != tt.next {
				t.Errorf("next = %s, want %s", r.Next, tt.next)
			}
		})
	}
}

func TestClaimListsEveryVolumeWithTheBindersVerdict(t *testing.T) {
	f := facts()
	f.Volumes = []*v1.PersistentVolume{newPV("small", "1Gi"), newPV("big", "9Gi"), newPV("fits", "5Gi"),
		newPV("slow", "9Gi", func(pv *v1.PersistentVolume) { pv.Spec.StorageClassName = "slow" })}
	r := explain.Claim(newClaim("data", "5Gi"), f)
	if r.Volumes == nil || r.Volumes.Chosen != "fits" {
		t.Fatalf("volumes = %+v, want fits chosen", r.Volumes)
	}
	want := "2/4 volumes available: 1 other class, 1 too small, 1 fit but larger"
	if r.Volumes.Summary != want {
		t.Errorf("tally = %q\nwant    %q", r.Volumes.Summary, want)
	}
	var names []string
	for _, v := range r.Volumes.Verdicts {
		names = append(names, v.Name+":"+string(v.Reason))
	}
	if got := join(names); got != "big:LargerThanChosen slow:ClassMismatch small:TooSmall" {
		t.Errorf("verdicts = %s", got)
	}
}

func TestWaitForFirstConsumerClaimNamesThePodsItWaitsFor(t *testing.T) {
	f := facts()
	f.Pods = []*v1.Pod{newPod("b", "", "data"), newPod("a", "", "data"), newPod("running", "n1", "data"), newPod("other", "", "x")}
	r := explain.Claim(newClaim("data", "1Gi", claimClass("late")), f)
	if got := join(r.WaitingForPods); got != "a b" {
		t.Errorf("waiting for %q, want a b", got)
	}
}

func TestClaimReportsProvisioningAttemptsAndTheLastError(t *testing.T) {
	claim := newClaim("data", "1Gi", claimAnn(storagehelpers.AnnStorageProvisioner, "csi.example.com"))
	f := facts()
	f.Events = []*v1.Event{
		event(claim, "Provisioning", "External provisioner is provisioning volume", 3, 0),
		event(claim, "ProvisioningFailed", "first error", 1, 1),
		event(claim, "ProvisioningFailed", "last error", 2, 5),
		event(newClaim("other", "1Gi"), "ProvisioningFailed", "not ours", 1, 9),
	}
	p := explain.Claim(claim, f).Provisioning
	if p == nil || p.Attempts != 3 || p.Failures != 3 || p.LastError != "last error" {
		t.Errorf("provisioning = %+v, want 3 attempts, 3 failures, last error", p)
	}
}

func TestBoundClaimShowsAttachAndMountPerNode(t *testing.T) {
	pv := newPV("vol", "1Gi", pvCSI("csi.example.com", "h1"))
	claim := newClaim("data", "1Gi", claimBoundTo(pv))
	f := facts()
	f.Volumes = []*v1.PersistentVolume{pv}
	late := newPod("late", "n2", "data")
	late.UID, late.Status.Phase = "uid-late", v1.PodPending
	f.Pods = []*v1.Pod{newPod("web", "n1", "data"), late}
	f.Events = []*v1.Event{{InvolvedObject: v1.ObjectReference{Kind: "Pod", UID: late.UID}, Reason: "FailedMount",
		Message: "timed out waiting for the condition"}}
	f.Nodes = []*v1.Node{{}, {}}
	f.Nodes[0].Name, f.Nodes[1].Name = "n1", "n2"
	f.Nodes[0].Status.VolumesInUse = []v1.UniqueVolumeName{"kubernetes.io/csi/csi.example.com^h1"}
	f.Attachments = []*storagev1.VolumeAttachment{attachmentOf("va1", "vol", "n1", true, ""), attachmentOf("va2", "vol", "n2", false, "timed out")}
	r := explain.Claim(claim, f)
	want := []string{"n1: attached; mounted for web",
		"n2: attach failed: timed out; not mounted yet for late (timed out waiting for the condition)"}
	var got []string
	for _, u := range r.Nodes {
		got = append(got, u.Node+": "+u.Summary)
	}
	if join(got) != join(want) {
		t.Errorf("nodes =\n%q\nwant\n%q", got, want)
	}
}

func TestDeletingClaimNamesThePodsHoldingIt(t *testing.T) {
	pv := newPV("vol", "1Gi")
	claim := newClaim("data", "1Gi", claimBoundTo(pv), claimDeleting())
	f := facts()
	f.Volumes = []*v1.PersistentVolume{pv}
	f.Pods = []*v1.Pod{newPod("web", "n1", "data"), newPod("api", "n2", "data"), newPod("pending", "", "data")}
	r := explain.Claim(claim, f)
	want := "Being deleted; kubernetes.io/pvc-protection keeps it until pod/api and pod/web stop using it."
	if r.Summary != want {
		t.Errorf("summary = %q\nwant      %q", r.Summary, want)
	}
	f.Pods = nil
	if got := explain.Claim(claim, f).Summary; got != "Being deleted; no pod uses it, so the pvc-protection controller removes kubernetes.io/pvc-protection at its next sync (is it running?)." {
		t.Errorf("unused: summary = %q", got)
	}
}

func TestBoundClaimReportsAPendingExpansionAndModification(t *testing.T) {
	pv := newPV("vol", "1Gi")
	claim := newClaim("data", "1Gi", claimBoundTo(pv))
	claim.Spec.Resources.Requests[v1.ResourceStorage] = resource.MustParse("2Gi")
	claim.Status.AllocatedResourceStatuses = map[v1.ResourceName]v1.ClaimResourceStatus{v1.ResourceStorage: v1.PersistentVolumeClaimNodeResizePending}
	claim.Status.Conditions = []v1.PersistentVolumeClaimCondition{{Type: v1.PersistentVolumeClaimFileSystemResizePending,
		Status: v1.ConditionTrue, Message: "Waiting for user to (re-)start a pod to finish file system resize of volume on node."}}
	claim.Spec.VolumeAttributesClassName = ptr.To("gold")
	claim.Status.CurrentVolumeAttributesClassName = ptr.To("silver")
	claim.Status.ModifyVolumeStatus = &v1.ModifyVolumeStatus{TargetVolumeAttributesClassName: "gold", Status: v1.PersistentVolumeClaimModifyVolumeInProgress}
	f := facts()
	f.Volumes = []*v1.PersistentVolume{pv}
	r := explain.Claim(claim, f)
	if r.Expansion == nil || r.Expansion.Summary != "Expanding from 1Gi to 2Gi (NodeResizePending): Waiting for user to (re-)start a pod to finish file system resize of volume on node." {
		t.Errorf("expansion = %+v", r.Expansion)
	}
	if r.Modification == nil || r.Modification.Summary != "Changing the volume attributes class from silver to gold (InProgress)." {
		t.Errorf("modification = %+v", r.Modification)
	}
}
