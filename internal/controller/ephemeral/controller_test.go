package ephemeral

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
)

// fixture is the loop over a fake clientset, its caches filled by hand;
// the test runs sync itself.
func fixture(t *testing.T, objs ...any) (*Controller, *fake.Clientset, *record.FakeRecorder, *prometheus.Registry) {
	t.Helper()
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	rec := record.NewFakeRecorder(10)
	reg := prometheus.NewRegistry()
	c, err := New(Config{Client: client, Informers: factory, Recorder: rec, Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		switch o := o.(type) {
		case *v1.Pod:
			_ = factory.Core().V1().Pods().Informer().GetIndexer().Add(o)
		case *v1.PersistentVolumeClaim:
			_ = factory.Core().V1().PersistentVolumeClaims().Informer().GetIndexer().Add(o)
			if _, err := client.CoreV1().PersistentVolumeClaims(o.Namespace).Create(context.Background(), o, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	client.ClearActions()
	return c, client, rec, reg
}

func podWith(vols ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "ns", UID: "pod-uid"}}
	for _, v := range vols {
		p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: v, VolumeSource: v1.VolumeSource{
			Ephemeral: &v1.EphemeralVolumeSource{VolumeClaimTemplate: &v1.PersistentVolumeClaimTemplate{}}}})
	}
	return p
}

// A missing claim costs one create, counted by the reference's metric; a
// claim the pod does not control costs no write, and the pod gets the
// reference's warning and is retried.
func TestSyncCreatesMissingClaimsAndWarnsOnAConflict(t *testing.T) {
	c, client, rec, reg := fixture(t, podWith("scratch"))
	if _, err := c.sync(context.Background(), "ns/app"); err != nil {
		t.Fatal(err)
	}
	if a := client.Actions(); len(a) != 1 || a[0].GetVerb() != "create" || a[0].GetResource().Resource != "persistentvolumeclaims" {
		t.Errorf("actions %v", a)
	}
	if got := testutil.ToFloat64(c.metrics.attempts); got != 1 {
		t.Errorf("create_total %v", got)
	}
	if n, err := testutil.GatherAndCount(reg, "ephemeral_volume_controller_create_total", "ephemeral_volume_controller_create_failures_total"); err != nil || n != 2 {
		t.Errorf("registered series %d, %v", n, err)
	}

	foreign := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "app-scratch", Namespace: "ns"}}
	c, client, rec, _ = fixture(t, podWith("scratch"), foreign)
	if _, err := c.sync(context.Background(), "ns/app"); err == nil {
		t.Error("a conflict was not retried")
	}
	if a := client.Actions(); len(a) != 0 {
		t.Errorf("the foreign claim was written: %v", a)
	}
	select {
	case ev := <-rec.Events:
		want := "Warning FailedBinding ephemeral volume scratch: PVC ns/app-scratch was not created for pod ns/app (pod is not owner)"
		if !strings.HasPrefix(ev, want) {
			t.Errorf("event %q, want %q", ev, want)
		}
	default:
		t.Error("no event")
	}
}
