package provisioning

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/modification"
)

// The templates and errors of the external-provisioner v6.3.0
// (getSecretReference), one case per rule.
func TestSecretRefResolvesTheReferenceTemplates(t *testing.T) {
	p := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	const (
		provName, provNS = reservedPrefix + "provisioner-secret-name", reservedPrefix + "provisioner-secret-namespace"
		defName, defNS   = reservedPrefix + "secret-name", reservedPrefix + "secret-namespace"
	)
	annotated := claim(func(c *v1.PersistentVolumeClaim) { c.Annotations["example.com/key"] = "from-annotation" })
	cases := []struct {
		name    string
		kind    SecretKind
		params  map[string]string
		claim   *v1.PersistentVolumeClaim
		want    string // "namespace/name", "" for no reference
		wantErr string
	}{
		{"none named", ProvisionerSecret, p("kind", "ssd"), claim(), "", ""},
		{"literal", ProvisionerSecret, p(provName, "creds", provNS, "storage"), claim(), "storage/creds", ""},
		{"claim name and namespace, PV name", nodePublishSecret,
			p(reservedPrefix+"node-publish-secret-name", "${pvc.name}-${pv.name}", reservedPrefix+"node-publish-secret-namespace", "${pvc.namespace}"),
			claim(), "ns/data-pvc-uid-1", ""},
		{"claim annotation in the name", ProvisionerSecret, p(provName, "${pvc.annotations['example.com/key']}", provNS, "ns"),
			annotated, "ns/from-annotation", ""},
		{"deprecated keys", controllerPublishSecret, p("csiControllerPublishSecretName", "old", "csiControllerPublishSecretNamespace", "ns"),
			claim(), "ns/old", ""},
		{"default secret stands in", nodeStageSecret, p(defName, "all", defNS, "ns"), claim(), "ns/all", ""},
		{"a secret of its own beats the default", nodeStageSecret,
			p(defName, "all", defNS, "ns", reservedPrefix+"node-stage-secret-name", "stage", reservedPrefix+"node-stage-secret-namespace", "ns"),
			claim(), "ns/stage", ""},
		{"both key styles", ProvisionerSecret, p(provName, "a", provNS, "ns", "csiProvisionerSecretName", "b", "csiProvisionerSecretNamespace", "ns"), claim(), "",
			`failed to get name and namespace template from params: Provisioner secrets specified in parameters with both "csi" and "csi.storage.k8s.io/" keys`},
		{"name without namespace", ProvisionerSecret, p(provName, "a"), claim(), "",
			"failed to get name and namespace template from params: either name and namespace for Provisioner secrets specified, Both must be specified"},
		{"empty value", nodeExpandSecret, p(reservedPrefix+"node-expand-secret-name", "", reservedPrefix+"node-expand-secret-namespace", "ns"), claim(), "",
			"failed to get name and namespace template from params: NodeExpand secrets specified in parameters but value of either namespace or name is empty"},
		{"broken default", ProvisionerSecret, p(defName, "a"), claim(), "",
			"failed to get default name and namespace template from params: either name and namespace for Default secrets specified, Both must be specified"},
		{"the claim's name is not for the namespace", ProvisionerSecret, p(provName, "a", provNS, "${pvc.name}"), claim(), "",
			`error resolving value "${pvc.name}": invalid tokens: ["pvc.name"]`},
		{"unknown tokens, all named", ProvisionerSecret, p(provName, "${a}${pvc.uid}", provNS, "ns"), claim(), "",
			`error resolving value "${a}${pvc.uid}": invalid tokens: ["a" "pvc.uid"]`},
		{"a ${ never closed", ProvisionerSecret, p(provName, "${pvc.name", provNS, "ns"), claim(), "",
			`error resolving value "${pvc.name": every "${" needs a token and a closing "}"`},
		{"an empty ${}", ProvisionerSecret, p(provName, "a", provNS, "ns-${}"), claim(), "",
			`error resolving value "ns-${}": every "${" needs a token and a closing "}"`},
		{"annotation the claim lacks", ProvisionerSecret, p(provName, "${pvc.annotations['missing']}", provNS, "ns"), claim(), "",
			`error resolving value "${pvc.annotations['missing']}": invalid tokens: ["pvc.annotations['missing']"]`},
		{"invalid namespace", ProvisionerSecret, p(provName, "a", provNS, "Not_Valid"), claim(), "",
			`"Not_Valid" is not a valid namespace name`},
		{"resolves to an invalid name", ProvisionerSecret, p(provName, "${pvc.annotations['example.com/key']}_x", provNS, "ns"), annotated, "",
			`"${pvc.annotations['example.com/key']}_x" resolved to "from-annotation_x" which is not a valid secret name`},
	}
	for _, tc := range cases {
		ref, err := SecretRef(tc.kind, tc.params, "pvc-uid-1", tc.claim)
		got, gotErr := "", ""
		if ref != nil {
			got = ref.Namespace + "/" + ref.Name
		}
		if err != nil {
			gotErr = err.Error()
		}
		if got != tc.want || gotErr != tc.wantErr {
			t.Errorf("%s: got %q, error %q; want %q, error %q", tc.name, got, gotErr, tc.want, tc.wantErr)
		}
	}
}

// The PV records the references the external-provisioner records: the
// four CSI secret refs, and the provisioner secret as the deletion
// annotations, set empty when the class names none.
func TestRecordSecretsOnThePV(t *testing.T) {
	params := map[string]string{
		reservedPrefix + "provisioner-secret-name": "prov", reservedPrefix + "provisioner-secret-namespace": "ns",
		reservedPrefix + "node-publish-secret-name": "pub", reservedPrefix + "node-publish-secret-namespace": "ns",
		reservedPrefix + "controller-modify-secret-name": "mod", reservedPrefix + "controller-modify-secret-namespace": "ns",
	}
	refs, err := ResolveSecretRefs(params, "pvc-uid-1", claim())
	if err != nil {
		t.Fatal(err)
	}
	pv := BuildVolume(claim(), class(), testDriver, &v1csiVolume)
	RecordSecrets(pv, refs)
	src := pv.Spec.CSI
	got := fmt.Sprint(src.NodePublishSecretRef, src.ControllerPublishSecretRef, src.NodeStageSecretRef, src.ControllerExpandSecretRef, src.NodeExpandSecretRef,
		pv.Annotations[annDeletionSecretName], pv.Annotations[annDeletionSecretNamespace],
		pv.Annotations[modification.AnnModifySecretName], pv.Annotations[modification.AnnModifySecretNamespace])
	want := fmt.Sprint(&v1.SecretReference{Name: "pub", Namespace: "ns"}, (*v1.SecretReference)(nil), (*v1.SecretReference)(nil),
		(*v1.SecretReference)(nil), (*v1.SecretReference)(nil), "prov", "ns", "mod", "ns")
	if got != want {
		t.Errorf("recorded %s, want %s", got, want)
	}

	none := BuildVolume(claim(), class(), testDriver, &v1csiVolume)
	RecordSecrets(none, SecretRefs{})
	name, hasName := none.Annotations[annDeletionSecretName]
	ns, hasNS := none.Annotations[annDeletionSecretNamespace]
	if !hasName || !hasNS || name != "" || ns != "" {
		t.Errorf("without secrets the deletion annotations must be set empty: %v", none.Annotations)
	}
	if _, ok := none.Annotations[modification.AnnModifySecretName]; ok {
		t.Errorf("modify annotations without a modify secret: %v", none.Annotations)
	}
}

// Deletion finds the provisioner secret from a claim rebuilt from the
// claimRef, which has no annotations: a name template using one fails.
func TestSecretRefForDeletionHasOnlyTheClaimsName(t *testing.T) {
	c := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "ns"}}
	params := map[string]string{reservedPrefix + "provisioner-secret-name": "${pvc.name}", reservedPrefix + "provisioner-secret-namespace": "${pvc.namespace}"}
	if ref, err := SecretRef(ProvisionerSecret, params, "pvc-1", c); err != nil || ref.Name != "data" || ref.Namespace != "ns" {
		t.Errorf("ref %v, err %v", ref, err)
	}
	params[reservedPrefix+"provisioner-secret-name"] = "${pvc.annotations['k']}"
	if _, err := SecretRef(ProvisionerSecret, params, "pvc-1", c); err == nil {
		t.Error("an annotation template resolved without annotations")
	}
}
