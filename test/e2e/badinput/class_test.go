package badinput

import (
	"fmt"
	"slices"
	"testing"

	storagev1 "k8s.io/api/storage/v1"

	"github.com/volplane/volplane/internal/hostpath"
)

// Reserved class parameters (csi.storage.k8s.io/...).
const (
	provSecretName = "csi.storage.k8s.io/provisioner-secret-name"
	provSecretNS   = "csi.storage.k8s.io/provisioner-secret-namespace"
)

// StorageClasses the API server accepts but no driver can serve as they
// say: each claim of them waits with a Warning naming the mistake, or is
// served where the mistake is harmless (said per case).
func TestMalformedClassParameters(t *testing.T) {
	e := newEnv(t)
	garbageMountOptions := []string{"--no-such-option", "", "a=b=c,,"}
	failed := func(msg string) func(e *env, name string) string {
		return pending("Warning ProvisioningFailed: " + msg)
	}
	e.run([]edgeCase{
		// The bundled driver has no class parameters and ignores what it
		// does not know, as many drivers do: the claim is served.
		// Questionable (a typo goes unnoticed), left to the driver.
		{name: "unknown-driver-keys", make: classWith(map[string]string{"foo": "bar", hostpath.ParamIOPS: "abc"}, nil),
			want: bound(provisioned)},
		{name: "unknown-reserved-key", make: classWith(map[string]string{"csi.storage.k8s.io/foo": "x"}, nil),
			want: failed(`failed to strip CSI Parameters of prefixed keys: found unknown parameter key "csi.storage.k8s.io/foo" with reserved namespace csi.storage.k8s.io/`)},
		// Fixed: os.Expand dropped the unclosed "${", and the claim
		// waited for a secret named "pvc.name".
		{name: "secret-template-unclosed", make: classWith(map[string]string{provSecretName: "${pvc.name", provSecretNS: "default"}, nil),
			want: failed(`error resolving value "${pvc.name": every "${" needs a token and a closing "}"`)},
		{name: "secret-template-unknown-token", make: classWith(map[string]string{provSecretName: "${pvc.uid}", provSecretNS: "default"}, nil),
			want: failed(`error resolving value "${pvc.uid}": invalid tokens: ["pvc.uid"]`)},
		{name: "secret-missing", make: classWith(map[string]string{provSecretName: "nope", provSecretNS: "default"}, nil),
			want: failed(`error getting secret nope in namespace default: secrets "nope" not found`)},
		{name: "secret-name-only", make: classWith(map[string]string{provSecretName: "nope"}, nil),
			want: failed(`failed to get name and namespace template from params: either name and namespace for Provisioner secrets specified, Both must be specified`)},
		{name: "secret-namespace-invalid", make: classWith(map[string]string{provSecretName: "a", provSecretNS: "Not_A_Namespace"}, nil),
			want: failed(`"Not_A_Namespace" is not a valid namespace name`)},
		// Only the provisioner secret is read to provision; the node-stage
		// one is recorded on the PV for the node, as the reference does.
		{name: "node-stage-secret-missing", make: classWith(map[string]string{
			"csi.storage.k8s.io/node-stage-secret-name": "nope", "csi.storage.k8s.io/node-stage-secret-namespace": "default"}, nil),
			want: bound(provisioned)},
		// The fstype goes to the driver in the capability; the bundled
		// driver's volumes are directories and it ignores it.
		{name: "fstype-garbage", make: classWith(map[string]string{"csi.storage.k8s.io/fstype": "not a fs!"}, nil),
			want: bound(provisioned)},
		// Nobody serves it: the binder says who it waits for, once, and
		// the claim waits (as the reference: a provisioner may come).
		{name: "provisioner-nobody-serves", make: classWith(nil, func(sc *storagev1.StorageClass) { sc.Provisioner = "example.com/nobody" }),
			want: pending("Normal ExternalProvisioning: Waiting for a volume to be created either by the external provisioner 'example.com/nobody' or manually by the system administrator.")},
		// Fixed: the first node's driver was asked anyway, refused, and a
		// retry pinned to it provisioned there, outside the class's topology.
		{name: "topology-no-such-node", make: classWith(nil, allowedTopology(hostpath.TopologyKey, "ghost")),
			want: failed(`no node served by driver hostpath.csi.volplane.io is in the topology the claim may use: topology.volplane.io/node=ghost`)},
		{name: "topology-unknown-key", make: classWith(nil, allowedTopology("example.com/zone", "z1")),
			want: failed(`no node served by driver hostpath.csi.volplane.io is in the topology the claim may use: example.com/zone=z1`)},
		// Mount options are the kernel's to judge, at mount time: the PV
		// carries them as given.
		{name: "mount-options-garbage", make: classWith(nil, func(sc *storagev1.StorageClass) { sc.MountOptions = garbageMountOptions }),
			want: all(bound(provisioned), func(e *env, name string) string {
				pv := e.getVolume(e.getClaim(name).Spec.VolumeName)
				if !slices.Equal(pv.Spec.MountOptions, garbageMountOptions) {
					return fmt.Sprintf("PV mount options %q", pv.Spec.MountOptions)
				}
				return ""
			})},
	})
	// Nothing was provisioned outside the class's topology.
	for _, name := range []string{"topology-no-such-node", "topology-unknown-key"} {
		if c := e.getClaim(name); c.Spec.VolumeName != "" {
			t.Errorf("%s: bound to %s", name, c.Spec.VolumeName)
		}
	}
}
