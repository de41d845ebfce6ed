package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/checkup"
	"github.com/volplane/volplane/internal/doctor"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// env is one test's world: a client and a namespace.
type env struct {
	t      *testing.T
	ctx    context.Context
	client kubernetes.Interface
	ns     string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), client: stack.CP.Client}
	e.ns = stacktest.Namespace(t)
	return e
}

func (e *env) eventually(what string, cond func() string) {
	e.t.Helper()
	stacktest.Eventually(e.t, what, cond, stack.EndedEarly)
}

func (e *env) must(err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatal(err)
	}
}

// cleanUp deletes the test's pods and claims and the volumes named, and
// waits until no volume and no VolumeAttachment is left.
func (e *env) cleanUp(volumes ...string) {
	_ = e.client.CoreV1().Pods(e.ns).DeleteCollection(e.ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{})
	_ = e.client.CoreV1().PersistentVolumeClaims(e.ns).DeleteCollection(e.ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	for _, name := range volumes {
		e.unhold(name)
		_ = e.client.CoreV1().PersistentVolumes().Delete(e.ctx, name, metav1.DeleteOptions{})
	}
	e.eventually("no volume left", func() string {
		list, err := e.client.CoreV1().PersistentVolumes().List(e.ctx, metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		var names []string
		for _, pv := range list.Items {
			names = append(names, pv.Name)
		}
		return strings.Join(names, ", ")
	})
	e.eventually("no VolumeAttachment left", func() string {
		list, err := e.client.StorageV1().VolumeAttachments().List(e.ctx, metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		if n := len(list.Items); n > 0 {
			return fmt.Sprintf("%d left", n)
		}
		return ""
	})
}

// pv creates a static volume of class, 1Gi, RWO, Retain, of source.
func (e *env) pv(name, class string, src corev1.PersistentVolumeSource, finalizers ...string) {
	e.t.Helper()
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers},
		Spec: corev1.PersistentVolumeSpec{StorageClassName: class,
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        src},
	}
	_, err := e.client.CoreV1().PersistentVolumes().Create(e.ctx, pv, metav1.CreateOptions{})
	e.must(err)
}

func hostPath(name string) corev1.PersistentVolumeSource {
	return corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + name}}
}

// claimOf creates a 1Gi claim of the manual class that names the volume,
// so that it binds that volume whatever else fits.
func (e *env) claimOf(name, volume string) {
	e.t.Helper()
	c := support.Claim(e.ns, name, manual, "1Gi")
	c.Spec.VolumeName = volume
	_, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Create(e.ctx, c, metav1.CreateOptions{})
	e.must(err)
}

// claim creates a claim of class and size, RWO.
func (e *env) claim(name, size, class string) *corev1.PersistentVolumeClaim {
	e.t.Helper()
	c, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Create(e.ctx, support.Claim(e.ns, name, class, size), metav1.CreateOptions{})
	e.must(err)
	return c
}

func (e *env) deleteClaim(name string) {
	e.t.Helper()
	e.must(e.client.CoreV1().PersistentVolumeClaims(e.ns).Delete(e.ctx, name, metav1.DeleteOptions{}))
}

// pod creates a pod on node using claim.
func (e *env) pod(name, node, claim string) {
	e.t.Helper()
	_, err := e.client.CoreV1().Pods(e.ns).Create(e.ctx, support.Pod(e.ns, name, node, claim), metav1.CreateOptions{})
	e.must(err)
}

func (e *env) claimPhase(name string, phase corev1.PersistentVolumeClaimPhase) func() string {
	return stacktest.ClaimPhase(e.ctx, e.client, e.ns, name, phase)
}

func (e *env) volumePhase(name string, phase corev1.PersistentVolumePhase) func() string {
	return stacktest.VolumePhase(e.ctx, e.client, name, phase)
}

func (e *env) podRunning(name string) func() string {
	return stacktest.PodRunning(e.ctx, e.client, e.ns, name)
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	stacktest.Golden(t, name, got, *update)
}

func (e *env) getClaim(name string) *corev1.PersistentVolumeClaim {
	e.t.Helper()
	c, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	e.must(err)
	return c
}

func (e *env) getVolume(name string) *corev1.PersistentVolume {
	e.t.Helper()
	pv, err := e.client.CoreV1().PersistentVolumes().Get(e.ctx, name, metav1.GetOptions{})
	e.must(err)
	return pv
}

// doctor runs `volplane doctor` with every threshold 0 and the stack's
// driver endpoints, in both formats, and returns the report and its
// normalized outputs. It looks an hour ahead, so that every age has the
// same width ("60m") and the table wraps the same in every run. The
// resourceVersions the fixes test differ from run to run, and so would
// the table's wrapping: the outputs compared are those of the report with
// each made "RV" (the table as doctor wrote it is checked for its width).
func (e *env) doctor() (doctor.Report, string, string) {
	e.t.Helper()
	var t, j bytes.Buffer
	later := time.Now().Add(time.Hour)
	cfg := checkup.DoctorConfig{Endpoints: stack.Drivers.Endpoints, Output: "table", Clock: clocktesting.NewFakePassiveClock(later)}
	r, err := checkup.Doctor(e.ctx, e.client, cfg, &t)
	e.must(err)
	manifest := false // the lines of a here-document are written as they paste
	for i, line := range strings.Split(t.String(), "\n") {
		switch {
		case strings.HasSuffix(line, "<<'EOF'"):
			manifest = true
		case line == "EOF":
			manifest = false
		case !manifest && len([]rune(line)) > doctor.Width:
			e.t.Errorf("doctor: line %d is %d columns: %q", i+1, len([]rune(line)), line)
		}
	}
	e.must(r.JSON(&j))
	var stable doctor.Report
	e.must(json.Unmarshal([]byte(resourceVersion.ReplaceAllString(j.String(), `$1\"RV\"`)), &stable))
	t.Reset()
	j.Reset()
	e.must(stable.Table(&t))
	e.must(stable.JSON(&j))
	return r, e.normalize(t.String()), e.normalize(j.String())
}

// resourceVersion is the value a fix's JSON patch tests, as -o json
// writes it.
var resourceVersion = regexp.MustCompile(`(\\"path\\": \\"/metadata/resourceVersion\\", \\"value\\": )\\"\d+\\"`)

// age is how long something lasted, which differs from run to run.
var age = regexp.MustCompile(`for \d+[smhd]\b`)

func (e *env) normalize(s string) string {
	s = strings.ReplaceAll(s, stack.DataDir(), "DATADIR")
	s = strings.ReplaceAll(s, e.ns, "NS")
	return age.ReplaceAllString(stacktest.StableNames(s), "for AGE")
}
