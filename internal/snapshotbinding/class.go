package snapshotbinding

import (
	"fmt"
	"sort"
	"strings"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/volplane/volplane/internal/snapshotapi"
)

// DefaultClass is the one class annotated default for driver, or the
// reference's error: "cannot find default snapshot class" for none, "N
// default snapshot classes were found" for more than one.
func DefaultClass(classes []*snapv1.VolumeSnapshotClass, driver string) (*snapv1.VolumeSnapshotClass, error) {
	var found []*snapv1.VolumeSnapshotClass
	for _, c := range classes {
		if c != nil && c.Annotations[snapshotapi.DefaultClassAnnotation] == "true" && c.Driver == driver {
			found = append(found, c)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("cannot find default snapshot class")
	case 1:
		return found[0], nil
	}
	return nil, fmt.Errorf("%d default snapshot classes were found", len(found))
}

// classNamed is the class of that name, nil if none.
func classNamed(classes []*snapv1.VolumeSnapshotClass, name string) *snapv1.VolumeSnapshotClass {
	for _, c := range classes {
		if c != nil && c.Name == name {
			return c
		}
	}
	return nil
}

// SecretRef resolves the class's snapshotter secret parameters for the
// content contentName of snapshot, as the reference's GetSecretReference:
// both or neither of name and namespace; the namespace template may use
// ${volumesnapshotcontent.name} and ${volumesnapshot.namespace}, the name
// template also ${volumesnapshot.name}. nil, nil when the class names no
// secret.
func SecretRef(params map[string]string, contentName string, snapshot *snapv1.VolumeSnapshot) (*corev1.SecretReference, error) {
	nameT, hasName := params[snapshotapi.SecretNameParameter]
	nsT, hasNS := params[snapshotapi.SecretNamespaceParameter]
	switch {
	case hasName != hasNS:
		return nil, fmt.Errorf("failed to get name and namespace template from params: either name and namespace for Snapshotter secrets specified, Both must be specified")
	case !hasName:
		return nil, nil
	case nameT == "" || nsT == "":
		return nil, fmt.Errorf("failed to get name and namespace template from params: Snapshotter secrets specified in parameters but value of either namespace or name is empty")
	}
	nsTokens := map[string]string{"volumesnapshotcontent.name": contentName}
	nameTokens := map[string]string{"volumesnapshotcontent.name": contentName}
	if snapshot != nil {
		nsTokens["volumesnapshot.namespace"] = snapshot.Namespace
		nameTokens["volumesnapshot.namespace"] = snapshot.Namespace
		nameTokens["volumesnapshot.name"] = snapshot.Name
	}
	ns, err := resolve(nsT, nsTokens)
	if err != nil {
		return nil, err
	}
	if len(validation.IsDNS1123Label(ns)) > 0 {
		return nil, invalidResolved(nsT, ns, "namespace")
	}
	name, err := resolve(nameT, nameTokens)
	if err != nil {
		return nil, err
	}
	if len(validation.IsDNS1123Subdomain(name)) > 0 {
		return nil, invalidResolved(nameT, name, "secret")
	}
	return &corev1.SecretReference{Name: name, Namespace: ns}, nil
}

func invalidResolved(template, resolved, what string) error {
	if template != resolved {
		return fmt.Errorf("%q resolved to %q which is not a valid %s name", template, resolved, what)
	}
	return fmt.Errorf("%q is not a valid %s name", template, what)
}

// resolve expands ${token} and $token from tokens as os.Expand reads the
// reference's templates; any unknown token, or a "${" never closed, is an
// error naming them.
func resolve(template string, tokens map[string]string) (string, error) {
	var b strings.Builder
	missing := map[string]bool{}
	lookup := func(t string) {
		v, ok := tokens[t]
		if !ok {
			missing[t] = true
		}
		b.WriteString(v)
	}
	for i := 0; i < len(template); i++ {
		c := template[i]
		if c != '$' || i+1 == len(template) {
			b.WriteByte(c)
			continue
		}
		rest := template[i+1:]
		if rest[0] == '{' {
			end := strings.IndexByte(rest, '}')
			if end <= 1 {
				return "", fmt.Errorf("error resolving value %q: every \"${\" needs a token and a closing \"}\"", template)
			}
			lookup(rest[1:end])
			i += end + 1
			continue
		}
		n := 0
		for n < len(rest) && isNameByte(rest[n]) {
			n++
		}
		if n == 0 {
			b.WriteByte(c)
			continue
		}
		lookup(rest[:n])
		i += n
	}
	if len(missing) > 0 {
		var names []string
		for t := range missing {
			names = append(names, t)
		}
		sort.Strings(names)
		return "", fmt.Errorf("error resolving value %q: invalid tokens: %q", template, names)
	}
	return b.String(), nil
}

func isNameByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}
