package rbac

import (
	"fmt"
	"net/http"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// call is what RBAC decides on: one request's verb, API group, resource
// (with its subresource, "pods/status") and namespace ("" for cluster
// scope or all namespaces).
type call struct {
	verb, group, resource, namespace string
}

func (c call) String() string {
	where := ""
	if c.namespace != "" {
		where = " in " + c.namespace
	}
	return fmt.Sprintf("%s %s%s", c.verb, groupResource(c.group, c.resource), where)
}

// groupResource is "resource" in the core group, "resource.group" in others.
func groupResource(group, resource string) string {
	if group == "" {
		return resource
	}
	return resource + "." + group
}

// answered is a call with the status the API server gave it.
type answered struct {
	call
	status int
}

// requestLog records every API request one role's loops make, as the API
// server's authorizer sees it, with its answer.
type requestLog struct {
	mu    sync.Mutex
	calls []answered
	parse request.RequestInfoFactory
}

func newRequestLog() *requestLog {
	return &requestLog{parse: request.RequestInfoFactory{
		APIPrefixes:          sets.NewString("api", "apis"),
		GrouplessAPIPrefixes: sets.NewString("api"),
	}}
}

// wrap is for rest.Config.Wrap.
func (l *requestLog) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(r)
		info, perr := l.parse.NewRequestInfo(r)
		if perr != nil || !info.IsResourceRequest {
			return resp, err // discovery and the like: no RBAC resource
		}
		status := 0 // no answer
		if err == nil {
			status = resp.StatusCode
		}
		resource := info.Resource
		if info.Subresource != "" {
			resource += "/" + info.Subresource
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		l.calls = append(l.calls, answered{call{info.Verb, info.APIGroup, resource, info.Namespace}, status})
		return resp, err
	})
}

// all returns every call so far.
func (l *requestLog) all() []answered {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

// forbidden lists the calls answered 403, once each.
func (l *requestLog) forbidden() []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range l.all() {
		if c.status == http.StatusForbidden && !seen[c.String()] {
			seen[c.String()] = true
			out = append(out, c.String())
		}
	}
	slices.Sort(out)
	return out
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
