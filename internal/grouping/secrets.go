package grouping

import (
	"fmt"
	"strings"

	vgsv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/volplane/volplane/internal/snapshotapi"
)

// SecretRef resolves a class's secret parameters (nameKey and
// namespaceKey: the group-snapshotter or group-snapshotter-get pair), as
// the reference's GetGroupSnapshotSecretReference does: nil when the class
// names none; both or neither must be set; the namespace may use
// ${volumegroupsnapshotcontent.name} and ${volumegroupsnapshot.namespace},
// the name also ${volumegroupsnapshot.name}. group may be nil (the sidecar
// does not read the group): then only the content's name resolves.
func SecretRef(params map[string]string, nameKey, namespaceKey, contentName string, group *vgsv1.VolumeGroupSnapshot) (*v1.SecretReference, error) {
	nameT, nsT := params[nameKey], params[namespaceKey]
	if nameT == "" && nsT == "" {
		return nil, nil
	}
	if nameT == "" || nsT == "" {
		return nil, fmt.Errorf("failed to get name and namespace template from params: either name and namespace for Snapshotter secrets specified, Both must be specified")
	}
	nsParams := map[string]string{"volumegroupsnapshotcontent.name": contentName}
	nameParams := map[string]string{"volumegroupsnapshotcontent.name": contentName}
	if group != nil {
		nsParams["volumegroupsnapshot.namespace"] = group.Namespace
		nameParams["volumegroupsnapshot.namespace"] = group.Namespace
		nameParams["volumegroupsnapshot.name"] = group.Name
	}
	ns, err := resolve(nsT, nsParams)
	if err != nil {
		return nil, err
	}
	if len(validation.IsDNS1123Label(ns)) > 0 {
		return nil, fmt.Errorf("%q resolved to %q which is not a valid namespace name", nsT, ns)
	}
	name, err := resolve(nameT, nameParams)
	if err != nil {
		return nil, err
	}
	if len(validation.IsDNS1123Subdomain(name)) > 0 {
		return nil, fmt.Errorf("%q resolved to %q which is not a valid secret name", nameT, name)
	}
	return &v1.SecretReference{Name: name, Namespace: ns}, nil
}

// resolve replaces every ${key} of template; a key not in params is an
// error naming it.
func resolve(template string, params map[string]string) (string, error) {
	var b strings.Builder
	rest := template
	for {
		i := strings.Index(rest, "${")
		if i < 0 {
			b.WriteString(rest)
			return b.String(), nil
		}
		j := strings.Index(rest[i:], "}")
		if j < 0 {
			return "", fmt.Errorf("error resolving value %q: unterminated ${", template)
		}
		key := rest[i+2 : i+j]
		v, ok := params[key]
		if !ok {
			return "", fmt.Errorf("error resolving value %q: invalid key %s", template, key)
		}
		b.WriteString(rest[:i])
		b.WriteString(v)
		rest = rest[i+j+1:]
	}
}

// DeletionSecret is the secret a content records for
// DeleteVolumeGroupSnapshot (its deletion-secret annotations), nil if
// none; a record with only one half is an error. The annotations are
// written by the snapshot-controller on a cluster-scoped content, which no
// tenant can write.
func DeletionSecret(c *vgsv1.VolumeGroupSnapshotContent) (*v1.SecretReference, error) {
	name, okN := c.Annotations[snapshotapi.GroupDeletionSecretName]
	ns, okNS := c.Annotations[snapshotapi.GroupDeletionSecretNamespace]
	if !okN || !okNS {
		return nil, nil
	}
	if name == "" || ns == "" {
		return nil, fmt.Errorf("cannot retrieve secrets for group snapshot content %#v, err: secret name or namespace not specified", c.Name)
	}
	return &v1.SecretReference{Name: name, Namespace: ns}, nil
}
