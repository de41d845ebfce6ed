package provisioning

import (
	"maps"
	"os"
	"testing"

	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Fuzz targets for what a namespace user writes and the provisioner reads.
// Their seed corpora (testdata/fuzz/<target>) run as ordinary tests.

// FuzzRecordedRequest: any text in the create-request annotation is parsed
// without a panic; what is accepted has no negative size, no secrets and
// no topology, survives a round trip, and passes the check only when it
// names this claim's own volume.
func FuzzRecordedRequest(f *testing.F) {
	f.Add(`{"name":"pvc-uid-1","capacityRange":{"requiredBytes":"1048576"},"volumeCapabilities":[{"mount":{},"accessMode":{"mode":"SINGLE_NODE_WRITER"}}]}`)
	f.Add(`{"name":"pvc-victim","capacityRange":{"requiredBytes":"1"}}`)
	f.Fuzz(func(t *testing.T, rec string) {
		c := claim(func(c *v1.PersistentVolumeClaim) { c.Annotations[AnnCreateRequest] = rec })
		req, ok, err := RecordedRequest(c)
		if err != nil || !ok {
			return
		}
		switch {
		case req.GetCapacityRange().GetRequiredBytes() < 0 || req.GetCapacityRange().GetLimitBytes() < 0:
			t.Fatalf("negative size accepted: %v", req)
		case len(req.GetSecrets()) > 0 || req.GetAccessibilityRequirements() != nil:
			t.Fatalf("secrets or topology accepted: %v", req)
		}
		again, err := RecordRequest(req)
		if err != nil {
			t.Fatalf("an accepted record cannot be written again: %v", err)
		}
		back, err := parseRecord(again)
		if err != nil || !proto.Equal(back, req) {
			t.Fatalf("round trip: %v, %v; want %v", back, err, req)
		}
		f := RecordFacts{Name: VolumeName(c), ClassKnown: true, Params: req.GetParameters(), MutableKnown: true,
			Mutable: req.GetMutableParameters(), Source: req.GetVolumeContentSource().GetVolume().GetVolumeId()}
		if WhyNotOurs(req, f) == "" && req.GetName() != "pvc-uid-1" {
			t.Fatalf("a record naming %q passes for claim uid-1", req.GetName())
		}
	})
}

// FuzzSecretTemplate: class secret templates resolve without a panic, to
// valid names only; and nothing the claim's user writes (its name, its
// annotations) changes the namespace a secret is read from, which only
// ${pv.name} and ${pvc.namespace} may name.
func FuzzSecretTemplate(f *testing.F) {
	f.Add("${pvc.name}-secret", "${pvc.namespace}", "data", "value")
	f.Add("${pvc.annotations['team']}", "fixed", "data", "other-team")
	f.Add("${pvc.name", "${pv.name}", "x", "")
	f.Add("$pvc.name", "${pvc.annotations['team']}", "x", "kube-system")
	f.Fuzz(func(t *testing.T, nameT, nsT, claimName, annotation string) {
		params := map[string]string{reservedPrefix + "provisioner-secret-name": nameT, reservedPrefix + "provisioner-secret-namespace": nsT}
		resolve := func(claimName, annotation string) (*v1.SecretReference, error) {
			c := claim(func(c *v1.PersistentVolumeClaim) { c.Name, c.Annotations["team"] = claimName, annotation })
			return SecretRef(ProvisionerSecret, params, "pvc-uid-1", c)
		}
		ref, err := resolve(claimName, annotation)
		if err != nil || ref == nil {
			return
		}
		if len(validation.IsDNS1123Label(ref.Namespace)) > 0 || len(validation.IsDNS1123Subdomain(ref.Name)) > 0 {
			t.Fatalf("resolved to an invalid reference %v", ref)
		}
		other, err := resolve("other-"+claimName, annotation+"-other")
		if err == nil && other.Namespace != ref.Namespace {
			t.Fatalf("the claim's user moved the secret namespace from %q to %q", ref.Namespace, other.Namespace)
		}
	})
}

// FuzzEndpointPin: whatever a pin names, the cleanup asks only the
// endpoint of that node ID (or none), and CheckPin passes only an endpoint
// within one of the allowed segments.
func FuzzEndpointPin(f *testing.F) {
	f.Add("a", "a", "a")
	f.Add("b", "a", "b")
	f.Add("", "", "a")
	f.Add("node-1", "node-1", "")
	f.Fuzz(func(t *testing.T, pin, at, allowed string) {
		eps := []Endpoint{
			{NodeID: "a", Topology: map[string]string{topoKey: "a"}},
			{NodeID: pin, Topology: map[string]string{topoKey: at}},
		}
		if i, err := CleanupEndpoint(eps, pin); err == nil && pin != "" && eps[i].NodeID != pin {
			t.Fatalf("pin %q asked the endpoint of %q", pin, eps[i].NodeID)
		}
		segs := []map[string]string{{topoKey: allowed}}
		if err := CheckPin(eps[1], segs); err == nil && !maps.Equal(eps[1].Topology, segs[0]) {
			t.Fatalf("pin at %v passed for allowed %v", eps[1].Topology, segs)
		}
	})
}

// FuzzExpandIsOSExpand: the package's own template expansion is exactly
// os.Expand, which the external-provisioner reads its templates with.
func FuzzExpandIsOSExpand(f *testing.F) {
	for _, s := range []string{"${pvc.name}-x", "$pvc.name", "$$", "${", "${}", "$", "a$1b", "${a}${b", "$-x$_y", "x${pv.name}y$"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, template string) {
		lookup := func(token string) string { return "<" + token + ">" }
		if got, want := expand(template, lookup), os.Expand(template, lookup); got != want {
			t.Fatalf("expand(%q) = %q, os.Expand gives %q", template, got, want)
		}
	})
}
