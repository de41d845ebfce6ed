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

// queuedClaimLoop builds the pvc-protection loop over a fake clientset
// holding the claims and pods, with the claims in its cache and queued, and
// the pods in its cache; the test runs the batches itself (syncNamespace).
// The fake API server keeps no resourceVersions and its watch can replay
// old objects, so running the informers would make the number of batches a
// matter of timing; the batches are what these tests specify.
func queuedClaimLoop(t *testing.T, claims []*v1.PersistentVolumeClaim, pods ...*v1.Pod) (*ClaimLoop, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	l, err := NewClaimLoop(Config{Client: client, Informers: factory, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range claims {
		if _, err := client.CoreV1().PersistentVolumeClaims(c.Namespace).Create(ctx, c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		_ = factory.Core().V1().PersistentVolumeClaims().Informer().GetStore().Add(c)
		l.onClaim(c)
	}
	for _, p := range pods {
		if _, err := client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		_ = factory.Core().V1().Pods().Informer().GetIndexer().Add(p)
	}
	client.ClearActions()
	return l, client
}

// runBatches runs one batch per namespace, as the workers would.
func runBatches(t *testing.T, l *ClaimLoop, namespaces ...string) {
	t.Helper()
	for _, ns := range namespaces {
		if _, err := l.syncNamespace(context.Background(), ns); err != nil {
			t.Fatalf("batch of %s: %v", ns, err)
		}
	}
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

// Unused claims of one namespace queued together cost one live pod list
// between them and one write each; claims of another namespace get their own
// list.
func TestClaimsOfOneNamespaceShareOneLivePodList(t *testing.T) {
	l, client := queuedClaimLoop(t, []*v1.PersistentVolumeClaim{deletedClaim("default", "a"), deletedClaim("default", "b"),
		deletedClaim("default", "c"), deletedClaim("namespace-2", "d")})
	runBatches(t, l, "default", "namespace-2")
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
	l, client := queuedClaimLoop(t, []*v1.PersistentVolumeClaim{deletedClaim("default", "used"), atRest,
		deletedClaim("default", "other")}, scheduledPod("default", "p", "used"))
	runBatches(t, l, "default")
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

// A resync revisits only the claims and volumes last seen with work to do:
// a claim settled since, one deleted, and those at rest from the start are
// not queued again.
func TestResyncRevisitsOnlyWhatWasLastSeenWithWork(t *testing.T) {
	settled := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settled", Finalizers: []string{protection.ClaimFinalizer}}}
	settles, goes := deletedClaim("default", "settles"), deletedClaim("default", "goes")
	l, _ := queuedClaimLoop(t, []*v1.PersistentVolumeClaim{deletedClaim("default", "waits"), settles, goes, settled})
	l.pending.take("default")
	gone := settles.DeepCopy()
	gone.Finalizers = nil
	l.onClaim(gone)
	l.onClaimDeleted(goes)
	l.resync(context.Background())
	if got := l.pending.take("default"); !slices.Equal(got, []string{"waits"}) {
		t.Errorf("claims queued by the resync %v, want [waits]", got)
	}

	client := fake.NewClientset()
	vl, err := NewVolumeLoop(Config{Client: client, Informers: informers.NewSharedInformerFactory(client, 0)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(vl.q.ShutDown)
	needs := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "needs-finalizer"}}
	has := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "has-it", Finalizers: []string{protection.VolumeFinalizer}}}
	vl.onVolume(needs)
	vl.onVolume(has)
	for vl.q.Len() > 0 {
		k, _ := vl.q.Get()
		vl.q.Done(k)
	}
	vl.resync(context.Background())
	if vl.q.Len() != 1 {
		t.Fatalf("volumes queued by the resync: %d, want 1", vl.q.Len())
	}
	if k, _ := vl.q.Get(); k != "needs-finalizer" {
		t.Errorf("volume queued by the resync %q, want needs-finalizer", k)
	}
}

// The volume's finalizer change is a patch on the version decided on: it
// keeps what the loop's copy lacks (a field a cache may leave out, a
// finalizer another loop removed meanwhile) and carries the copy's
// resourceVersion, so a volume changed since is refused and decided again.
func TestVolumeFinalizerWriteKeepsWhatTheCopyLacks(t *testing.T) {
	live := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv", UID: "pv-uid", ResourceVersion: "7",
		Annotations: map[string]string{"big": "kept"}, Finalizers: []string{protection.VolumeFinalizer}}}
	client := fake.NewClientset(live)
	var patches []string
	client.PrependReactor("patch", "persistentvolumes", func(a clienttesting.Action) (bool, runtime.Object, error) {
		patches = append(patches, string(a.(clienttesting.PatchAction).GetPatch()))
		return false, nil, nil
	})
	l, err := NewVolumeLoop(Config{Client: client, Informers: informers.NewSharedInformerFactory(client, 0)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.q.ShutDown)
	copyOf := live.DeepCopy()
	copyOf.Annotations = nil // what a cache dropped
	copyOf.Finalizers = append(copyOf.Finalizers, "external-provisioner.volume.kubernetes.io/finalizer")
	copyOf.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	if err := l.writeVolume(context.Background(), copyOf, protection.DecideVolume(copyOf)); err != nil {
		t.Fatal(err)
	}
	got, err := client.CoreV1().PersistentVolumes().Get(context.Background(), "pv", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Annotations["big"] != "kept" || len(got.Finalizers) != 0 {
		t.Errorf("after the write: annotations %v, finalizers %v; want the annotation kept and no finalizer", got.Annotations, got.Finalizers)
	}
	want := `{"metadata":{"$deleteFromPrimitiveList/finalizers":["kubernetes.io/pv-protection"],"resourceVersion":"7","uid":"pv-uid"}}`
	if len(patches) != 1 || patches[0] != want {
		t.Errorf("patches %q, want [%s]", patches, want)
	}
}
