package provisioning

import (
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

func TestBuildRequest(t *testing.T) {
	topo := Driver{Name: testDriver, Accessibility: true, Clone: true}
	keys := []string{topoKey}
	nodes := []*v1.Node{node("b"), node("a"), {}} // the unlabelled node is no segment
	seg := func(n string) string { return topoKey + "=" + n }
	cases := []struct {
		name      string
		in        RequestFacts
		wantErr   string
		requisite []string
		preferred []string
		check     func(*testing.T, *csipb.CreateVolumeRequest)
	}{{
		name: "name, size, parameters minus the reserved ones, mount capability",
		in: RequestFacts{Claim: claim(), Driver: Driver{Name: testDriver}, Class: class(func(c *storagev1.StorageClass) {
			c.Parameters = map[string]string{"kind": "ssd", paramFSType: "ext4", reservedPrefix + "provisioner-secret-name": "s"}
			c.MountOptions = []string{"noatime"}
		})},
		check: func(t *testing.T, r *csipb.CreateVolumeRequest) {
			if r.Name != "pvc-uid-1" || r.CapacityRange.RequiredBytes != 1<<20 {
				t.Errorf("name %s size %d", r.Name, r.CapacityRange.RequiredBytes)
			}
			if len(r.Parameters) != 1 || r.Parameters["kind"] != "ssd" {
				t.Errorf("parameters %v, want only kind=ssd", r.Parameters)
			}
			m := r.VolumeCapabilities[0].GetMount()
			if m == nil || m.FsType != "ext4" || strings.Join(m.MountFlags, ",") != "noatime" ||
				r.VolumeCapabilities[0].AccessMode.Mode != csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER {
				t.Errorf("capability %v", r.VolumeCapabilities[0])
			}
			if r.AccessibilityRequirements != nil {
				t.Error("a driver without accessibility constraints gets no requirements")
			}
		},
	}, {
		name: "block, one capability per access mode",
		in: RequestFacts{Driver: Driver{}, Class: class(), Claim: claim(func(c *v1.PersistentVolumeClaim) {
			c.Spec.VolumeMode = ptr.To(v1.PersistentVolumeBlock)
			c.Spec.AccessModes = []v1.PersistentVolumeAccessMode{v1.ReadOnlyMany, v1.ReadWriteMany, v1.ReadWriteOncePod}
		})},
		check: func(t *testing.T, r *csipb.CreateVolumeRequest) {
			want := []csipb.VolumeCapability_AccessMode_Mode{csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY,
				csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER, csipb.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER}
			for i, c := range r.VolumeCapabilities {
				if c.GetBlock() == nil || c.AccessMode.Mode != want[i] {
					t.Errorf("capability %d: %v", i, c)
				}
			}
		},
	}, {
		name: "a size beyond int64 is refused, not wrapped to a small one",
		in: RequestFacts{Claim: claim(func(c *v1.PersistentVolumeClaim) {
			c.Spec.Resources.Requests = v1.ResourceList{v1.ResourceStorage: resource.MustParse("18446744074783293440")}
		}), Class: class(), Driver: Driver{Name: testDriver}},
		wantErr: "more than a volume can be asked for",
	}, {
		name:    "unknown reserved parameter is named",
		in:      RequestFacts{Claim: claim(), Class: class(func(c *storagev1.StorageClass) { c.Parameters = map[string]string{reservedPrefix + "nope": "x"} })},
		wantErr: "csi.storage.k8s.io/nope",
	}, {
		name:      "selected node: requisite = preferred = its segment",
		in:        RequestFacts{Claim: claim(selectedNode("a")), Class: class(), Driver: topo, TopologyKeys: keys, Selected: node("a"), Nodes: nodes},
		requisite: []string{seg("a")}, preferred: []string{seg("a")},
	}, {
		name: "selected node outside the class's allowed topologies is refused",
		in: RequestFacts{Claim: claim(selectedNode("a")), Driver: topo, TopologyKeys: keys, Selected: node("a"), Nodes: nodes,
			Class: class(func(c *storagev1.StorageClass) {
				c.AllowedTopologies = []v1.TopologySelectorTerm{{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{{Key: topoKey, Values: []string{"b"}}}}}
			})},
		wantErr: "not in the class's allowed topologies",
	}, {
		name: "selected node inside the class's allowed topologies",
		in: RequestFacts{Claim: claim(selectedNode("a")), Driver: topo, TopologyKeys: keys, Selected: node("a"), Nodes: nodes,
			Class: class(func(c *storagev1.StorageClass) {
				c.AllowedTopologies = []v1.TopologySelectorTerm{{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{{Key: topoKey, Values: []string{"b", "a"}}}}}
			})},
		requisite: []string{seg("a")}, preferred: []string{seg("a")},
	}, {
		name:    "selected node without the topology label",
		in:      RequestFacts{Claim: claim(selectedNode("x")), Class: class(), Driver: topo, TopologyKeys: keys, Selected: &v1.Node{}},
		wantErr: "no label",
	}, {
		name: "allowed topologies, flattened, preferred rotated",
		in: RequestFacts{Claim: claim(), Driver: topo, TopologyKeys: keys, Nodes: nodes, Class: class(func(c *storagev1.StorageClass) {
			c.AllowedTopologies = []v1.TopologySelectorTerm{{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{{Key: topoKey, Values: []string{"x", "y"}}}}}
		})},
		requisite: []string{seg("x"), seg("y")}, preferred: rotated([]string{seg("x"), seg("y")}, "uid-1"),
	}, {
		name:      "every labelled node, sorted",
		in:        RequestFacts{Claim: claim(), Class: class(), Driver: topo, TopologyKeys: keys, Nodes: nodes},
		requisite: []string{seg("a"), seg("b")}, preferred: rotated([]string{seg("a"), seg("b")}, "uid-1"),
	}, {
		name: "clone: only where the source lives",
		in: RequestFacts{Claim: claim(), Class: class(), Driver: topo, TopologyKeys: keys, Nodes: nodes, SourceHandle: "vol-src",
			SourceAt: func(s map[string]string) bool { return s[topoKey] == "b" }},
		requisite: []string{seg("b")}, preferred: []string{seg("b")},
	}, {
		name:    "clone source reachable from no allowed topology",
		in:      RequestFacts{Claim: claim(), Class: class(), Driver: topo, TopologyKeys: keys, Nodes: nodes, SourceAt: func(map[string]string) bool { return false }},
		wantErr: "not accessible",
	}, {
		name:    "no labelled node",
		in:      RequestFacts{Claim: claim(), Class: class(), Driver: topo, TopologyKeys: keys},
		wantErr: "no node carries",
	}, {
		name: "clone source",
		in:   RequestFacts{Claim: claim(), Class: class(), SourceHandle: "vol-src"},
		check: func(t *testing.T, r *csipb.CreateVolumeRequest) {
			if r.GetVolumeContentSource().GetVolume().GetVolumeId() != "vol-src" {
				t.Errorf("content source %v", r.VolumeContentSource)
			}
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := BuildRequest(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !IsFinal(err) {
					t.Fatalf("error %v, want a final one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.requisite != nil {
				ar := req.AccessibilityRequirements
				if got := segments(ar.GetRequisite()); strings.Join(got, " ") != strings.Join(tc.requisite, " ") {
					t.Errorf("requisite %v, want %v", got, tc.requisite)
				}
				if got := segments(ar.GetPreferred()); strings.Join(got, " ") != strings.Join(tc.preferred, " ") {
					t.Errorf("preferred %v, want %v", got, tc.preferred)
				}
			}
			if tc.check != nil {
				tc.check(t, req)
			}
		})
	}
}

func segments(ts []*csipb.Topology) []string {
	var out []string
	for _, t := range ts {
		out = append(out, segmentText(t.GetSegments()))
	}
	return out
}

func rotated(s []string, uid string) []string {
	k := int(hashUID(uid) % uint32(len(s)))
	return append(append([]string{}, s[k:]...), s[:k]...)
}
