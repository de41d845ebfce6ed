package badinput

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// Pods that use a claim wrongly never start; the pod's events say why.
func TestPodsUsingVolumesWrongly(t *testing.T) {
	e := newEnv(t)
	e.run([]edgeCase{
		{name: "block-mounted", make: claimWith(block), want: bound(provisioned)},
		{name: "filesystem-as-device", make: claimWith(), want: bound(provisioned)},
		{name: "once-pod", make: claimWith(modes(corev1.ReadWriteOncePod)), want: bound(provisioned)},
	})
	notRunning := func(event string) func(e *env, name string) string {
		return func(e *env, name string) string {
			if p := e.getPod(name); p.Status.Phase != corev1.PodPending {
				return fmt.Sprintf("pod %s", p.Status.Phase)
			}
			return e.hasEvent(e.ns, name, event)
		}
	}
	running := func(e *env, name string) string {
		if p := e.getPod(name); p.Status.Phase != corev1.PodRunning {
			return fmt.Sprintf("pod %s; events %q", p.Status.Phase, e.events(e.ns, name))
		}
		return ""
	}
	usingClaim := func(claim string, device bool) maker {
		return func(e *env, name string) error { return e.pod(name, claim, device) }
	}
	failedToProcess := "Warning FailedMount: Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: "
	e.run([]edgeCase{
		// Fixed: the node agent mounted them as asked.
		{name: "block-mounted", make: usingClaim("block-mounted", false),
			want: notRunning(failedToProcess + "volume data has volumeMode Block, but is specified in volumeMounts")},
		{name: "filesystem-as-device", make: usingClaim("filesystem-as-device", true),
			want: notRunning(failedToProcess + "volume data has volumeMode Filesystem, but is specified in volumeDevices")},
		{name: "first-of-once-pod", make: usingClaim("once-pod", false), want: running},
	})
	// The scheduler keeps a ReadWriteOncePod claim to one pod.
	e.run([]edgeCase{
		{name: "second-of-once-pod", make: usingClaim("once-pod", false),
			want: notRunning("Warning FailedScheduling: 0/2 nodes are available: 2 node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod.")},
		{name: "claim-missing", make: usingClaim("no-such-claim", false),
			want: notRunning(`Warning FailedScheduling: 0/2 nodes are available: persistentvolumeclaim "no-such-claim" not found.`)},
	})
}
