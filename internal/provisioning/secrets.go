package provisioning

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/volplane/volplane/internal/modification"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Secret references of a StorageClass, as the external-provisioner v6.3.0
// resolves them (pkg/controller/controller.go: getSecretReference and
// verifyAndGetSecretNameAndNamespaceTemplate). Every string here is its.

// SecretKind is one of the secrets a class may name: the parameters
// "csi.storage.k8s.io/<key>-name" and "-namespace", and for the oldest four
// the deprecated "<legacy>Name" and "<legacy>Namespace", which are still
// read (and, not being reserved, still passed to the driver).
type SecretKind struct {
	name   string // as error messages name it
	key    string
	legacy string
}

var (
	ProvisionerSecret       = SecretKind{"Provisioner", "provisioner-secret", "csiProvisionerSecret"}
	controllerPublishSecret = SecretKind{"ControllerPublish", "controller-publish-secret", "csiControllerPublishSecret"}
	nodeStageSecret         = SecretKind{"NodeStage", "node-stage-secret", "csiNodeStageSecret"}
	nodePublishSecret       = SecretKind{"NodePublish", "node-publish-secret", "csiNodePublishSecret"}
	controllerExpandSecret  = SecretKind{"ControllerExpand", "controller-expand-secret", ""}
	nodeExpandSecret        = SecretKind{"NodeExpand", "node-expand-secret", ""}
	controllerModifySecret  = SecretKind{"ControllerModify", "controller-modify-secret", ""}
	// defaultSecret stands in for any of the above a class does not name.
	defaultSecret = SecretKind{"Default", "secret", ""}
)

// secretKinds are the kinds in the order the reference resolves them, which
// decides the error reported when several are wrong.
var secretKinds = []SecretKind{ProvisionerSecret, controllerPublishSecret, nodeStageSecret,
	nodePublishSecret, controllerExpandSecret, nodeExpandSecret, controllerModifySecret}

// PV annotations recording the secrets for later calls: DeleteVolume reads
// the provisioner secret from them (empty values: none). ControllerModify
// reads the modify secret from modification.AnnModifySecret* (only set when
// the class names one).
const (
	annDeletionSecretName       = "volume.kubernetes.io/provisioner-deletion-secret-name"
	annDeletionSecretNamespace  = "volume.kubernetes.io/provisioner-deletion-secret-namespace"
	tokenPVName, tokenClaimName = "pv.name", "pvc.name"
	tokenClaimNamespace         = "pvc.namespace"
)

// SecretRefs are the resolved references of a claim's class, nil where the
// class names none.
type SecretRefs map[SecretKind]*v1.SecretReference

// ResolveSecretRefs resolves every secret the class names for the claim's
// PV; the first wrong one is the error.
func ResolveSecretRefs(params map[string]string, pvName string, claim *v1.PersistentVolumeClaim) (SecretRefs, error) {
	refs := SecretRefs{}
	for _, k := range secretKinds {
		ref, err := SecretRef(k, params, pvName, claim)
		if err != nil {
			return nil, err
		}
		refs[k] = ref
	}
	return refs, nil
}

// SecretRef resolves one secret's templates, falling back to the default
// secret; nil if neither is named. The namespace may use ${pv.name} and
// ${pvc.namespace}, which the claim's user does not control; the name also
// ${pvc.name} and ${pvc.annotations['<key>']}. claim may carry only a name
// and namespace (deletion rebuilds it from the PV's claimRef).
func SecretRef(k SecretKind, params map[string]string, pvName string, claim *v1.PersistentVolumeClaim) (*v1.SecretReference, error) {
	nameT, nsT, err := secretTemplates(k, params)
	if err != nil {
		return nil, fmt.Errorf("failed to get name and namespace template from params: %v", err)
	}
	if nameT == "" && nsT == "" {
		if nameT, nsT, err = secretTemplates(defaultSecret, params); err != nil {
			return nil, fmt.Errorf("failed to get default name and namespace template from params: %v", err)
		}
	}
	if nameT == "" && nsT == "" {
		return nil, nil
	}
	nsTokens := map[string]string{tokenPVName: pvName, tokenClaimNamespace: claim.Namespace}
	ns, err := resolveTemplate(nsT, nsTokens)
	if err != nil {
		return nil, err
	}
	if len(validation.IsDNS1123Label(ns)) > 0 {
		return nil, invalidResolved(nsT, ns, "namespace")
	}
	nameTokens := maps.Clone(nsTokens)
	nameTokens[tokenClaimName] = claim.Name
	for key, v := range claim.Annotations {
		nameTokens["pvc.annotations['"+key+"']"] = v
	}
	name, err := resolveTemplate(nameT, nameTokens)
	if err != nil {
		return nil, err
	}
	if len(validation.IsDNS1123Subdomain(name)) > 0 {
		return nil, invalidResolved(nameT, name, "secret")
	}
	return &v1.SecretReference{Name: name, Namespace: ns}, nil
}

// secretTemplates are the name and namespace templates the class gives for
// k: both or neither, each under one key only, neither empty.
func secretTemplates(k SecretKind, params map[string]string) (name, ns string, err error) {
	names, namespaces := 0, 0
	keys := [][2]string{{reservedPrefix + k.key + "-name", reservedPrefix + k.key + "-namespace"}}
	if k.legacy != "" {
		keys = append([][2]string{{k.legacy + "Name", k.legacy + "Namespace"}}, keys...)
	}
	for _, pair := range keys {
		if v, ok := params[pair[0]]; ok {
			name, names = v, names+1
		}
		if v, ok := params[pair[1]]; ok {
			ns, namespaces = v, namespaces+1
		}
	}
	switch {
	case names > 1 || namespaces > 1:
		return "", "", fmt.Errorf("%s secrets specified in parameters with both \"csi\" and \"%s\" keys", k.name, reservedPrefix)
	case names != namespaces:
		return "", "", fmt.Errorf("either name and namespace for %s secrets specified, Both must be specified", k.name)
	case names == 1 && (name == "" || ns == ""):
		return "", "", fmt.Errorf("%s secrets specified in parameters but value of either namespace or name is empty", k.name)
	}
	return name, ns, nil
}

// resolveTemplate expands ${token} (and $token) from tokens; any other
// token is an error naming all of them.
func resolveTemplate(template string, tokens map[string]string) (string, error) {
	if malformedTemplate(template) {
		return "", fmt.Errorf("error resolving value %q: every \"${\" needs a token and a closing \"}\"", template)
	}
	missing := map[string]bool{}
	out := expand(template, func(t string) string {
		v, ok := tokens[t]
		if !ok {
			missing[t] = true
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("error resolving value %q: %v", template, fmt.Errorf("invalid tokens: %q", slices.Sorted(maps.Keys(missing))))
	}
	return out, nil
}

// malformedTemplate says whether a "${" is never closed or encloses
// nothing: expand silently drops such a "${" (and a "${}"), so the typo
// "${pvc.name" would resolve to the secret "pvc.name", which nobody meant.
func malformedTemplate(template string) bool {
	for rest := template; ; {
		i := strings.Index(rest, "${")
		if i < 0 {
			return false
		}
		rest = rest[i+2:]
		end := strings.IndexByte(rest, '}')
		if end <= 0 {
			return true
		}
		rest = rest[end+1:]
	}
}

// expand replaces $token and ${token} in template with lookup(token), the
// shell-like expansion the external-provisioner reads its templates with
// (Go's os.Expand, which this package, doing no I/O, does not import):
// "${" takes everything up to the first "}"; "$" followed by one of
// *#$@!?- or a digit takes that character; "$" followed by letters,
// digits and underscores takes them all; a "$" followed by anything
// else, or last, stays as it is.
func expand(template string, lookup func(string) string) string {
	var b strings.Builder
	for i := 0; i < len(template); i++ {
		if template[i] != '$' || i+1 == len(template) {
			b.WriteByte(template[i])
			continue
		}
		token, width := tokenAt(template[i+1:])
		switch {
		case token != "":
			b.WriteString(lookup(token))
		case width == 0:
			b.WriteByte('$')
		}
		i += width
	}
	return b.String()
}

// tokenAt reads the token that follows a "$" at the start of s (not
// empty): its name and how many bytes it takes. A width without a name is
// a "${" never closed, or a "${}": dropped, as os.Expand drops it
// (malformedTemplate refuses both before).
func tokenAt(s string) (string, int) {
	if s[0] == '{' {
		switch end := strings.IndexByte(s, '}'); {
		case end > 1:
			return s[1:end], end + 1
		case end == 1:
			return "", 2
		}
		return "", 1
	}
	if strings.IndexByte("*#$@!?-0123456789", s[0]) >= 0 {
		return s[:1], 1
	}
	n := 0
	for n < len(s) && isNameByte(s[n]) {
		n++
	}
	return s[:n], n
}

func isNameByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func invalidResolved(template, resolved, what string) error {
	if template != resolved {
		return fmt.Errorf("%q resolved to %q which is not a valid %s name", template, resolved, what)
	}
	return fmt.Errorf("%q is not a valid %s name", template, what)
}

// RecordSecrets writes the references onto a PV as the reference does: the
// four CSI secret refs a PV has, the provisioner secret as the deletion
// annotations (always set, empty without one), and the modify secret.
func RecordSecrets(pv *v1.PersistentVolume, refs SecretRefs) {
	src := pv.Spec.CSI
	src.ControllerPublishSecretRef = refs[controllerPublishSecret]
	src.NodeStageSecretRef = refs[nodeStageSecret]
	src.NodePublishSecretRef = refs[nodePublishSecret]
	src.ControllerExpandSecretRef = refs[controllerExpandSecret]
	src.NodeExpandSecretRef = refs[nodeExpandSecret]
	if pv.Annotations == nil {
		pv.Annotations = map[string]string{}
	}
	del := refs[ProvisionerSecret]
	if del == nil {
		del = &v1.SecretReference{}
	}
	pv.Annotations[annDeletionSecretName], pv.Annotations[annDeletionSecretNamespace] = del.Name, del.Namespace
	if m := refs[controllerModifySecret]; m != nil {
		pv.Annotations[modification.AnnModifySecretName], pv.Annotations[modification.AnnModifySecretNamespace] = m.Name, m.Namespace
	}
}

// RecordedDeletionSecret is the provisioner secret a PV records for
// DeleteVolume (its deletion annotations, as the external-provisioner's
// handleSecretsForDeletion reads them); recorded is false unless the PV
// has both annotations, and a recorded empty name or namespace is no
// secret (nil).
func RecordedDeletionSecret(pv *v1.PersistentVolume) (ref *v1.SecretReference, recorded bool) {
	name, hasName := pv.Annotations[annDeletionSecretName]
	ns, hasNamespace := pv.Annotations[annDeletionSecretNamespace]
	switch {
	case !hasName || !hasNamespace:
		return nil, false
	case name == "" || ns == "":
		return nil, true
	}
	return &v1.SecretReference{Name: name, Namespace: ns}, true
}

// ClassDeletionSecret is the provisioner secret of class (the PV's), for
// a PV that records none: resolved for the PV and the claim its claimRef
// names (by name and namespace only: the claim may be gone).
func ClassDeletionSecret(pv *v1.PersistentVolume, class *storagev1.StorageClass) (*v1.SecretReference, error) {
	if pv.Spec.ClaimRef == nil {
		return nil, nil
	}
	claim := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: pv.Spec.ClaimRef.Name, Namespace: pv.Spec.ClaimRef.Namespace}}
	ref, err := SecretRef(ProvisionerSecret, class.Parameters, pv.Name, claim)
	if err != nil {
		return nil, fmt.Errorf("failed to get secretreference for volume %s: %v", pv.Name, err)
	}
	return ref, nil
}
