package expansion

import (
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Builders with defaults, named hand* so they never meet the resizer's:
// claim ns/data (uid claim-uid) Bound to volume vol, request and capacity
// 1Gi; PV vol of CSI driver d.csi.test, 1Gi, claimRef naming the claim.

func handClaim(mods ...func(*v1.PersistentVolumeClaim)) *v1.PersistentVolumeClaim {
	c := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data", UID: "claim-uid"},
		Spec: v1.PersistentVolumeClaimSpec{VolumeName: "vol",
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}}},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound,
			Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
	}
	for _, m := range mods {
		m(c)
	}
	return c
}

func handRequest(size string) func(*v1.PersistentVolumeClaim) {
	return func(c *v1.PersistentVolumeClaim) {
		c.Spec.Resources.Requests[v1.ResourceStorage] = resource.MustParse(size)
	}
}

func handVolume(mods ...func(*v1.PersistentVolume)) *v1.PersistentVolume {
	p := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "vol"}, Spec: v1.PersistentVolumeSpec{
		Capacity:               v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
		ClaimRef:               &v1.ObjectReference{Namespace: "ns", Name: "data", UID: "claim-uid"},
		PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: "d.csi.test", VolumeHandle: "h"}},
	}}
	for _, m := range mods {
		m(p)
	}
	return p
}

func handSource(src v1.PersistentVolumeSource) func(*v1.PersistentVolume) {
	return func(p *v1.PersistentVolume) { p.Spec.PersistentVolumeSource = src }
}

var (
	handEBS = handSource(v1.PersistentVolumeSource{AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-1"}})
	handGCE = handSource(v1.PersistentVolumeSource{GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: "disk-1"}})
	handNFS = handSource(v1.PersistentVolumeSource{NFS: &v1.NFSVolumeSource{Server: "nfs", Path: "/x"}})
)

func TestDecideHandOff(t *testing.T) {
	external := []HandOffEvent{{Type: v1.EventTypeNormal, Reason: "ExternalExpanding",
		Message: "waiting for an external controller to expand this PVC"}}
	ebsEvent := []HandOffEvent{{Type: v1.EventTypeNormal, Reason: "ExternalExpanding",
		Message: "CSI migration enabled for kubernetes.io/aws-ebs; waiting for external resizer to expand the pvc"}}
	tests := []struct {
		name         string
		claim        *v1.PersistentVolumeClaim
		pv           *v1.PersistentVolume
		want         HandOffReason
		wantEvents   []HandOffEvent
		wantAnnotate string
		wantRetry    bool
	}{
		{name: "a pending claim needs nothing",
			claim: handClaim(handRequest("2Gi"), func(c *v1.PersistentVolumeClaim) { c.Status.Phase = v1.ClaimPending }),
			pv:    handVolume(), want: HandReasonNotBound},
		{name: "a bound claim without a volume name needs nothing",
			claim: handClaim(handRequest("2Gi"), func(c *v1.PersistentVolumeClaim) { c.Spec.VolumeName = "" }),
			want:  HandReasonNotBound},
		{name: "a request equal to the capacity needs nothing",
			claim: handClaim(), pv: handVolume(), want: HandReasonNotGrown},
		{name: "a request lowered below the capacity needs nothing",
			claim: handClaim(handRequest("512Mi")), pv: handVolume(), want: HandReasonNotGrown},
		{name: "a claim needing nothing needs no volume either",
			claim: handClaim(), want: HandReasonNotGrown},
		{name: "a grown CSI claim is the external resizer's: one Normal event, nothing written",
			claim: handClaim(handRequest("2Gi")), pv: handVolume(), want: HandReasonExternal, wantEvents: external},
		{name: "a bound claim with no capacity yet counts as grown",
			claim: handClaim(func(c *v1.PersistentVolumeClaim) { c.Status.Capacity = nil }), pv: handVolume(),
			want: HandReasonExternal, wantEvents: external},
		{name: "a PV with the pre-resize annotation is handed off at any request",
			claim: handClaim(),
			pv: handVolume(func(p *v1.PersistentVolume) {
				p.Annotations = map[string]string{HandOffPreResizeAnnotation: "1Gi"}
			}),
			want: HandReasonExternal, wantEvents: external},
		{name: "a grown NFS claim is the external resizer's too (no in-tree plugin expands)",
			claim: handClaim(handRequest("2Gi")), pv: handVolume(handNFS), want: HandReasonExternal, wantEvents: external},
		{name: "a missing PV is retried",
			claim: handClaim(handRequest("2Gi")), want: HandReasonVolumeMissing, wantRetry: true},
		{name: "a PV bound to another claim of that name is retried",
			claim: handClaim(handRequest("2Gi")),
			pv:    handVolume(func(p *v1.PersistentVolume) { p.Spec.ClaimRef.UID = "other" }),
			want:  HandReasonVolumeNotBoundToClaim, wantRetry: true},
		{name: "a PV without claimRef is retried",
			claim: handClaim(handRequest("2Gi")),
			pv:    handVolume(func(p *v1.PersistentVolume) { p.Spec.ClaimRef = nil }),
			want:  HandReasonVolumeNotBoundToClaim, wantRetry: true},
		{name: "a grown aws-ebs claim is announced and annotated with the CSI driver",
			claim: handClaim(handRequest("2Gi")), pv: handVolume(handEBS),
			want: HandReasonMigrated, wantEvents: ebsEvent, wantAnnotate: "ebs.csi.aws.com"},
		{name: "a grown gce-pd claim names the GCE PD CSI driver",
			claim: handClaim(handRequest("2Gi")), pv: handVolume(handGCE),
			want: HandReasonMigrated, wantAnnotate: "pd.csi.storage.gke.io",
			wantEvents: []HandOffEvent{{Type: v1.EventTypeNormal, Reason: "ExternalExpanding",
				Message: "CSI migration enabled for kubernetes.io/gce-pd; waiting for external resizer to expand the pvc"}}},
		{name: "an annotated migrated claim gets the event again but no write",
			claim: handClaim(handRequest("2Gi"), func(c *v1.PersistentVolumeClaim) {
				c.Annotations = map[string]string{HandOffResizerAnnotation: "ebs.csi.aws.com"}
			}),
			pv: handVolume(handEBS), want: HandReasonMigrated, wantEvents: ebsEvent},
		{name: "a migrated claim annotated with another driver is annotated again",
			claim: handClaim(handRequest("2Gi"), func(c *v1.PersistentVolumeClaim) {
				c.Annotations = map[string]string{HandOffResizerAnnotation: "someone.else"}
			}),
			pv: handVolume(handEBS), want: HandReasonMigrated, wantEvents: ebsEvent, wantAnnotate: "ebs.csi.aws.com"},
		{name: "a FlexVolume PV is left alone",
			claim: handClaim(handRequest("2Gi")),
			pv:    handVolume(handSource(v1.PersistentVolumeSource{FlexVolume: &v1.FlexPersistentVolumeSource{Driver: "x/y"}})),
			want:  HandReasonFlexVolume},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			claimBefore, pvBefore := tt.claim.DeepCopy(), tt.pv.DeepCopy()
			got := DecideHandOff(tt.claim, tt.pv)
			if got.Reason != tt.want {
				t.Errorf("reason %s, want %s (%v)", got.Reason, tt.want, got)
			}
			if !equality.Semantic.DeepEqual(got.Events, tt.wantEvents) {
				t.Errorf("events %+v, want %+v", got.Events, tt.wantEvents)
			}
			if got.Annotate != tt.wantAnnotate {
				t.Errorf("annotate %q, want %q", got.Annotate, tt.wantAnnotate)
			}
			if (got.Retry != nil) != tt.wantRetry {
				t.Errorf("retry %v, want retry %v", got.Retry, tt.wantRetry)
			}
			if !equality.Semantic.DeepEqual(tt.claim, claimBefore) || !equality.Semantic.DeepEqual(tt.pv, pvBefore) {
				t.Error("DecideHandOff changed its claim or PV")
			}
		})
	}
}

func TestHandOffWarningTextsAreTheReferences(t *testing.T) {
	err := errors.New("boom")
	got := HandOffAnnotateFailed(handClaim(), err)
	want := HandOffEvent{Type: v1.EventTypeWarning, Reason: "ExternalExpanding",
		Message: "error setting resizer annotation to pvc ns/data, with error boom"}
	if got != want {
		t.Errorf("annotate failure event %+v, want %+v", got, want)
	}
	if got := HandOffNoCSINameMessage("ns/data", err); got != "error getting CSI driver name for pvc ns/data, with error boom" {
		t.Errorf("no CSI name text %q", got)
	}
}

// The hand-off annotation is written once: a claim that names the driver
// already needs no write.
func TestWithResizerSetsTheAnnotationOnce(t *testing.T) {
	c := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"keep": "me"}}}
	out := WithResizer(c, "ebs.csi.aws.com")
	if out == nil || out.Annotations[HandOffResizerAnnotation] != "ebs.csi.aws.com" || out.Annotations["keep"] != "me" {
		t.Fatalf("annotated %v", out)
	}
	if _, ok := c.Annotations[HandOffResizerAnnotation]; ok {
		t.Error("the claim given was changed")
	}
	if WithResizer(out, "ebs.csi.aws.com") != nil {
		t.Error("annotated again")
	}
}
