package binder

import (
	"context"
	"strconv"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"
)

// fakeBinder is a binder over the fake clientset whose informers are never
// started: a test puts objects into the informer stores and calls the event
// handlers itself, so it controls the order of every event exactly.
type fakeBinder struct {
	*Controller
	client    *fake.Clientset
	informers informers.SharedInformerFactory
	recorder  *record.FakeRecorder
	clock     *testingclock.FakeClock
}

func newFakeBinder(t testing.TB, objs ...runtime.Object) *fakeBinder {
	t.Helper()
	client := fake.NewClientset(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	recorder := record.NewFakeRecorder(100)
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c, err := New(Config{Client: client, Informers: f, Recorder: recorder, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.claimQ.ShutDown(); c.volumeQ.ShutDown() })
	b := &fakeBinder{Controller: c, client: client, informers: f, recorder: recorder, clock: clk}
	client.PrependReactor("update", "*", bumpResourceVersion)
	client.PrependReactor("create", "pods", podIdentity())
	for _, obj := range objs {
		b.informerAdds(t, obj)
	}
	return b
}

func (b *fakeBinder) store(obj runtime.Object) cache.Store {
	switch obj.(type) {
	case *v1.PersistentVolume:
		return b.informers.Core().V1().PersistentVolumes().Informer().GetStore()
	case *v1.PersistentVolumeClaim:
		return b.informers.Core().V1().PersistentVolumeClaims().Informer().GetStore()
	case *v1.Pod:
		return b.informers.Core().V1().Pods().Informer().GetStore()
	case *storagev1.StorageClass:
		return b.informers.Storage().V1().StorageClasses().Informer().GetStore()
	}
	return nil
}

// informerAdds plays the informer delivering a new object: store, then handler.
func (b *fakeBinder) informerAdds(t testing.TB, obj runtime.Object) {
	t.Helper()
	if err := b.store(obj).Add(obj); err != nil {
		t.Fatal(err)
	}
	switch o := obj.(type) {
	case *v1.PersistentVolume:
		b.onVolume(o)
	case *v1.PersistentVolumeClaim:
		b.onClaim(o)
	case *v1.Pod:
		b.onPod(o)
	case *storagev1.StorageClass:
		b.onClass(o)
	}
}

// informerDeletes plays the informer delivering a delete: store, then handler.
func (b *fakeBinder) informerDeletes(t *testing.T, obj runtime.Object) {
	t.Helper()
	if err := b.store(obj).Delete(obj); err != nil {
		t.Fatal(err)
	}
	switch o := obj.(type) {
	case *v1.PersistentVolume:
		b.onVolumeDeleted(o)
	case *v1.PersistentVolumeClaim:
		b.onClaimDeleted(o)
	case *v1.Pod:
		b.onPod(cache.DeletedFinalStateUnknown{Key: o.Namespace + "/" + o.Name, Obj: o})
	}
}

// duringNext runs fn while the API server handles the next request with this
// verb on this resource, before its answer reaches the binder: fn's events
// are delivered first, the answer after them.
func (b *fakeBinder) duringNext(verb, resource string, fn func()) {
	done := false
	b.client.PrependReactor(verb, resource, func(k8stesting.Action) (bool, runtime.Object, error) {
		if !done {
			done = true
			fn()
		}
		return false, nil, nil
	})
}

var ctx = context.Background()

// podIdentity gives each created pod a fresh UID and a creation time, as
// the API server does (the fake leaves both empty).
func podIdentity() k8stesting.ReactionFunc {
	n := 0
	return func(action k8stesting.Action) (bool, runtime.Object, error) {
		if pod, ok := action.(k8stesting.CreateAction).GetObject().(*v1.Pod); ok {
			n++
			pod.UID = types.UID("created-pod-" + strconv.Itoa(n))
			pod.CreationTimestamp = metav1.Now()
		}
		return false, nil, nil
	}
}

// bumpResourceVersion makes the fake API server answer each update with a
// higher resourceVersion, as etcd does: the binder tells newer copies from
// older ones by it.
func bumpResourceVersion(action k8stesting.Action) (bool, runtime.Object, error) {
	if update, ok := action.(k8stesting.UpdateAction); ok {
		if obj, ok := update.GetObject().(metav1.Object); ok {
			rv, _ := strconv.Atoi(obj.GetResourceVersion())
			obj.SetResourceVersion(strconv.Itoa(rv + 1))
		}
	}
	return false, nil, nil
}
