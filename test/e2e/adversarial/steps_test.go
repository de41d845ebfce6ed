package adversarial

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/provisioning"
)

// boundClaim is the tenant's claim name of class, once Bound.
func (w *world) boundClaim(name, class string) *corev1.PersistentVolumeClaim {
	w.t.Helper()
	w.evilClaim(name, class)
	w.eventually("claim "+name+" Bound", func() string {
		if bound(w.claim(evilNS, name)) {
			return ""
		}
		return "not Bound"
	})
	return w.claim(evilNS, name)
}

// (h) The provisioner's marks (in-progress finalizer, create request,
// endpoint pin) written onto the tenant's own claims at each step of
// their life, naming the victim's volume, and deletes in between.
func TestProvisionerMarksAtEachStep(t *testing.T) {
	// Put on a Bound claim, which is then deleted.
	t.Run("on a Bound claim, then deleted", func(t *testing.T) {
		w := begin(t)
		w.boundClaim("own", localClass)
		w.evilUpdate("own", forged(w.data.pv.Name, hostpath.DriverName, w.data.node))
		w.evilDelete("own")
		t.Logf("claim own deleted: %q", w.deletedAnswer("own"))
		w.verify()
	})
	// Put on a Pending claim that names another volume in spec.volumeName:
	// "bound elsewhere", which the provisioner cleans up without a delete.
	t.Run("on a Pending claim naming the victim's volume, not deleted", func(t *testing.T) {
		w := begin(t)
		w.evilClaim("elsewhere", waitClass, volumeNamed(w.data.pv.Name), forged(w.data.pv.Name, hostpath.DriverName, w.data.node))
		w.eventually("claim elsewhere cleaned up, or its cleanup refused", func() string {
			c := w.claim(evilNS, "elsewhere")
			if !slices.Contains(c.Finalizers, provisioning.ClaimFinalizer) || w.warning(evilNS, c.UID, "ProvisioningCleanupFailed") != "" {
				return ""
			}
			return fmt.Sprintf("finalizers %v", c.Finalizers)
		})
		w.filesThere() // before the tenant deletes anything
		w.verify()
	})
	// Put on a claim while it waits for its first consumer, removed again,
	// put back, and the claim deleted.
	t.Run("put, removed, put back on a waiting claim, then deleted", func(t *testing.T) {
		w := begin(t)
		w.evilClaim("waiting", waitClass, forged(w.shared.pv.Name, hostpath.NetworkDriverName, ""))
		w.evilUpdate("waiting", func(c *corev1.PersistentVolumeClaim) {
			c.Finalizers = slices.DeleteFunc(c.Finalizers, func(f string) bool { return f == provisioning.ClaimFinalizer })
		})
		// Put back naming the victim's node-local volume; no selected node,
		// so the claim keeps waiting and nothing races the delete.
		w.evilUpdate("waiting", forged(w.data.pv.Name, hostpath.DriverName, w.data.node))
		w.evilDelete("waiting")
		t.Logf("claim waiting deleted: %q", w.deletedAnswer("waiting"))
		w.verify()
	})
}

// (h) A recorded request under the claim's own name (pvc-<own uid>, which
// passes a check of the name) that clones the victim's volume: the
// cleanup of the deleted claim must not leave a copy of the victim's data
// behind.
func TestRecordedRequestCloningTheVictimsVolume(t *testing.T) {
	for _, tc := range []struct {
		name   string
		victim func(*world) victimVolume
		class  string
		driver string
	}{
		{"node-local", func(w *world) victimVolume { return w.data }, "no-such-class", hostpath.DriverName},
		{"network", func(w *world) victimVolume { return w.shared }, "no-such-class", hostpath.NetworkDriverName},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := begin(t)
			v := tc.victim(w)
			w.evilClaim("copy", tc.class)
			w.evilUpdate("copy", func(c *corev1.PersistentVolumeClaim) {
				forged("", tc.driver, v.node)(c)
				c.Annotations[provisioning.AnnCreateRequest] = fmt.Sprintf(`{"name":"pvc-%s","capacityRange":{"requiredBytes":"1"},`+
					`"volumeCapabilities":[{"mount":{},"accessMode":{"mode":"SINGLE_NODE_WRITER"}}],"volumeContentSource":{"volume":{"volumeId":%q}}}`,
					c.UID, v.pv.Spec.CSI.VolumeHandle)
			})
			w.evilDelete("copy")
			t.Logf("claim copy deleted: %q", w.deletedAnswer("copy"))
			w.verify()
		})
	}
}

// (h) The recycler's marks on the tenant's objects: its annotations on a
// claim, its label naming the victim's PV on a pod of the tenant's. They
// are the recycler's own on PVs and pods of its namespace, never read from
// a tenant's.
func TestRecyclerMarksOnTheTenantsObjects(t *testing.T) {
	w := begin(t)
	w.boundClaim("own", localClass)
	w.evilUpdate("own", annotated(binding.AnnRecyclerPod, string(w.data.claim.UID), binding.AnnRecycledClaim, string(w.data.claim.UID)))
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "recycler-for-" + w.data.pv.Name,
			Labels:      map[string]string{"recycler.volplane.io/volume": w.data.pv.Name},
			Annotations: map[string]string{binding.AnnRecycledClaim: string(w.data.claim.UID)}},
		Spec: corev1.PodSpec{NodeName: w.data.node, RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "scrub", Image: "busybox:1.37"}}},
	}
	_, err := tenant.CoreV1().Pods(evilNS).Create(w.ctx, p, metav1.CreateOptions{})
	w.must(err)
	t.Logf("pod %s: %q", p.Name, w.podAnswered(p.Name, ""))
	w.evilDelete("own")
	t.Logf("claim own deleted: %q", w.deletedAnswer("own"))
	w.verify()
}
