package provisioning

import (
	"errors"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
)

// A recorded request is used only if it could be the provisioner's own for
// this claim: its name, its content source and its parameters say so.
func TestWhyNotOurs(t *testing.T) {
	cloneOf := func(id string) *csipb.VolumeContentSource {
		return &csipb.VolumeContentSource{Type: &csipb.VolumeContentSource_Volume{Volume: &csipb.VolumeContentSource_VolumeSource{VolumeId: id}}}
	}
	req := func(mods ...func(*csipb.CreateVolumeRequest)) *csipb.CreateVolumeRequest {
		r := fillerRequest(1 << 20)
		r.Name, r.Parameters = "pvc-uid-1", map[string]string{"tier": "gold"}
		for _, m := range mods {
			m(r)
		}
		return r
	}
	known := RecordFacts{Name: "pvc-uid-1", ClassKnown: true, Params: map[string]string{"tier": "gold"}, MutableKnown: true}
	classGone := RecordFacts{Name: "pvc-uid-1", MutableKnown: true}
	clone := known
	clone.Source = "src-vol"
	sourceGone := known
	sourceGone.SourceErr = errors.New(`data source claim "src" does not exist`)
	sourceGoneItsPVLeft := sourceGone
	sourceGoneItsPVLeft.FormerSources = []string{"src-vol"}
	for _, tc := range []struct {
		name string
		rec  *csipb.CreateVolumeRequest
		f    RecordFacts
		want string // "" passes; else a part of the reason
	}{
		{"the claim's own", req(), known, ""},
		{"another claim's volume", req(func(r *csipb.CreateVolumeRequest) { r.Name = "pvc-victim" }), known, `names volume "pvc-victim"`},
		{"parameters not the class's", req(func(r *csipb.CreateVolumeRequest) { r.Parameters = map[string]string{"subDir": "../victims"} }), known, "not those of the claim's class"},
		{"class gone, no parameters", req(func(r *csipb.CreateVolumeRequest) { r.Parameters = nil }), classGone, ""},
		{"class gone, parameters nobody can check", req(), classGone, "the claim's class, which alone gives them, is gone"},
		{"mutable parameters nobody gave", req(func(r *csipb.CreateVolumeRequest) { r.MutableParameters = map[string]string{"iops": "1"} }), known, "mutable parameters are not"},
		{"a clone of the claim's source", req(func(r *csipb.CreateVolumeRequest) { r.VolumeContentSource = cloneOf("src-vol") }), clone, ""},
		{"a clone of another volume", req(func(r *csipb.CreateVolumeRequest) { r.VolumeContentSource = cloneOf("victim-vol") }), clone, `clones volume "victim-vol", but the claim's data source gives "src-vol"`},
		{"a clone, the claim has no source", req(func(r *csipb.CreateVolumeRequest) { r.VolumeContentSource = cloneOf("victim-vol") }), known, `clones volume "victim-vol", but the claim's data source gives ""`},
		{"a clone whose source cannot be checked", req(func(r *csipb.CreateVolumeRequest) { r.VolumeContentSource = cloneOf("src-vol") }), sourceGone, "cannot be checked"},
		{"a clone of the gone source's volume, its PV left", req(func(r *csipb.CreateVolumeRequest) { r.VolumeContentSource = cloneOf("src-vol") }), sourceGoneItsPVLeft, ""},
		{"a clone of another volume, the source's PV left", req(func(r *csipb.CreateVolumeRequest) { r.VolumeContentSource = cloneOf("victim-vol") }), sourceGoneItsPVLeft, "cannot be checked"},
		{"no clone for a clone claim", req(), clone, "has no content source"},
		{"no clone, source gone: only an empty volume of its own name", req(), sourceGone, ""},
		{"a snapshot", req(func(r *csipb.CreateVolumeRequest) {
			r.VolumeContentSource = &csipb.VolumeContentSource{Type: &csipb.VolumeContentSource_Snapshot{Snapshot: &csipb.VolumeContentSource_SnapshotSource{SnapshotId: "s"}}}
		}), known, "snapshot"},
	} {
		got := WhyNotOurs(tc.rec, tc.f)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// The provisioner's own records always pass against the request they were
// made from.
func TestOwnRecordPasses(t *testing.T) {
	r := fillerRequest(1 << 20)
	r.Name, r.Parameters, r.MutableParameters = "pvc-uid-1", map[string]string{"tier": "gold"}, map[string]string{"iops": "3"}
	r.Secrets = map[string]string{"password": "x"}
	r.VolumeContentSource = &csipb.VolumeContentSource{Type: &csipb.VolumeContentSource_Volume{Volume: &csipb.VolumeContentSource_VolumeSource{VolumeId: "src"}}}
	rec, err := RecordRequest(r)
	if err != nil {
		t.Fatal(err)
	}
	c := claim(func(c *v1.PersistentVolumeClaim) { c.Annotations[AnnCreateRequest] = rec })
	if !RecordPasses(c, r) {
		t.Errorf("the record %s of the request does not pass against it", rec)
	}
	if RecordPasses(claim(), r) {
		t.Error("no record passes")
	}
}

// What users write in the annotation is parsed without a panic, and sizes
// that are not int64 (or are negative) are refused.
func TestRecordedRequestRefusesWhatWasNeverRecorded(t *testing.T) {
	for _, rec := range []string{
		"{",
		`{"name":"pvc-uid-1","capacityRange":{"requiredBytes":"18446744074783293440"}}`,
		`{"name":"pvc-uid-1","capacityRange":{"requiredBytes":"-1"}}`,
		`{"name":"pvc-uid-1","capacityRange":{"limitBytes":"-5"}}`,
		`{"name":"pvc-uid-1","secrets":{"a":"b"}}`,
		`{"name":"pvc-uid-1","accessibilityRequirements":{}}`,
		`{"name":"pvc-uid-1","unknownField":1}`,
		`[]`,
		`null`,
	} {
		if _, ok, err := RecordedRequest(claim(func(c *v1.PersistentVolumeClaim) { c.Annotations[AnnCreateRequest] = rec })); err == nil || ok {
			t.Errorf("%s: accepted", rec)
		}
	}
}

// A pin is used only within the selected node's segment, else the class's
// allowed topologies; not against the node list, which a pin outlives.
func TestCheckPin(t *testing.T) {
	ep := func(node string) Endpoint {
		return Endpoint{NodeID: node, Topology: map[string]string{topoKey: node}}
	}
	seg := func(node string) map[string]string { return map[string]string{topoKey: node} }
	for _, tc := range []struct {
		name string
		e    Endpoint
		segs []map[string]string
		ok   bool
	}{
		{"within the selected node", ep("a"), []map[string]string{seg("a")}, true},
		{"off the selected node", ep("b"), []map[string]string{seg("a")}, false},
		{"among the allowed", ep("b"), []map[string]string{seg("a"), seg("b")}, true},
		{"nothing constrains", ep("b"), nil, true},
		{"an endpoint without topology", Endpoint{NodeID: "x"}, []map[string]string{seg("a")}, true},
		{"an allowed segment on a key the endpoint lacks", ep("a"), []map[string]string{{"zone": "z"}}, false},
	} {
		err := CheckPin(tc.e, tc.segs)
		var misfit *PinMisfit
		if tc.ok != (err == nil) || (err != nil && !errors.As(err, &misfit)) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
