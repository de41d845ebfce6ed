package mounting

import (
	"encoding/json"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The kubelet's tokens: one request per audience ("" asks for none),
// bound to the pod, and the answers keyed by the audience asked, in the
// volume context or, with serviceAccountTokenInSecrets, the secrets.
func TestTokensAreTheKubelets(t *testing.T) {
	p := pod(podUID, "data")
	w := world(local, withPods(p))
	v := Decide(w).Pods[0].Steps[0].Volume
	if w.TokensFor(v, p) != nil {
		t.Fatal("tokens for a CSIDriver asking for none")
	}
	w.CSIDrivers[local].Spec.TokenRequests = []storagev1.TokenRequest{{Audience: "a", ExpirationSeconds: ptr.To[int64](600)}, {Audience: ""}}
	tokens := w.TokensFor(v, p)
	if len(tokens.Requests) != 2 || tokens.InSecrets {
		t.Fatalf("tokens %+v: want two, in the volume context", tokens)
	}
	a, none := tokens.Requests[0].Spec, tokens.Requests[1].Spec
	if len(a.Audiences) != 1 || a.Audiences[0] != "a" || *a.ExpirationSeconds != 600 || len(none.Audiences) != 0 ||
		a.BoundObjectRef.Kind != "Pod" || a.BoundObjectRef.UID != podUID || a.BoundObjectRef.Name != p.Name {
		t.Errorf("requests %+v, %+v", a, none)
	}
	attrs, err := tokens.Attributes([]authenticationv1.TokenRequestStatus{{Token: "ta", ExpirationTimestamp: metav1.Unix(1, 0)}, {Token: "tn"}})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]authenticationv1.TokenRequestStatus
	if err := json.Unmarshal([]byte(attrs[TokensKey]), &got); err != nil || got["a"].Token != "ta" || got[""].Token != "tn" {
		t.Errorf("attributes %v (%v)", attrs, err)
	}
	vc := map[string]string{"k": "v"}
	ctx, sec := tokens.WithTokens(vc, nil, attrs)
	if ctx[TokensKey] == "" || ctx["k"] != "v" || sec != nil || len(vc) != 1 {
		t.Errorf("volume context %v, secrets %v: want the tokens in a copy of the context", ctx, sec)
	}
	w.CSIDrivers[local].Spec.ServiceAccountTokenInSecrets = ptr.To(true)
	ctx, sec = w.TokensFor(v, p).WithTokens(vc, nil, attrs)
	if ctx[TokensKey] != "" || sec[TokensKey] == "" {
		t.Errorf("volume context %v, secrets %v: want the tokens in the secrets", ctx, sec)
	}
	if blockVol := (&Volume{Driver: local, Block: true}); w.TokensFor(blockVol, p) != nil {
		t.Error("tokens for a block volume: the kubelet's block mapper sends none")
	}
}
