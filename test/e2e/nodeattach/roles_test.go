package nodeattach

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/deploy"
	"github.com/volplane/volplane/internal/cluster"
)

// nodeObjects are what the node role runs under, from deploy/ (its
// namespace, ServiceAccount, ClusterRole and the PV admission policy: the
// attacher patches its PV finalizer) and from deploy/attach (the
// attacher's grants and the attachments' admission policy), as files.
func nodeObjects() ([]runtime.Object, error) {
	base, err := deploy.Objects()
	if err != nil {
		return nil, err
	}
	want := map[string]bool{"volplane": true, "volplane-node": true, "volplane-node-volumes": true}
	var out []runtime.Object
	for _, o := range base {
		switch o := o.(type) {
		case *corev1.Namespace, *corev1.ServiceAccount, *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding,
			*admissionv1.ValidatingAdmissionPolicy, *admissionv1.ValidatingAdmissionPolicyBinding:
			if want[o.(metav1.Object).GetName()] {
				out = append(out, o)
			}
		}
	}
	s := runtime.NewScheme()
	utilruntime.Must(deploy.Register(s))
	decode := serializer.NewCodecFactory(s).UniversalDeserializer()
	for _, f := range []string{"rbac-node-attacher.yaml", "admission-node-attachments.yaml"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "..", "deploy", "attach", f))
		if err != nil {
			return nil, err
		}
		for _, doc := range bytes.Split(data, []byte("\n---\n")) {
			obj, _, err := decode.Decode(doc, nil, nil)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			out = append(out, obj)
		}
	}
	return out, nil
}

// attacherGrants are the rules of the component's ClusterRole.
func attacherGrants(objs []runtime.Object) []call {
	var out []call
	for _, o := range objs {
		if r, ok := o.(*rbacv1.ClusterRole); ok && r.Name == "volplane-node-attacher" {
			for _, rule := range r.Rules {
				for _, res := range rule.Resources {
					for _, v := range rule.Verbs {
						out = append(out, call{verb: v, group: rule.APIGroups[0], resource: res})
					}
				}
			}
		}
	}
	return out
}

// create makes each object with the admin client; one made already (by
// an earlier run of the test in this binary: -count) is left as it is.
func create(ctx context.Context, c kubernetes.Interface, objs []runtime.Object) error {
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.Namespace:
			_, err = c.CoreV1().Namespaces().Create(ctx, o, metav1.CreateOptions{})
		case *corev1.ServiceAccount:
			_, err = c.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.ClusterRole:
			_, err = c.RbacV1().ClusterRoles().Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.ClusterRoleBinding:
			_, err = c.RbacV1().ClusterRoleBindings().Create(ctx, o, metav1.CreateOptions{})
		case *admissionv1.ValidatingAdmissionPolicy:
			_, err = c.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, o, metav1.CreateOptions{})
		case *admissionv1.ValidatingAdmissionPolicyBinding:
			_, err = c.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, o, metav1.CreateOptions{})
		default:
			err = fmt.Errorf("unexpected %T", o)
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// nodeConfig authenticates as deploy/'s volplane-node ServiceAccount with
// a token bound to the node, as the DaemonSet pod's projected token is
// (the API server then knows the node: the admission policies read it);
// every request goes through log.
func nodeConfig(ctx context.Context, cp *cluster.ControlPlane, node string, log *requestLog) (*rest.Config, error) {
	n, err := cp.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	tr, err := cp.Client.CoreV1().ServiceAccounts("volplane").CreateToken(ctx, "volplane-node", &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To[int64](3600),
		BoundObjectRef:    &authv1.BoundObjectReference{Kind: "Node", APIVersion: "v1", Name: n.Name, UID: n.UID}}}, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	rc := rest.AnonymousClientConfig(cp.RESTConfig)
	rc.BearerToken = tr.Status.Token
	rc.QPS, rc.Burst = -1, 0
	rc.Wrap(log.wrap)
	return rc, nil
}

// call is one request as RBAC sees it, with the object's name and the
// answer's status.
type call struct {
	verb, group, resource, name string
	status                      int
}

func (c call) String() string {
	return fmt.Sprintf("%s %s.%s %s (%d)", c.verb, c.resource, c.group, c.name, c.status)
}

// requestLog records every resource request one node's loop makes.
type requestLog struct {
	mu    sync.Mutex
	calls []call
	parse request.RequestInfoFactory
}

func newRequestLog() *requestLog {
	return &requestLog{parse: request.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}}
}

func (l *requestLog) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(r)
		info, perr := l.parse.NewRequestInfo(r)
		if perr != nil || !info.IsResourceRequest {
			return resp, err
		}
		c := call{verb: info.Verb, group: info.APIGroup, resource: info.Resource, name: info.Name}
		if info.Subresource != "" {
			c.resource += "/" + info.Subresource
		}
		if err == nil {
			c.status = resp.StatusCode
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		l.calls = append(l.calls, c)
		return resp, err
	})
}

func (l *requestLog) all() []call {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

// uses says whether a call of the log is one the grant allows (a watch
// uses list too: informers may start either way).
func (l *requestLog) uses(g call) bool {
	return slices.ContainsFunc(l.all(), func(c call) bool {
		return (c.verb == g.verb || (g.verb == "list" && c.verb == "watch")) && c.group == g.group && c.resource == g.resource
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
