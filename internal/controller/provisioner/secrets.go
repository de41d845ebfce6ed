package provisioner

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Secret references of a StorageClass, as the external-provisioner v6.3.0
// resolves them (pkg/controller/controller.go: getSecretReference and
// verifyAndGetSecretNameAndNamespaceTemplate). Every string here is its.

// secretKind is one of the secrets a class may name: the parameters
// "csi.storage.k8s.io/<key>-name" and "-namespace", and for the oldest four
// the deprecated "<legacy>Name" and "<legacy>Namespace", which are still
// read (and, not being reserved, still passed to the driver).
type secretKind struct {
	name   string // as error messages name it
	key    string
	legacy string
}

var (
	provisionerSecret       = secretKind{"Provisioner", "provisioner-secret", "csiProvisionerSecret"}
	controllerPublishSecret = secretKind{"ControllerPublish", "controller-publish-secret", "csiControllerPublishSecret"}
	nodeStageSecret         = secretKind{"NodeStage", "node-stage-secret", "csiNodeStageSecret"}
	nodePublishSecret       = secretKind{"NodePublish", "node-publish-secret", "csiNodePublishSecret"}
	controllerExpandSecret  = secretKind{"ControllerExpand", "controller-expand-secret", ""}
	nodeExpandSecret        = secretKind{"NodeExpand", "node-expand-secret", ""}
	controllerModifySecret  = secretKind{"ControllerModify", "controller-modify-secret", ""}
	// defaultSecret stands in for any of the above a class does not name.
	defaultSecret = secretKind{"Default", "secret", ""}
)

// secretKinds are the kinds in the order the reference resolves them, which
// decides the error reported when several are wrong.
var secretKinds = []secretKind{provisionerSecret, controllerPublishSecret, nodeStageSecret,
	nodePublishSecret, controllerExpandSecret, nodeExpandSecret, controllerModifySecret}

// PV annotations recording the secrets for later calls: DeleteVolume reads
// the provisioner secret from them (empty values: none), ControllerModify
// the modify secret (only set when the class names one).
const (
	annDeletionSecretName       = "volume.kubernetes.io/provisioner-deletion-secret-name"
	annDeletionSecretNamespace  = "volume.kubernetes.io/provisioner-deletion-secret-namespace"
	annModifySecretName         = "volume.kubernetes.io/controller-modify-secret-name"
	annModifySecretNamespace    = "volume.kubernetes.io/controller-modify-secret-namespace"
	tokenPVName, tokenClaimName = "pv.name", "pvc.name"
	tokenClaimNamespace         = "pvc.namespace"
)

// secretRefs are the resolved references of a claim's class, nil where the
// class names none.
type secretRefs map[secretKind]*v1.SecretReference

// resolveSecretRefs resolves every secret the class names for the claim's
// PV; the first wrong one is the error.
func resolveSecretRefs(params map[string]string, pvName string, claim *v1.PersistentVolumeClaim) (secretRefs, error) {
	refs := secretRefs{}
	for _, k := range secretKinds {
		ref, err := secretRef(k, params, pvName, claim)
		if err != nil {
			return nil, err
		}
		refs[k] = ref
	}
	return refs, nil
}

// secretRef resolves one secret's templates, falling back to the default
// secret; nil if neither is named. The namespace may use ${pv.name} and
// ${pvc.namespace}, which the claim's user does not control; the name also
// ${pvc.name} and ${pvc.annotations['<key>']}. claim may carry only a name
// and namespace (deletion rebuilds it from the PV's claimRef).
func secretRef(k secretKind, params map[string]string, pvName string, claim *v1.PersistentVolumeClaim) (*v1.SecretReference, error) {
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
func secretTemplates(k secretKind, params map[string]string) (name, ns string, err error) {
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
	out := os.Expand(template, func(t string) string {
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
// nothing: os.Expand silently drops such a "${" (and a "${}"), so the typo
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

func invalidResolved(template, resolved, what string) error {
	if template != resolved {
		return fmt.Errorf("%q resolved to %q which is not a valid %s name", template, resolved, what)
	}
	return fmt.Errorf("%q is not a valid %s name", template, what)
}

// recordSecrets writes the references onto a PV as the reference does: the
// four CSI secret refs a PV has, the provisioner secret as the deletion
// annotations (always set, empty without one), and the modify secret.
func recordSecrets(pv *v1.PersistentVolume, refs secretRefs) {
	src := pv.Spec.CSI
	src.ControllerPublishSecretRef = refs[controllerPublishSecret]
	src.NodeStageSecretRef = refs[nodeStageSecret]
	src.NodePublishSecretRef = refs[nodePublishSecret]
	src.ControllerExpandSecretRef = refs[controllerExpandSecret]
	src.NodeExpandSecretRef = refs[nodeExpandSecret]
	if pv.Annotations == nil {
		pv.Annotations = map[string]string{}
	}
	del := refs[provisionerSecret]
	if del == nil {
		del = &v1.SecretReference{}
	}
	pv.Annotations[annDeletionSecretName], pv.Annotations[annDeletionSecretNamespace] = del.Name, del.Namespace
	if m := refs[controllerModifySecret]; m != nil {
		pv.Annotations[annModifySecretName], pv.Annotations[annModifySecretNamespace] = m.Name, m.Namespace
	}
}
