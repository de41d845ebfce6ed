package rbac

import (
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/volplane/volplane/deploy"
)

// grant is one verb on one resource of one group that a role may use,
// anywhere (namespace "") or in one namespace (a Role's).
type grant struct {
	call
}

// grantsOf expands the rules bound to the ServiceAccount in deploy/ into
// single grants. A wildcard is an error: it grants what no test can list.
func grantsOf(objs []runtime.Object, serviceAccount string) ([]grant, error) {
	subject := func(subjects []rbacv1.Subject) bool {
		return slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool {
			return s.Kind == rbacv1.ServiceAccountKind && s.Name == serviceAccount && s.Namespace == namespace
		})
	}
	var out []grant
	for _, b := range deploy.Of[*rbacv1.ClusterRoleBinding](objs) {
		if !subject(b.Subjects) {
			continue
		}
		rules, err := rulesOf(objs, b.RoleRef, "")
		if err != nil {
			return nil, fmt.Errorf("ClusterRoleBinding %s: %w", b.Name, err)
		}
		out = append(out, expand(rules, "")...)
	}
	for _, b := range deploy.Of[*rbacv1.RoleBinding](objs) {
		if !subject(b.Subjects) {
			continue
		}
		rules, err := rulesOf(objs, b.RoleRef, b.Namespace)
		if err != nil {
			return nil, fmt.Errorf("RoleBinding %s/%s: %w", b.Namespace, b.Name, err)
		}
		out = append(out, expand(rules, b.Namespace)...)
	}
	for _, g := range out {
		if g.verb == "*" || g.group == "*" || g.resource == "*" {
			return nil, fmt.Errorf("%s is granted a wildcard: %s", serviceAccount, g)
		}
	}
	return out, nil
}

// rulesOf are the rules of the role a binding in namespace ns refers to.
func rulesOf(objs []runtime.Object, ref rbacv1.RoleRef, ns string) ([]rbacv1.PolicyRule, error) {
	switch ref.Kind {
	case "ClusterRole":
		for _, r := range deploy.Of[*rbacv1.ClusterRole](objs) {
			if r.Name == ref.Name {
				return r.Rules, nil
			}
		}
	case "Role":
		for _, r := range deploy.Of[*rbacv1.Role](objs) {
			if r.Name == ref.Name && r.Namespace == ns {
				return r.Rules, nil
			}
		}
	}
	return nil, fmt.Errorf("refers to %s %s, which deploy/ does not have", ref.Kind, ref.Name)
}

func expand(rules []rbacv1.PolicyRule, ns string) []grant {
	var out []grant
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					out = append(out, grant{call{verb: v, group: g, resource: res, namespace: ns}})
				}
			}
		}
	}
	return out
}

// usedBy says whether one of the calls is one the grant allows. A watch
// uses list too: informers start with a streaming watch (client-go's
// WatchListClient) where the API server serves it, as this one does, and
// with a list where it does not (older servers, or the feature off), so
// every informer needs both.
func (g grant) usedBy(calls []answered) bool {
	return slices.ContainsFunc(calls, func(c answered) bool {
		verb := c.verb == g.verb || (g.verb == "list" && c.verb == "watch")
		return verb && c.group == g.group && c.resource == g.resource &&
			(g.namespace == "" || c.namespace == g.namespace)
	})
}
