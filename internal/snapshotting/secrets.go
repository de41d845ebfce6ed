package snapshotting

import (
	"fmt"
	"slices"
	"strings"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/volplane/volplane/internal/snapshotapi"
)

// SecretRef names one Secret; the zero value names none.
type SecretRef struct{ Namespace, Name string }

// None says whether r names no Secret.
func (r SecretRef) None() bool { return r == SecretRef{} }

// CallSecret is the Secret of the content's CreateSnapshot and
// DeleteSnapshot: the deletion-secret annotations the snapshot-controller
// copied from the class's csi.storage.k8s.io/snapshotter-secret-*
// parameters (templates resolved there), as the reference's
// GetCredentialsFromAnnotation reads them. The content is cluster-scoped:
// only the administrator and the controllers write its annotations.
func CallSecret(c *snapv1.VolumeSnapshotContent) (SecretRef, error) {
	name, okName := c.Annotations[snapshotapi.DeletionSecretName]
	ns, okNS := c.Annotations[snapshotapi.DeletionSecretNamespace]
	if !okName || !okNS {
		return SecretRef{}, nil
	}
	if name == "" || ns == "" {
		return SecretRef{}, fmt.Errorf("cannot retrieve secrets for snapshot content %q, err: secret name or namespace not specified", c.Name)
	}
	return SecretRef{Namespace: ns, Name: name}, nil
}

// ListSecret is the Secret of a ListSnapshots for content c of class
// params: the class's csi.storage.k8s.io/snapshotter-list-secret-name and
// -namespace, whose templates may name only ${volumesnapshotcontent.name}
// (the reference resolves them with no snapshot).
func ListSecret(params map[string]string, contentName string) (SecretRef, error) {
	return resolveSecret("snapshotter-list", snapshotapi.ListSecretNameParameter, snapshotapi.ListSecretNamespaceParameter,
		params, map[string]string{"volumesnapshotcontent.name": contentName})
}

// CreateSecretFromClass is the snapshotter secret a class names for a
// snapshot ns/name of content contentName, templates resolved as the
// reference's GetSecretReference does: the namespace may use
// ${volumesnapshotcontent.name} and ${volumesnapshot.namespace}, the name
// also ${volumesnapshot.name}. The snapshot loop writes it on the content
// as the deletion-secret annotations; CallSecret reads them back.
func CreateSecretFromClass(params map[string]string, contentName, snapshotNamespace, snapshotName string) (SecretRef, error) {
	vars := map[string]string{"volumesnapshotcontent.name": contentName, "volumesnapshot.namespace": snapshotNamespace,
		"volumesnapshot.name": snapshotName}
	return resolveSecret("snapshotter", snapshotapi.SecretNameParameter, snapshotapi.SecretNamespaceParameter, params, vars)
}

func resolveSecret(kind, nameKey, nsKey string, params, vars map[string]string) (SecretRef, error) {
	nameT, okName := params[nameKey]
	nsT, okNS := params[nsKey]
	switch {
	case okName != okNS:
		return SecretRef{}, fmt.Errorf("either name and namespace for %s secrets specified, Both must be specified", kind)
	case !okName:
		return SecretRef{}, nil
	case nameT == "" || nsT == "":
		return SecretRef{}, fmt.Errorf("%s secrets specified in parameters but value of either namespace or name is empty", kind)
	}
	nsVars := map[string]string{}
	for k, v := range vars {
		if k != "volumesnapshot.name" {
			nsVars[k] = v
		}
	}
	ns, err := expand(nsT, nsVars)
	if err != nil {
		return SecretRef{}, fmt.Errorf("error resolving value %q: %v", nsT, err)
	}
	if len(validation.IsDNS1123Label(ns)) > 0 {
		if nsT != ns {
			return SecretRef{}, fmt.Errorf("%q resolved to %q which is not a valid namespace name", nsT, ns)
		}
		return SecretRef{}, fmt.Errorf("%q is not a valid namespace name", nsT)
	}
	name, err := expand(nameT, vars)
	if err != nil {
		return SecretRef{}, fmt.Errorf("error resolving value %q: %v", nameT, err)
	}
	if len(validation.IsDNS1123Subdomain(name)) > 0 {
		if nameT != name {
			return SecretRef{}, fmt.Errorf("%q resolved to %q which is not a valid secret name", nameT, name)
		}
		return SecretRef{}, fmt.Errorf("%q is not a valid secret name", nameT)
	}
	return SecretRef{Namespace: ns, Name: name}, nil
}

// expand replaces ${key} and $key by vars[key], as os.Expand does; a key
// not in vars is an error naming every such key.
func expand(template string, vars map[string]string) (string, error) {
	var out strings.Builder
	var missing []string
	for i := 0; i < len(template); i++ {
		if template[i] != '$' || i+1 >= len(template) {
			out.WriteByte(template[i])
			continue
		}
		var key string
		if template[i+1] == '{' {
			end := strings.IndexByte(template[i+2:], '}')
			if end < 0 { // os.Expand drops a bad "${": so do we
				i++
				continue
			}
			key, i = template[i+2:i+2+end], i+2+end
		} else {
			j := i + 1
			for j < len(template) && isNameByte(template[j]) {
				j++
			}
			if j == i+1 {
				out.WriteByte('$')
				continue
			}
			key, i = template[i+1:j], j-1
		}
		v, ok := vars[key]
		if !ok && !slices.Contains(missing, key) {
			missing = append(missing, key)
		}
		out.WriteString(v)
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return "", fmt.Errorf("invalid tokens: %q", missing)
	}
	return out.String(), nil
}

func isNameByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}
