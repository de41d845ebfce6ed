package manager

import (
	"strings"
	"testing"
	"time"

	snapfake "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/fake"
	snapinformers "github.com/kubernetes-csi/external-snapshotter/client/v8/informers/externalversions"
	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
)

// snapshotAPI is what discovery lists where deploy/crd is installed.
func snapshotAPI() []*metav1.APIResourceList {
	return []*metav1.APIResourceList{
		{GroupVersion: "snapshot.storage.k8s.io/v1", APIResources: []metav1.APIResource{
			{Name: "volumesnapshots"}, {Name: "volumesnapshotcontents"}, {Name: "volumesnapshotclasses"}}},
		{GroupVersion: "groupsnapshot.storage.k8s.io/v1", APIResources: []metav1.APIResource{
			{Name: "volumegroupsnapshots"}, {Name: "volumegroupsnapshotcontents"}, {Name: "volumegroupsnapshotclasses"}}},
	}
}

func snapshotWiring(client *fake.Clientset, elsewhere string) wiring {
	snaps := snapfake.NewSimpleClientset()
	return wiring{Config: Config{SnapshotControllerElsewhere: elsewhere}, Client: client,
		Informers: informers.NewSharedInformerFactory(client, 0), Snapshots: snaps,
		SnapshotInformers: snapinformers.NewSharedInformerFactory(snaps, 0),
		Events:            record.NewBroadcaster(), Metrics: prometheus.NewRegistry()}
}

// Without the snapshot CRDs the row fails at build, naming deploy/crd,
// instead of waiting for caches that never sync.
func TestSnapshotRowFailsWithoutTheCRDs(t *testing.T) {
	_, err := newSnapshot(snapshotWiring(fake.NewClientset(), ""))
	if err == nil || !strings.Contains(err.Error(), "deploy/crd") {
		t.Fatalf("newSnapshot = %v, want an error naming deploy/crd", err)
	}
}

// A recently renewed snapshot-controller-leader Lease in any namespace
// refuses the row, unless told to ignore it.
func TestSnapshotRowRefusesAnotherController(t *testing.T) {
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "snapshots", Name: "snapshot-controller-leader"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("snapshot-controller-0"), LeaseDurationSeconds: ptr.To[int32](15),
			RenewTime: &metav1.MicroTime{Time: time.Now()}}}
	client := fake.NewClientset(lease)
	client.Resources = snapshotAPI()
	if _, err := newSnapshot(snapshotWiring(client, "")); err == nil || !strings.Contains(err.Error(), "another snapshot-controller") {
		t.Fatalf("newSnapshot = %v, want a refusal naming the other snapshot-controller", err)
	}
	client = fake.NewClientset(lease)
	client.Resources = snapshotAPI()
	if _, err := newSnapshot(snapshotWiring(client, "ignore")); err != nil {
		t.Fatalf("newSnapshot with ignore = %v", err)
	}
}
