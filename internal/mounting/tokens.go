package mounting

import (
	"encoding/json"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// Tokens is what a CSIDriver's tokenRequests ask the kubelet to send at
// publish: one service account token of the pod per audience, bound to the
// pod, in the volume context or, with serviceAccountTokenInSecrets, in the
// secrets.
type Tokens struct {
	// Requests are the TokenRequests to create for the pod's service
	// account, in the CSIDriver's order.
	Requests []*authenticationv1.TokenRequest
	// InSecrets: the tokens go to the publish secrets, not the volume
	// context.
	InSecrets bool
}

// TokensFor says which tokens the publish of v needs for pod; nil when
// its driver has no CSIDriver or asks for none, and for a block volume
// (the kubelet's block mapper sends none).
func (w World) TokensFor(v *Volume, pod *corev1.Pod) *Tokens {
	d := w.CSIDrivers[v.Driver]
	if d == nil || len(d.Spec.TokenRequests) == 0 || v.Block {
		return nil
	}
	t := &Tokens{InSecrets: d.Spec.ServiceAccountTokenInSecrets != nil && *d.Spec.ServiceAccountTokenInSecrets}
	for _, tr := range d.Spec.TokenRequests {
		t.Requests = append(t.Requests, tokenRequest(pod, tr))
	}
	return t
}

// tokenRequest is the kubelet's request of one token: the audience given
// (none for ""), the expiration asked, bound to the pod.
func tokenRequest(pod *corev1.Pod, tr storagev1.TokenRequest) *authenticationv1.TokenRequest {
	audiences := []string{}
	if tr.Audience != "" {
		audiences = []string{tr.Audience}
	}
	return &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: audiences,
		ExpirationSeconds: tr.ExpirationSeconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}}}
}

// Attributes is the one entry the tokens add, under TokensKey: a JSON
// object from each audience (the one asked, "" included) to its token and
// expiration. statuses are the answers, in the order of Requests.
func (t *Tokens) Attributes(statuses []authenticationv1.TokenRequestStatus) (map[string]string, error) {
	if len(statuses) != len(t.Requests) {
		return nil, fmt.Errorf("%d tokens for %d requests", len(statuses), len(t.Requests))
	}
	out := map[string]authenticationv1.TokenRequestStatus{}
	for i, r := range t.Requests {
		audience := ""
		if len(r.Spec.Audiences) > 0 {
			audience = r.Spec.Audiences[0]
		}
		out[audience] = statuses[i]
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return map[string]string{TokensKey: string(raw)}, nil
}

// TokenFailure is the kubelet's text for a publish whose tokens could not
// be had.
func TokenFailure(err error) string {
	// The kubelet's text, misspelling and all: users match on it.
	return fmt.Sprintf("kubernetes.io/csi: mounter.SetUpAt failed to get service accoount token attributes: %v", err)
}

// WithTokens adds the token attributes to the request's volume context or
// secrets, as the tokens say; the maps given are copied, never changed.
func (t *Tokens) WithTokens(volumeContext, secrets map[string]string, attrs map[string]string) (map[string]string, map[string]string) {
	if t.InSecrets {
		return volumeContext, merged(secrets, attrs)
	}
	return merged(volumeContext, attrs), secrets
}
