package snapshotter

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/csi"
)

// ebsZoneKey is the topology key the EBS CSI driver reports; an in-tree
// EBS PV's node affinity is on topology.kubernetes.io/zone until
// csi-translation-lib rewrites it.
const ebsZoneKey = "topology.ebs.csi.aws.com/zone"

// A snapshot of a migrated in-tree volume is taken and deleted through
// the endpoint its translated node affinity names: the untranslated PV's
// affinity is on a key the driver does not report, which named no
// endpoint at all.
func TestMigratedVolumesEndpointIsTheTranslatedAffinitys(t *testing.T) {
	zone := func(z string) *csi.Endpoint {
		return &csi.Endpoint{Info: csi.Info{Driver: "ebs.csi.aws.com", Controller: true, Snapshot: true, ListSnapshots: true,
			Topology: map[string]string{ebsZoneKey: z}}}
	}
	a, b := zone("zone-a"), zone("zone-b")
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"}, Spec: corev1.PersistentVolumeSpec{
		PersistentVolumeSource: corev1.PersistentVolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-1"}},
		NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-b"}}}}}}}}}
	content := readyContent("c1")
	content.Spec.Driver, content.Spec.Source.VolumeHandle = "ebs.csi.aws.com", &[]string{"vol-1"}[0]
	c, _ := buildOver(t, "", csi.NewPool(a, b), []*corev1.PersistentVolume{pv}, content)
	if ep, err := c.sourceEndpoint(content); err != nil || ep != b {
		t.Fatalf("source endpoint %v, %v; want zone-b's", ep, err)
	}
	if ep, err := c.holder(context.Background(), content, "id", nil); err != nil || ep != b {
		t.Fatalf("holder %v, %v; want zone-b's", ep, err)
	}
}
