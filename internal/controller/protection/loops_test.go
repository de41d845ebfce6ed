package protection

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/volplane/volplane/internal/protection"
)

func deletedClaim(ns, name string) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name),
		DeletionTimestamp: &metav1.Time{Time: time.Now()}, Finalizers: []string{protection.ClaimFinalizer}}}
}

func scheduledPod(ns, name, claim string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: "pod-uid"},
		Spec: v1.PodSpec{NodeName: "node1", Volumes: []v1.Volume{{Name: "v",
			VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}}}
}

// runClaimLoop runs the pvc-protection loop over a fake clientset holding
// objs until the test ends.
func runClaimLoop(t *testing.T, objs ...runtime.Object) *fake.Clientset {
	t.Helper()
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	l, err := NewClaimLoop(Config{Client: client, Informers: factory, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	factory.Start(ctx.Done())
	go func() { done <- l.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		factory.Shutdown()
	})
	return client
}

// actions returns the client's writes and pod lists, as "verb resource ns".
func actions(client *fake.Clientset) []string {
	var out []string
	for _, a := range client.Actions() {
		if a.GetVerb() == "list" && a.GetNamespace() == "" || a.GetVerb() == "watch" {
			continue // the informers' own, over every namespace
		}
		out = append(out, a.GetVerb()+" "+a.GetResource().Resource+" "+a.GetNamespace())
	}
	return out
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%s: not reached", what)
		}
	}
}

// Unused claims of one namespace queued together cost one live pod list
// between them and one write each; claims of another namespace get their own
// list.
func TestClaimsOfOneNamespaceShareOneLivePodList(t *testing.T) {
	client := runClaimLoop(t, deletedClaim("default", "a"), deletedClaim("default", "b"), deletedClaim("default", "c"),
		deletedClaim("namespace-2", "d"))
	waitFor(t, "four patches", func() bool { return len(actions(client)) >= 6 })
	got := actions(client)
	slices.Sort(got)
	want := []string{"list pods default", "list pods namespace-2",
		"patch persistentvolumeclaims default", "patch persistentvolumeclaims default", "patch persistentvolumeclaims default",
		"patch persistentvolumeclaims namespace-2"}
	if !slices.Equal(got, want) {
		t.Errorf("actions %v, want %v", got, want)
	}
	for _, name := range []string{"a", "b", "c"} {
		c, err := client.CoreV1().PersistentVolumeClaims("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil || slices.Contains(c.Finalizers, protection.ClaimFinalizer) {
			t.Errorf("claim %s: %v, finalizers %v", name, err, c.Finalizers)
		}
	}
}

// A claim a cached pod uses is kept without asking the API server, and a
// claim at rest costs nothing.
func TestClaimUsedByACachedPodCostsNoRequest(t *testing.T) {
	atRest := deletedClaim("default", "rest")
	atRest.DeletionTimestamp = nil
	client := runClaimLoop(t, deletedClaim("default", "used"), scheduledPod("default", "p", "used"), atRest,
		deletedClaim("default", "other"))
	waitFor(t, "the unused claim released", func() bool { return len(actions(client)) >= 2 })
	want := []string{"list pods default", "patch persistentvolumeclaims default"}
	if got := actions(client); !slices.Equal(got, want) {
		t.Errorf("actions %v, want %v", got, want)
	}
	c, _ := client.CoreV1().PersistentVolumeClaims("default").Get(context.Background(), "used", metav1.GetOptions{})
	if !slices.Contains(c.Finalizers, protection.ClaimFinalizer) {
		t.Error("the used claim lost its finalizer")
	}
}

// A pod the informer has not seen yet is found by the live list, and its
// claim is kept.
func TestPodMissingFromTheCacheIsFoundByTheLiveList(t *testing.T) {
	client := fake.NewClientset(deletedClaim("default", "pvc1"))
	late := scheduledPod("default", "late", "pvc1")
	// The pod exists for the API server; the informers are never started,
	// so the cache holds only the claim put there below.
	client.PrependReactor("list", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, &v1.PodList{Items: []v1.Pod{*late}}, nil
	})
	factory := informers.NewSharedInformerFactory(client, 0)
	l, err := NewClaimLoop(Config{Client: client, Informers: factory, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	claim, _ := client.CoreV1().PersistentVolumeClaims("default").Get(context.Background(), "pvc1", metav1.GetOptions{})
	_ = factory.Core().V1().PersistentVolumeClaims().Informer().GetStore().Add(claim)
	b := &batch{ns: "default"}
	w, err := l.decide(context.Background(), b, "pvc1")
	if err != nil || w != nil || !b.listed {
		t.Errorf("write %v err %v listed %v; want the claim kept after a live list", w, err, b.listed)
	}
}
