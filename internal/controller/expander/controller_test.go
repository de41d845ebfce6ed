package expander

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/volplane/volplane/internal/expansion"
)

// fakeLoop is the loop over the fake clientset with informers never
// started: a test fills the stores and calls sync, and sees exactly the
// events and writes of one sync.
type fakeLoop struct {
	*Controller
	client   *fake.Clientset
	recorder *record.FakeRecorder
}

func newFakeLoop(t *testing.T, objs ...runtime.Object) *fakeLoop {
	t.Helper()
	client := fake.NewClientset(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	rec := record.NewFakeRecorder(100)
	c, err := New(Config{Client: client, Informers: f, Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.q.ShutDown)
	for _, obj := range objs {
		switch o := obj.(type) {
		case *v1.PersistentVolumeClaim:
			err = f.Core().V1().PersistentVolumeClaims().Informer().GetStore().Add(o)
		case *v1.PersistentVolume:
			err = f.Core().V1().PersistentVolumes().Informer().GetStore().Add(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return &fakeLoop{Controller: c, client: client, recorder: rec}
}

func (l *fakeLoop) syncClaim() error {
	l.client.ClearActions()
	_, err := l.sync(context.Background(), "ns/data")
	return err
}

// events drains what the sync recorded, as "Type Reason Message".
func (l *fakeLoop) events() []string {
	var out []string
	for {
		select {
		case e := <-l.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// writes lists the API writes of the sync.
func (l *fakeLoop) writes() []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range l.client.Actions() {
		if v := a.GetVerb(); v != "get" && v != "list" && v != "watch" {
			out = append(out, a)
		}
	}
	return out
}

func grownClaim() *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data", UID: "claim-uid", ResourceVersion: "7"},
		Spec: v1.PersistentVolumeClaimSpec{VolumeName: "vol",
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("2Gi")}}},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound,
			Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
	}
}

func boundVolume(src v1.PersistentVolumeSource) *v1.PersistentVolume {
	return &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "vol"}, Spec: v1.PersistentVolumeSpec{
		Capacity:               v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
		ClaimRef:               &v1.ObjectReference{Namespace: "ns", Name: "data", UID: "claim-uid"},
		PersistentVolumeSource: src,
	}}
}

var (
	csiSource = v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: "d.csi.test", VolumeHandle: "h"}}
	ebsSource = v1.PersistentVolumeSource{AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-1"}}
)

func TestGrownCSIClaimGetsTheEventAndNoWrite(t *testing.T) {
	l := newFakeLoop(t, grownClaim(), boundVolume(csiSource))
	if err := l.syncClaim(); err != nil {
		t.Fatal(err)
	}
	want := []string{"Normal ExternalExpanding waiting for an external controller to expand this PVC"}
	if got := l.events(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("events %q, want %q", got, want)
	}
	if w := l.writes(); len(w) != 0 {
		t.Errorf("writes %v, want none", w)
	}
}

func TestGrownMigratedClaimIsAnnotatedThroughTheStatusSubresource(t *testing.T) {
	l := newFakeLoop(t, grownClaim(), boundVolume(ebsSource))
	if err := l.syncClaim(); err != nil {
		t.Fatal(err)
	}
	want := []string{"Normal ExternalExpanding CSI migration enabled for kubernetes.io/aws-ebs; waiting for external resizer to expand the pvc"}
	if got := l.events(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("events %q, want %q", got, want)
	}
	w := l.writes()
	if len(w) != 1 || w[0].GetVerb() != "patch" || w[0].GetSubresource() != "status" {
		t.Fatalf("writes %v, want one patch of persistentvolumeclaims/status", w)
	}
	var body struct {
		Metadata struct {
			ResourceVersion string            `json:"resourceVersion"`
			Annotations     map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(w[0].(k8stesting.PatchAction).GetPatch(), &body); err != nil {
		t.Fatal(err)
	}
	if body.Metadata.ResourceVersion != "7" || body.Metadata.Annotations[expansion.HandOffResizerAnnotation] != "ebs.csi.aws.com" {
		t.Errorf("patch %s, want the resizer annotation ebs.csi.aws.com and resourceVersion 7", w[0].(k8stesting.PatchAction).GetPatch())
	}
}

func TestFailedAnnotationIsAWarningAndARetry(t *testing.T) {
	l := newFakeLoop(t, grownClaim(), boundVolume(ebsSource))
	l.client.PrependReactor("patch", "persistentvolumeclaims", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("injected")
	})
	if err := l.syncClaim(); err == nil {
		t.Fatal("sync succeeded; want an error, for a retry")
	}
	got := l.events()
	want := "Warning ExternalExpanding error setting resizer annotation to pvc ns/data, with error injected"
	if len(got) != 2 || got[1] != want {
		t.Errorf("events %q, want the migration event then %q", got, want)
	}
}

func TestClaimNeedingNothingIsNeitherAnnouncedNorWritten(t *testing.T) {
	claim := grownClaim()
	claim.Spec.Resources.Requests[v1.ResourceStorage] = resource.MustParse("1Gi")
	l := newFakeLoop(t, claim, boundVolume(ebsSource))
	if err := l.syncClaim(); err != nil {
		t.Fatal(err)
	}
	if e, w := l.events(), l.writes(); len(e) != 0 || len(w) != 0 {
		t.Errorf("events %q, writes %v; want none", e, w)
	}
}

func TestClaimWhosePVIsNotCachedIsRetried(t *testing.T) {
	l := newFakeLoop(t, grownClaim())
	if err := l.syncClaim(); err == nil {
		t.Fatal("sync succeeded without the PV; want a retry")
	}
	if e := l.events(); len(e) != 0 {
		t.Errorf("events %q, want none", e)
	}
}

// The reference's triggers: a Bound claim added, or one whose request or
// capacity grew; nothing else.
func TestWhichClaimEventsQueue(t *testing.T) {
	l := newFakeLoop(t)
	bound := grownClaim()
	pending := grownClaim()
	pending.Status.Phase = v1.ClaimPending
	annotated := bound.DeepCopy()
	annotated.Annotations = map[string]string{"x": "y"}
	larger := bound.DeepCopy()
	larger.Spec.Resources.Requests[v1.ResourceStorage] = resource.MustParse("3Gi")
	expanded := bound.DeepCopy()
	expanded.Status.Capacity[v1.ResourceStorage] = resource.MustParse("2Gi")
	lowered := bound.DeepCopy()
	lowered.Spec.Resources.Requests[v1.ResourceStorage] = resource.MustParse("1536Mi")
	tests := []struct {
		name string
		do   func()
		want int
	}{
		{"a Bound claim added", func() { l.onClaim(bound) }, 1},
		{"a Pending claim added", func() { l.onClaim(pending) }, 0},
		{"an update of metadata only", func() { l.onClaimUpdate(bound, annotated) }, 0},
		{"a raised request", func() { l.onClaimUpdate(bound, larger) }, 1},
		{"a grown capacity", func() { l.onClaimUpdate(bound, expanded) }, 1},
		{"a lowered request", func() { l.onClaimUpdate(bound, lowered) }, 0},
		{"a raised request of a Pending claim", func() {
			l.onClaimUpdate(pending, func() *v1.PersistentVolumeClaim {
				c := pending.DeepCopy()
				c.Spec.Resources.Requests[v1.ResourceStorage] = resource.MustParse("3Gi")
				return c
			}())
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.do()
			if got := l.q.Len(); got != tt.want {
				t.Errorf("queued %d, want %d", got, tt.want)
			}
			for l.q.Len() > 0 {
				key, _ := l.q.Get()
				l.q.Done(key)
			}
		})
	}
}
