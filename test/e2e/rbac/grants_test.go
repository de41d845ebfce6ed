package rbac

import (
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
)

// grant is one verb on one resource of one group that a role may use,
// anywhere (namespace "") or in one namespace (a Role's).
type grant struct {
	call
}

// grantsOf expands the rules bound to the ServiceAccount in deploy/ into
// single grants. A wildcard is an error: it grants what no test can list.
func grantsOf(m *manifests, serviceAccount string) ([]grant, error) {
	subject := func(subjects []rbacv1.Subject) bool {
		return slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool {
			return s.Kind == rbacv1.ServiceAccountKind && s.Name == serviceAccount && s.Namespace == namespace
		})
	}
	var out []grant
	for _, b := range m.clusterRoleBindings {
		if !subject(b.Subjects) {
			continue
		}
		rules, err := m.rulesOf(b.RoleRef, "")
		if err != nil {
			return nil, fmt.Errorf("ClusterRoleBinding %s: %w", b.Name, err)
		}
		out = append(out, expand(rules, "")...)
	}
	for _, b := range m.roleBindings {
		if !subject(b.Subjects) {
			continue
		}
		rules, err := m.rulesOf(b.RoleRef, b.Namespace)
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
func (m *manifests) rulesOf(ref rbacv1.RoleRef, ns string) ([]rbacv1.PolicyRule, error) {
	switch ref.Kind {
	case "ClusterRole":
		for _, r := range m.clusterRoles {
			if r.Name == ref.Name {
				return r.Rules, nil
			}
		}
	case "Role":
		for _, r := range m.roles {
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
