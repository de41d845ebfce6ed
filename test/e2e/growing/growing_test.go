package growing

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/expansion"
	"github.com/volplane/volplane/internal/hostpath"
)

var (
	localResizer   = expansion.EventComponent(hostpath.DriverName)
	networkResizer = expansion.EventComponent(hostpath.NetworkDriverName)
)

// A node-local claim no pod uses grows on the controller alone.
func TestUnusedLocalClaimGrows(t *testing.T) {
	e := newEnv(t)
	e.claim("data", bundle.ImmediateClass)
	e.grow("data", "2Gi")
	e.waitGrown("data", "2Gi")
	e.waitEvents("data", "volume_expand ExternalExpanding", localResizer+" Resizing", localResizer+" VolumeResizeSuccessful")
}

// A network claim in use by a running pod grows online: the driver, then
// the node that has it published.
func TestInUseNetworkClaimGrowsOnline(t *testing.T) {
	e := newEnv(t)
	e.claim("shared", bundle.NetworkClass)
	e.pod("writer", "shared")
	e.grow("shared", "2Gi")
	e.waitGrown("shared", "2Gi")
	e.waitEvents("shared", "volume_expand ExternalExpanding", networkResizer+" Resizing",
		networkResizer+" FileSystemResizeRequired", " FileSystemResizeSuccessful")
}

// A network claim no pod uses is grown by the driver at once and by the
// node when the next pod mounts it, before that pod runs.
func TestUnusedNetworkClaimGrowsAtTheNextMount(t *testing.T) {
	e := newEnv(t)
	e.claim("shared", bundle.NetworkClass)
	e.grow("shared", "2Gi")
	e.eventually("claim waiting for the node", func() string {
		if s := expansion.ResizeStatus(e.getClaim("shared")); s != corev1.PersistentVolumeClaimNodeResizePending {
			return "resize status " + string(s) + "; events " + e.events("shared")
		}
		return ""
	})
	e.pod("reader", "shared")
	e.waitGrown("shared", "2Gi")
	e.waitEvents("shared", networkResizer+" FileSystemResizeRequired", " FileSystemResizeSuccessful")
}
