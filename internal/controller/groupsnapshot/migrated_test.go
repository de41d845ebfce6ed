package groupsnapshot

import (
	"testing"

	vgsv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/informerindex"
)

// A group of migrated in-tree volumes is taken by the endpoint their
// translated node affinity names: untranslated, the affinity is on
// topology.kubernetes.io/zone, a key the EBS driver does not report, which
// named no endpoint at all.
func TestSidecarEndpointOfMigratedVolumes(t *testing.T) {
	const ebs, zoneKey = "ebs.csi.aws.com", "topology.ebs.csi.aws.com/zone"
	inTree := func(id, zone string) *v1.PersistentVolume {
		return &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-" + id}, Spec: v1.PersistentVolumeSpec{
			PersistentVolumeSource: v1.PersistentVolumeSource{AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{VolumeID: id}},
			NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelTopologyZone, Operator: v1.NodeSelectorOpIn, Values: []string{zone}}}}}}}}}
	}
	inf := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	pvInf, err := informerindex.PersistentVolumes(inf)
	if err != nil {
		t.Fatal(err)
	}
	for _, pv := range []*v1.PersistentVolume{inTree("vol-1", "zone-b"), inTree("vol-2", "zone-b")} {
		if err := pvInf.GetIndexer().Add(pv); err != nil {
			t.Fatal(err)
		}
	}
	ep := func(zone string) *csi.Endpoint {
		return &csi.Endpoint{Address: zone, Info: csi.Info{Driver: ebs, Controller: true, GroupSnapshot: true,
			Topology: map[string]string{zoneKey: zone}}}
	}
	a, b := ep("zone-a"), ep("zone-b")
	s := &Sidecar{pool: csi.NewPool(a, b), pvs: pvInf.GetIndexer()}
	gc := &vgsv1.VolumeGroupSnapshotContent{Spec: vgsv1.VolumeGroupSnapshotContentSpec{Driver: ebs,
		Source: vgsv1.VolumeGroupSnapshotContentSource{VolumeHandles: []string{"vol-1", "vol-2"}}}}
	if got, known, err := s.locate(gc); err != nil || !known || got != b {
		t.Fatalf("locate = %v %v %v, want zone-b's endpoint", got, known, err)
	}
}
