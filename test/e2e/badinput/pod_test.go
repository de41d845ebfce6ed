package badinput

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Pods that use a claim wrongly never start; the pod's events say why.
func TestPodsUsingVolumesWrongly(t *testing.T) {
	e := newEnv(t)
	e.run([]edgeCase{
		{name: "block-mounted", make: claimWith(block), want: bound(provisioned)},
		{name: "filesystem-as-device", make: claimWith(), want: bound(provisioned)},
		{name: "once-pod", make: claimWith(modes(corev1.ReadWriteOncePod)), want: bound(provisioned)},
		// The class names node secrets that do not exist yet: the claim is
		// served, the PV records them for the node.
		{name: "stage-secret-missing", make: classWith(map[string]string{
			"csi.storage.k8s.io/node-stage-secret-name": "stage-secret", "csi.storage.k8s.io/node-stage-secret-namespace": e.ns}, nil),
			want: bound(provisioned)},
		{name: "publish-secret-missing", make: classWith(map[string]string{
			"csi.storage.k8s.io/node-publish-secret-name": "publish-secret", "csi.storage.k8s.io/node-publish-secret-namespace": e.ns}, nil),
			want: bound(provisioned)},
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
		// Fixed: the node agent staged and published without the
		// secrets the PV names.
		{name: "stage-secret-missing", make: usingClaim("stage-secret-missing", false),
			want: notRunning(`Warning FailedMount: MountVolume.MountDevice failed for volume "pvc-…" : fetching NodeStageSecretRef ` + e.ns +
				`/stage-secret failed: kubernetes.io/csi: failed to find the secret stage-secret in the namespace ` + e.ns + ` with error: secrets "stage-secret" not found`)},
		{name: "publish-secret-missing", make: usingClaim("publish-secret-missing", false),
			want: notRunning(`Warning FailedMount: MountVolume.SetUp failed for volume "pvc-…" : fetching NodePublishSecretRef ` + e.ns +
				`/publish-secret failed: kubernetes.io/csi: failed to find the secret publish-secret in the namespace ` + e.ns + ` with error: secrets "publish-secret" not found`)},
	})
	// Once the secrets exist, the retries mount them.
	secret := func(name string) maker {
		return func(e *env, _ string) error {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns}, StringData: map[string]string{"key": "value"}}
			_, err := e.client.CoreV1().Secrets(e.ns).Create(e.ctx, s, metav1.CreateOptions{})
			return err
		}
	}
	e.run([]edgeCase{
		{name: "stage-secret-missing", make: secret("stage-secret"), want: running},
		{name: "publish-secret-missing", make: secret("publish-secret"), want: running},
	})
	// The scheduler keeps a ReadWriteOncePod claim to one pod.
	e.run([]edgeCase{
		{name: "second-of-once-pod", make: usingClaim("once-pod", false),
			want: notRunning("Warning FailedScheduling: 0/2 nodes are available: 2 node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod.")},
		{name: "claim-missing", make: usingClaim("no-such-claim", false),
			want: notRunning(`Warning FailedScheduling: 0/2 nodes are available: persistentvolumeclaim "no-such-claim" not found.`)},
	})
}
