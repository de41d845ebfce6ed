package adversarial

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	volumehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/volplane/volplane/internal/hostpath"
)

// Annotations volplane and Kubernetes read from claims.
const (
	annStorageProvisioner = volumehelpers.AnnStorageProvisioner
	annStorageResizer     = "volume.kubernetes.io/storage-resizer"
	annSelectedNode       = volumehelpers.AnnSelectedNode
	annBindCompleted      = volumehelpers.AnnBindCompleted
	annBoundByController  = volumehelpers.AnnBoundByController
)

// The tenant is who the tests say: it may write claims in its namespace,
// and can neither read PVs nor write claims elsewhere.
func TestTheTenantHoldsOnlyEditInItsNamespace(t *testing.T) {
	w := &world{t: t, ctx: t.Context()}
	if _, err := tenant.CoreV1().PersistentVolumeClaims(evilNS).List(w.ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("the tenant cannot list its own claims: %v", err)
	}
	if _, err := tenant.CoreV1().PersistentVolumes().List(w.ctx, metav1.ListOptions{}); err == nil {
		t.Error("the tenant can list PVs")
	}
	if _, err := tenant.CoreV1().PersistentVolumeClaims(victimNS).List(w.ctx, metav1.ListOptions{}); err == nil {
		t.Error("the tenant can list the victim's claims")
	}
	if _, err := tenant.CoreV1().PersistentVolumeClaims(victimNS).Create(w.ctx, newClaim("x", localClass), metav1.CreateOptions{}); err == nil {
		t.Error("the tenant can create claims in the victim's namespace")
	}
}

// (a) The reproduction: a claim of a class that does not exist,
// carrying the in-progress finalizer and a create request recorded by
// hand that names the victim's volume, is deleted. Its cleanup must not
// delete the victim's backend volume (on main a344c76 it does).
func TestForgedCreateRequestDeletesNoOtherVolume(t *testing.T) {
	for _, tc := range []struct {
		name, class string
		victim      func(*world) victimVolume
		driver      string
		pin         bool
	}{
		{"node-local, class missing", "no-such-class", func(w *world) victimVolume { return w.data }, hostpath.DriverName, true},
		{"node-local, unpinned", "no-such-class", func(w *world) victimVolume { return w.data }, hostpath.DriverName, false},
		{"network, class missing", "no-such-class", func(w *world) victimVolume { return w.shared }, hostpath.NetworkDriverName, false},
		// A real class of the other driver: the request is replayed on
		// the driver the claim's annotation names, not the class's.
		{"network, through a node-local class", localClass, func(w *world) victimVolume { return w.shared }, hostpath.NetworkDriverName, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := begin(t)
			v := tc.victim(w)
			node := ""
			if tc.pin {
				node = v.node
			}
			w.evilClaim("b", tc.class, forged(v.pv.Name, tc.driver, node))
			w.evilDelete("b")
			t.Logf("claim b deleted: %q", w.deletedAnswer("b"))
			w.verify()
		})
	}
}
