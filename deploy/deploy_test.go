package deploy

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/hostpath"
)

func objects(t *testing.T) []runtime.Object {
	t.Helper()
	objs, err := Objects()
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// The bundled driver's CSIDriver, classes and attributes classes are those
// `volplane up` registers, field for field: a claim written for up works
// the same on a cluster.
func TestStorageObjectsAreThoseUpRegisters(t *testing.T) {
	objs := objects(t)
	drivers, classes := bundle.Objects()
	for _, want := range drivers {
		if want.Name != hostpath.DriverName {
			continue // the network driver is up's alone: `volplane driver` serves the node-local one
		}
		got := Of[*storagev1.CSIDriver](objs)
		if len(got) != 1 || got[0].Name != want.Name || !reflect.DeepEqual(got[0].Spec, want.Spec) {
			t.Errorf("CSIDrivers %v, want only %s with %+v", names(got), want.Name, want.Spec)
		}
	}
	var wantClasses []string
	for _, want := range classes {
		if want.Provisioner != hostpath.DriverName {
			continue
		}
		wantClasses = append(wantClasses, want.Name)
		i := slices.IndexFunc(Of[*storagev1.StorageClass](objs), func(c *storagev1.StorageClass) bool { return c.Name == want.Name })
		if i < 0 {
			t.Errorf("no StorageClass %s", want.Name)
			continue
		}
		got := Of[*storagev1.StorageClass](objs)[i]
		if got.Provisioner != want.Provisioner || !maps.Equal(got.Parameters, want.Parameters) ||
			*got.ReclaimPolicy != *want.ReclaimPolicy || *got.VolumeBindingMode != *want.VolumeBindingMode ||
			*got.AllowVolumeExpansion != *want.AllowVolumeExpansion || !maps.Equal(got.Annotations, want.Annotations) {
			t.Errorf("StorageClass %s differs from up's:\n got %+v %v\nwant %+v %v", want.Name, got, got.Annotations, want, want.Annotations)
		}
	}
	if got := names(Of[*storagev1.StorageClass](objs)); !slices.Equal(got, wantClasses) {
		t.Errorf("StorageClasses %v, want %v", got, wantClasses)
	}
	for _, want := range bundle.AttributeClasses() {
		i := slices.IndexFunc(Of[*storagev1.VolumeAttributesClass](objs), func(c *storagev1.VolumeAttributesClass) bool { return c.Name == want.Name })
		if i < 0 {
			t.Errorf("no VolumeAttributesClass %s", want.Name)
			continue
		}
		got := Of[*storagev1.VolumeAttributesClass](objs)[i]
		if got.DriverName != want.DriverName || !maps.Equal(got.Parameters, want.Parameters) {
			t.Errorf("VolumeAttributesClass %s: %s %v, want %s %v", want.Name, got.DriverName, got.Parameters, want.DriverName, want.Parameters)
		}
	}
}

// The controller runs as two leader-elected replicas, probed on the
// health endpoints of its metrics address, unprivileged, on a read-only
// root file system.
func TestControllerIsHighlyAvailableAndUnprivileged(t *testing.T) {
	d := workload[*appsv1.Deployment](t, objects(t), "volplane-controller")
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas %v, want 2", d.Spec.Replicas)
	}
	pod := d.Spec.Template.Spec
	c := container(t, pod, "controller")
	for _, want := range []string{"--leader-elect=true", "--leader-elect-namespace=volplane", "--metrics-bind-address=:9742"} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("controller args %v lack %s", c.Args, want)
		}
	}
	if !slices.Contains(c.Args, "--controllers=binder,pvc-protection,pv-protection,attachdetach,expander,ephemeral-volume,vac-protection,snapshot") {
		t.Errorf("controller args %v: want every central loop, the snapshot-controller's role included", c.Args)
	}
	probes := map[string]*corev1.Probe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe}
	for path, p := range probes {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path || p.HTTPGet.Port.String() != "metrics" {
			t.Errorf("probe for %s: %+v, want an HTTP GET of %s on the metrics port", path, p, path)
		}
	}
	if len(c.Ports) != 1 || c.Ports[0].Name != "metrics" || c.Ports[0].ContainerPort != 9742 {
		t.Errorf("ports %+v, want metrics on 9742", c.Ports)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Errorf("requests %v, want CPU and memory", c.Resources.Requests)
	}
	unprivileged(t, pod.SecurityContext, c)
}

// The node pod serves the driver privileged (it mounts for the kubelet)
// with its mounts propagated to the host, registers it with the kubelet,
// and runs the node-local provisioner, resizer and snapshotter beside it
// without any capability.
func TestNodePodServesTheDriverItsProvisionerResizerAndSnapshotter(t *testing.T) {
	ds := workload[*appsv1.DaemonSet](t, objects(t), "volplane-node")
	pod := ds.Spec.Template.Spec
	driver := container(t, pod, "driver")
	if sc := driver.SecurityContext; sc == nil || sc.Privileged == nil || !*sc.Privileged {
		t.Error("the driver is not privileged: it cannot mount")
	}
	for _, path := range []string{"/var/lib/kubelet/pods", "/var/lib/kubelet/plugins"} {
		i := slices.IndexFunc(driver.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == path })
		if i < 0 || driver.VolumeMounts[i].MountPropagation == nil || *driver.VolumeMounts[i].MountPropagation != corev1.MountPropagationBidirectional {
			t.Errorf("the driver does not mount %s with Bidirectional propagation", path)
		}
	}
	registrar := container(t, pod, "registrar")
	if !strings.HasPrefix(registrar.Image, "registry.k8s.io/sig-storage/csi-node-driver-registrar:") ||
		!slices.Contains(registrar.Args, "--kubelet-registration-path=/var/lib/kubelet/plugins/"+hostpath.DriverName+"/csi.sock") {
		t.Errorf("registrar %s %v does not register the driver's socket", registrar.Image, registrar.Args)
	}
	i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool {
		return v.HostPath != nil && v.HostPath.Path == "/var/lib/kubelet/plugins_registry"
	})
	if i < 0 {
		t.Error("no volume for the kubelet's plugins_registry")
	}
	p := container(t, pod, "provisioner")
	for _, want := range []string{"--controllers=provisioner,capacity,resizer,snapshotter,health-monitor", "--node-deployment", "--node-name=$(NODE_NAME)", "--csi-endpoint=unix:///csi/csi.sock", "--leader-elect=false",
		"--leader-elect-namespace=volplane-nodes"} {
		if !slices.Contains(p.Args, want) {
			t.Errorf("provisioner args %v lack %s", p.Args, want)
		}
	}
	if sc := p.SecurityContext; sc == nil || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Error("the provisioner keeps capabilities or a writable root file system")
	}
}

// unprivileged fails unless the container runs as a non-root user with no
// capability, no privilege escalation and a read-only root file system.
func unprivileged(t *testing.T, pod *corev1.PodSecurityContext, c corev1.Container) {
	t.Helper()
	sc := c.SecurityContext
	switch {
	case pod == nil || pod.RunAsNonRoot == nil || !*pod.RunAsNonRoot || pod.RunAsUser == nil || *pod.RunAsUser == 0:
		t.Errorf("%s may run as root", c.Name)
	case sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		t.Errorf("%s has a writable root file system", c.Name)
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Errorf("%s may escalate privileges", c.Name)
	case sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL"):
		t.Errorf("%s keeps capabilities", c.Name)
	}
}

func workload[T interface {
	runtime.Object
	GetName() string
}](t *testing.T, objs []runtime.Object, name string) T {
	t.Helper()
	for _, o := range Of[T](objs) {
		if o.GetName() == name {
			return o
		}
	}
	var zero T
	t.Fatalf("deploy/ has no %T %s", zero, name)
	return zero
}

func container(t *testing.T, pod corev1.PodSpec, name string) corev1.Container {
	t.Helper()
	i := slices.IndexFunc(pod.Containers, func(c corev1.Container) bool { return c.Name == name })
	if i < 0 {
		t.Fatalf("no container %s", name)
	}
	return pod.Containers[i]
}

func names[T interface{ GetName() string }](objs []T) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.GetName())
	}
	return out
}

// The workloads and their ServiceAccounts live in the namespace volplane;
// the roles of the other roles' Leases in namespaces of their own, which
// deploy/ creates; the recycler's role in default, the binder's recycler
// namespace. Nothing cluster-scoped names a namespace.
func TestEverythingNamespacedIsWhereItBelongs(t *testing.T) {
	objs := objects(t)
	created := map[string]bool{}
	for _, ns := range Of[*corev1.Namespace](objs) {
		created[ns.Name] = true
	}
	if want := []string{"volplane", "volplane-nodes", "volplane-csi-sidecar"}; !slices.Equal(names(Of[*corev1.Namespace](objs)), want) {
		t.Errorf("namespaces %v, want %v", names(Of[*corev1.Namespace](objs)), want)
	}
	workloads := map[string]bool{"ServiceAccount": true, "Deployment": true, "DaemonSet": true}
	roles := map[string]bool{"Role": true, "RoleBinding": true}
	for _, o := range objs {
		kinds, _, err := decoding.ObjectKinds(o)
		if err != nil {
			t.Fatal(err)
		}
		m, err := meta.Accessor(o)
		if err != nil {
			t.Fatal(err)
		}
		kind := kinds[0].Kind
		switch ns := m.GetNamespace(); {
		case workloads[kind] && ns != "volplane":
			t.Errorf("%s %s in namespace %q, want volplane", kind, m.GetName(), ns)
		case roles[kind] && ns == metav1.NamespaceDefault && m.GetName() != "volplane-controller-recycler":
			t.Errorf("%s %s in namespace default, which is the recycler's alone", kind, m.GetName())
		case roles[kind] && ns != metav1.NamespaceDefault && !created[ns]:
			t.Errorf("%s %s in namespace %q, which deploy/ does not create", kind, m.GetName(), ns)
		case !workloads[kind] && !roles[kind] && ns != "":
			t.Errorf("%s %s is cluster-scoped but names namespace %q", kind, m.GetName(), ns)
		}
	}
}
