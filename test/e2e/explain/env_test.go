package explain

import (
	"bytes"
	"context"
	encjson "encoding/json"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/explain"
	"github.com/volplane/volplane/internal/inspect"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// env is one test's world: a client, a namespace, and the cluster-scoped
// objects the test made (removed when it ends).
type env struct {
	t       *testing.T
	ctx     context.Context
	client  kubernetes.Interface
	ns      string
	volumes []string
	classes []string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), client: stack.CP.Client}
	e.eventually("no volume left by earlier tests", func() string {
		return e.volumesLeft(func(*corev1.PersistentVolume) bool { return true })
	})
	e.ns = stacktest.Namespace(t)
	t.Cleanup(e.cleanUp)
	return e
}

func (e *env) eventually(what string, cond func() string) {
	e.t.Helper()
	stacktest.Eventually(e.t, what, cond, stack.EndedEarly)
}

// volumesLeft names the volumes that match, "" when none.
func (e *env) volumesLeft(match func(*corev1.PersistentVolume) bool) string {
	list, err := e.client.CoreV1().PersistentVolumes().List(e.ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var names []string
	for _, pv := range list.Items {
		if match(&pv) {
			names = append(names, pv.Name)
		}
	}
	return strings.Join(names, ", ")
}

// cleanUp deletes the test's pods and claims, waits for their volumes to
// be reclaimed, and deletes the volumes and classes the test made.
func (e *env) cleanUp() {
	bg := metav1.DeleteOptions{}
	_ = e.client.CoreV1().Pods(e.ns).DeleteCollection(e.ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{})
	_ = e.client.CoreV1().PersistentVolumeClaims(e.ns).DeleteCollection(e.ctx, bg, metav1.ListOptions{})
	for _, name := range e.volumes {
		e.unhold(name)
		_ = e.client.CoreV1().PersistentVolumes().Delete(e.ctx, name, bg)
	}
	e.eventually("the test's volumes are gone", func() string {
		return e.volumesLeft(func(pv *corev1.PersistentVolume) bool {
			return pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.Namespace == e.ns || contains(e.volumes, pv.Name)
		})
	})
	for _, name := range e.classes {
		_ = e.client.StorageV1().StorageClasses().Delete(e.ctx, name, bg)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// holdFinalizer keeps a volume being deleted until the test ends.
const holdFinalizer = "example.com/hold"

func (e *env) unhold(name string) {
	pv, err := e.client.CoreV1().PersistentVolumes().Get(e.ctx, name, metav1.GetOptions{})
	if err != nil || !contains(pv.Finalizers, holdFinalizer) {
		return
	}
	var keep []string
	for _, f := range pv.Finalizers {
		if f != holdFinalizer {
			keep = append(keep, f)
		}
	}
	pv.Finalizers = keep
	_, _ = e.client.CoreV1().PersistentVolumes().Update(e.ctx, pv, metav1.UpdateOptions{})
}

type pvOpt func(*corev1.PersistentVolume)

// pv creates a static hostPath volume of class, RWO, Filesystem, Retain.
func (e *env) pv(name, size, class string, opts ...pvOpt) {
	e.t.Helper()
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			StorageClassName:              class,
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + name}},
		},
	}
	for _, o := range opts {
		o(pv)
	}
	e.volumes = append(e.volumes, name)
	if _, err := e.client.CoreV1().PersistentVolumes().Create(e.ctx, pv, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func pvLabels(kv ...string) pvOpt {
	return func(pv *corev1.PersistentVolume) {
		pv.Labels = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			pv.Labels[kv[i]] = kv[i+1]
		}
	}
}
func pvModes(m ...corev1.PersistentVolumeAccessMode) pvOpt {
	return func(pv *corev1.PersistentVolume) { pv.Spec.AccessModes = m }
}
func pvBlock() pvOpt {
	return func(pv *corev1.PersistentVolume) { pv.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeBlock) }
}
func pvAttributesClass(name string) pvOpt {
	return func(pv *corev1.PersistentVolume) {
		pv.Spec.VolumeAttributesClassName = ptr.To(name)
		pv.Spec.PersistentVolumeSource = corev1.PersistentVolumeSource{
			CSI: &corev1.CSIPersistentVolumeSource{Driver: "static.example.com", VolumeHandle: pv.Name}}
	}
}
func pvHeld() pvOpt {
	return func(pv *corev1.PersistentVolume) { pv.Finalizers = append(pv.Finalizers, holdFinalizer) }
}
func pvClaimRef(ns, name, uid string) pvOpt {
	return func(pv *corev1.PersistentVolume) {
		pv.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: name}
		pv.Spec.ClaimRef.UID = types.UID(uid)
	}
}

// class creates a storage class of provisioner with binding mode Immediate.
func (e *env) class(name, provisioner string) {
	e.t.Helper()
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: provisioner,
		ReclaimPolicy: ptr.To(corev1.PersistentVolumeReclaimDelete), VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate)}
	e.classes = append(e.classes, name)
	if _, err := e.client.StorageV1().StorageClasses().Create(e.ctx, sc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		e.t.Fatal(err)
	}
}

type claimOpt func(*corev1.PersistentVolumeClaim)

// claim creates a claim of class, RWO.
func (e *env) claim(name, size, class string, opts ...claimOpt) {
	e.t.Helper()
	c := support.Claim(e.ns, name, class, size)
	for _, o := range opts {
		o(c)
	}
	if _, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Create(e.ctx, c, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func claimSelector(k, v string) claimOpt {
	return func(c *corev1.PersistentVolumeClaim) {
		c.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
	}
}

func (e *env) getClaim(name string) *corev1.PersistentVolumeClaim {
	e.t.Helper()
	c, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

func (e *env) getVolume(name string) *corev1.PersistentVolume {
	e.t.Helper()
	pv, err := e.client.CoreV1().PersistentVolumes().Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return pv
}

// pod creates a pod using claim; node "" leaves it to the scheduler, and a
// node that does not exist keeps it unscheduled.
func (e *env) pod(name, node, claim string) {
	e.t.Helper()
	if _, err := e.client.CoreV1().Pods(e.ns).Create(e.ctx, support.Pod(e.ns, name, node, claim), metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) claimPhase(name string, phase corev1.PersistentVolumeClaimPhase) func() string {
	return stacktest.ClaimPhase(e.ctx, e.client, e.ns, name, phase)
}

func (e *env) volumePhase(name string, phase corev1.PersistentVolumePhase) func() string {
	return stacktest.VolumePhase(e.ctx, e.client, name, phase)
}

// explain makes the report on one object and renders it in both formats.
// The golden table is rendered from the normalised report, so that names
// of this run (host, ages) cannot move its line breaks; the width check
// runs on the real one.
func (e *env) explain(kind, name string) (table, json string) {
	e.t.Helper()
	report, err := inspect.Report(e.ctx, e.client, kind, name, e.ns)
	if err != nil {
		e.t.Fatalf("explain %s %s: %v", kind, name, err)
	}
	var raw bytes.Buffer
	if err := report.Table(&raw); err != nil {
		e.t.Fatal(err)
	}
	checkWidth(e.t, kind+" "+name, raw.String())
	var j bytes.Buffer
	if err := explain.JSON(&j, report); err != nil {
		e.t.Fatal(err)
	}
	json = e.normalize(j.String())
	normal := reflect.New(reflect.TypeOf(report))
	if err := encjson.Unmarshal([]byte(json), normal.Interface()); err != nil {
		e.t.Fatal(err)
	}
	var t bytes.Buffer
	if err := normal.Elem().Interface().(inspect.Table).Table(&t); err != nil {
		e.t.Fatal(err)
	}
	return t.String(), json
}

// checkWidth fails the test for a table line over 80 columns (before the
// volatile parts are shortened).
func checkWidth(t *testing.T, what, table string) {
	t.Helper()
	for i, line := range strings.Split(table, "\n") {
		if n := len([]rune(line)); n > 80 {
			t.Errorf("explain %s: line %d is %d columns: %q", what, i+1, n, line)
		}
	}
}

// ago is an age in a heartbeat's note ("renewed 4s ago"); timestamp is
// when a deletion began.
var (
	ago       = regexp.MustCompile(`[0-9][0-9a-z.]* ago`)
	timestamp = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)
)

// normalize replaces what differs from run to run: the namespace, the
// host (a heartbeat's holder), generated names and ages.
func (e *env) normalize(s string) string {
	s = strings.ReplaceAll(s, e.ns, "NS")
	if host, err := os.Hostname(); err == nil && host != "" {
		s = strings.ReplaceAll(s, host, "HOST")
	}
	s = stacktest.StableNames(s)
	s = timestamp.ReplaceAllString(s, "TIME")
	s = strings.ReplaceAll(s, "just now", "AGO ago")
	return ago.ReplaceAllString(s, "AGO ago")
}

// check compares both formats of a report with their golden files.
func (e *env) check(name, kind, object string) {
	e.t.Helper()
	table, json := e.explain(kind, object)
	stacktest.Golden(e.t, name+".txt", table, *update)
	stacktest.Golden(e.t, name+".json", json, *update)
}

// hasEvent waits for an event of reason on the claim.
func (e *env) hasEvent(claim, reason string) func() string {
	return e.eventOn("PersistentVolumeClaim", claim, reason)
}

// podEvent waits for an event of reason on the pod.
func (e *env) podEvent(pod, reason string) func() string {
	return e.eventOn("Pod", pod, reason)
}

func (e *env) eventOn(kind, name, reason string) func() string {
	return func() string {
		list, err := e.client.CoreV1().Events(e.ns).List(e.ctx, metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		for _, ev := range list.Items {
			if ev.InvolvedObject.Kind == kind && ev.InvolvedObject.Name == name && ev.Reason == reason {
				return ""
			}
		}
		return "no " + reason + " event on " + kind + " " + name
	}
}

func (e *env) podRunning(name string) func() string {
	return stacktest.PodRunning(e.ctx, e.client, e.ns, name)
}
