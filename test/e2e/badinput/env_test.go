package badinput

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// env is one test's world: a client and a namespace.
type env struct {
	t      *testing.T
	ctx    context.Context
	client kubernetes.Interface
	ns     string
	// runs counts the tables run, for the name of each one's normal claim.
	runs int
	// began is when the test began, for writesAllowed.
	began time.Time
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return &env{t: t, ctx: context.Background(), client: stack.CP.Client, ns: stacktest.Namespace(t), began: time.Now()}
}

// eventually waits for cond, failing at once if a loop, the agent or a
// driver ended on its own.
func (e *env) eventually(what string, cond func() string) {
	e.t.Helper()
	stacktest.Eventually(e.t, what, cond, stack.EndedEarly)
}

// claimOpt changes a claim before it is created.
type claimOpt func(*corev1.PersistentVolumeClaim)

// claim is a 1Gi ReadWriteOnce claim of the default (Immediate, node-local)
// class, changed by opts.
func (e *env) claim(name string, opts ...claimOpt) *corev1.PersistentVolumeClaim {
	c := support.Claim(e.ns, name, bundle.ImmediateClass, "1Gi")
	for _, o := range opts {
		o(c)
	}
	return c
}

func (e *env) createClaim(c *corev1.PersistentVolumeClaim) error {
	_, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Create(e.ctx, c, metav1.CreateOptions{})
	return err
}

func (e *env) getClaim(name string) *corev1.PersistentVolumeClaim {
	e.t.Helper()
	c, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// class is a StorageClass of the node-local driver, Immediate and Delete,
// named after the test's namespace (classes are cluster-wide) and deleted
// when the test ends.
func (e *env) class(suffix string, change func(*storagev1.StorageClass)) *storagev1.StorageClass {
	sc := &storagev1.StorageClass{
		ObjectMeta:           metav1.ObjectMeta{Name: e.ns + "-" + suffix},
		Provisioner:          hostpath.DriverName,
		ReclaimPolicy:        ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode:    ptr.To(storagev1.VolumeBindingImmediate),
		AllowVolumeExpansion: ptr.To(true),
	}
	if change != nil {
		change(sc)
	}
	return sc
}

func (e *env) createClass(sc *storagev1.StorageClass) error {
	_, err := e.client.StorageV1().StorageClasses().Create(e.ctx, sc, metav1.CreateOptions{})
	if err == nil {
		e.t.Cleanup(func() {
			_ = e.client.StorageV1().StorageClasses().Delete(context.Background(), sc.Name, metav1.DeleteOptions{})
		})
	}
	return err
}

// events lists the events of the object name in namespace ns ("" for
// cluster-scoped objects, whose events go to "default") as
// "Type Reason: message", oldest first.
func (e *env) events(ns, name string) []string {
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	list, err := e.client.CoreV1().Events(ns).List(e.ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		return []string{err.Error()}
	}
	slices.SortFunc(list.Items, func(a, b corev1.Event) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	var out []string
	for _, ev := range list.Items {
		out = append(out, fmt.Sprintf("%s %s: %s", ev.Type, ev.Reason, ev.Message))
	}
	return out
}

// hasEvent says what is missing unless an event of the object matches
// want ("Type Reason: message"): the event starts with want, or, where
// want has "…" (each for a generated name), with what is before the
// first, and holds each part after it in order.
func (e *env) hasEvent(ns, name, want string) string {
	got := e.events(ns, name)
	if slices.ContainsFunc(got, func(ev string) bool { return matches(ev, want) }) {
		return ""
	}
	return fmt.Sprintf("no event %q on %s; events %q", want, name, got)
}

func matches(s, pattern string) bool {
	parts := strings.Split(pattern, "…")
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for _, p := range parts[1:] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return true
}

var getOptions = metav1.GetOptions{}

func (e *env) getVolume(name string) *corev1.PersistentVolume {
	e.t.Helper()
	pv, err := e.client.CoreV1().PersistentVolumes().Get(e.ctx, name, getOptions)
	if err != nil {
		e.t.Fatal(err)
	}
	return pv
}

func (e *env) getPod(name string) *corev1.Pod {
	e.t.Helper()
	p, err := e.client.CoreV1().Pods(e.ns).Get(e.ctx, name, getOptions)
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}
