package handoff

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/expansion"
	"github.com/volplane/volplane/internal/stacktest"
)

const (
	externalEvent = "Normal ExternalExpanding waiting for an external controller to expand this PVC"
	ebsEvent      = "Normal ExternalExpanding CSI migration enabled for kubernetes.io/aws-ebs; waiting for external resizer to expand the pvc"
	gceEvent      = "Normal ExternalExpanding CSI migration enabled for kubernetes.io/gce-pd; waiting for external resizer to expand the pvc"
	// quiet is how long a state must hold to count as final: the expander
	// gets many chances to act wrongly meanwhile.
	quiet = time.Second
)

// steady asserts, for a while, that claim name keeps exactly the events
// want and the resizer annotation annotation, and that the expander made
// exactly the writes writes.
func (e *env) steady(name string, annotation string, writes []string, want ...string) {
	e.t.Helper()
	slices.Sort(want)
	stacktest.Holds(e.t, "claim "+name+" at rest", quiet, func() string {
		if got := e.handOffEvents(name); !slices.Equal(got, want) {
			return fmt.Sprintf("events %q, want %q", got, want)
		}
		if got := e.claim(name).Annotations[expansion.HandOffResizerAnnotation]; got != annotation {
			return fmt.Sprintf("resizer annotation %q, want %q", got, annotation)
		}
		if got := e.loop.Writes.All(); !slices.Equal(got, writes) {
			return fmt.Sprintf("expander writes %q, want %q", got, writes)
		}
		return ""
	})
}

// A grown claim of a CSI volume is the external resizer's: the expander
// records its Normal event once and writes nothing, not even when the
// resizer later sets the claim's capacity (which queues the claim again).
func TestGrownCSIClaimIsAnnouncedOnceAndNeverWritten(t *testing.T) {
	e := newEnv(t)
	e.bound("data", e.class("hostpath.csi.volplane.io"), csiSource)
	e.start()
	e.grow("data", "2Gi")
	e.waitEvents("data", externalEvent)
	e.steady("data", "", nil, externalEvent)

	claim := e.claim("data")
	claim.Status.Capacity[corev1.ResourceStorage] = resource.MustParse("2Gi")
	if _, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).UpdateStatus(e.ctx, claim, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.steady("data", "", nil, externalEvent)
}

// A grown claim of an in-tree volume migrated to CSI gets the migration
// event and the annotation naming the CSI driver, written once through the
// claim's status subresource.
func TestGrownMigratedClaimIsAnnotatedWithItsCSIDriver(t *testing.T) {
	for _, tt := range []struct {
		plugin, driver, event string
		src                   corev1.PersistentVolumeSource
	}{
		{"kubernetes.io/aws-ebs", "ebs.csi.aws.com", ebsEvent, ebsSource},
		{"kubernetes.io/gce-pd", "pd.csi.storage.gke.io", gceEvent, gceSource},
	} {
		t.Run(tt.plugin, func(t *testing.T) {
			e := newEnv(t)
			e.bound("data", e.class(tt.plugin), tt.src)
			e.start()
			e.grow("data", "2Gi")
			e.waitEvents("data", tt.event)
			patch := []string{"PATCH /api/v1/namespaces/" + e.ns + "/persistentvolumeclaims/data/status"}
			e.eventually("resizer annotation", func() string {
				if got := e.claim("data").Annotations[expansion.HandOffResizerAnnotation]; got != tt.driver {
					return fmt.Sprintf("annotation %q, want %q", got, tt.driver)
				}
				// The API server shows the annotation before the expander's
				// client has the PATCH's response, which is when it is logged.
				if got := e.loop.Writes.All(); !slices.Equal(got, patch) {
					return fmt.Sprintf("expander writes %q, want %q", got, patch)
				}
				return ""
			})
			e.steady("data", tt.driver, patch, tt.event)
		})
	}
}

// The expander looks at every Bound claim when it starts, as the
// reference does, so a claim still waiting for its resizer is announced
// again; its annotation, already there, is not written again.
func TestRestartAnnouncesAgainWithoutWritingAgain(t *testing.T) {
	e := newEnv(t)
	e.bound("data", e.class("kubernetes.io/aws-ebs"), ebsSource)
	first := e.start()
	e.grow("data", "2Gi")
	e.eventually("annotated", func() string {
		if e.claim("data").Annotations[expansion.HandOffResizerAnnotation] == "" {
			return "no resizer annotation"
		}
		return ""
	})
	// The broadcaster drops what it has not written when it shuts down:
	// stop only once the first announcement is in.
	e.waitEvents("data", ebsEvent)
	first.Stop()

	e.start()
	e.waitEvents("data", ebsEvent, ebsEvent)
	e.steady("data", "ebs.csi.aws.com", nil, ebsEvent, ebsEvent)
}

// Bound claims whose request does not exceed their capacity are neither
// announced nor written, whatever else changes on them; a grown claim
// started after them shows the expander was at work meanwhile.
func TestClaimsThatNeedNothingAreLeftAlone(t *testing.T) {
	e := newEnv(t)
	csiClass, ebsClass := e.class("hostpath.csi.volplane.io"), e.class("kubernetes.io/aws-ebs")
	e.bound("csi", csiClass, csiSource)
	e.bound("ebs", ebsClass, ebsSource)
	e.bound("canary", csiClass, csiSource)
	e.start()
	relabeled := e.claim("ebs")
	relabeled.Labels = map[string]string{"touched": "yes"}
	if _, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Update(e.ctx, relabeled, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.grow("canary", "2Gi")
	e.waitEvents("canary", externalEvent)
	for _, name := range []string{"csi", "ebs"} {
		e.steady(name, "", nil)
	}
}

// `volplane controller --controllers expander` runs the loop, with the
// reference's event source.
func TestControllerManagerRunsTheExpander(t *testing.T) {
	e := newEnv(t)
	loops := stacktest.StartLoops(manager.Config{REST: stacktest.ControlPlane(t).RESTConfig,
		Controllers: []string{manager.Expander}, Workers: 2, ResyncPeriod: 2 * time.Second})
	t.Cleanup(func() {
		if err := loops.Stop(); err != nil {
			t.Errorf("loops: %v", err)
		}
	})
	e.bound("data", e.class("hostpath.csi.volplane.io"), csiSource)
	e.grow("data", "2Gi")
	stacktest.Eventually(t, "announced by the manager's expander", func() string {
		if got := e.handOffEvents("data"); !slices.Equal(got, []string{externalEvent}) {
			return fmt.Sprintf("events %q", got)
		}
		return ""
	}, loops.EndedEarly)
}
