package deploy

import (
	"bytes"
	"embed"
	"io/fs"
	"path"
	"reflect"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/volplane/volplane/deploy/crd"
)

//go:embed attach/*.yaml
var attachComponent embed.FS

// withAttach builds deploy/ with the attach component, through an overlay
// as an operator writes it (README), with kustomize's own build; change,
// if set, edits deploy/'s files first (name → content).
func withAttach(change func(name string, data []byte) []byte) ([]runtime.Object, error) {
	disk := filesys.MakeFsInMemory()
	for dir, files := range map[string]fs.FS{"/deploy": manifests, "/deploy/crd": crd.Files, "/deploy/attach": must(fs.Sub(attachComponent, "attach"))} {
		names, err := fs.Glob(files, "*.yaml")
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			data, err := fs.ReadFile(files, name)
			if err != nil {
				return nil, err
			}
			if change != nil && dir == "/deploy" {
				data = change(name, data)
			}
			if err := disk.WriteFile(path.Join(dir, name), data); err != nil {
				return nil, err
			}
		}
	}
	overlay := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [../deploy]\ncomponents: [../deploy/attach]\n"
	if err := disk.WriteFile("/overlay/kustomization.yaml", []byte(overlay)); err != nil {
		return nil, err
	}
	built, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(disk, "/overlay")
	if err != nil {
		return nil, err
	}
	return decodeBuilt(built)
}

func must(f fs.FS, err error) fs.FS {
	if err != nil {
		panic(err)
	}
	return f
}

// The attach component makes the bundled driver attachable and changes
// nothing else of deploy/: the CSIDriver requires attachment, the driver
// serves ControllerPublish/Unpublish, the node's provisioner container
// runs the attacher too; it adds the attacher's grants and the admission
// policy that keeps a node to its own attachments.
func TestAttachComponentMakesTheDriverAttachable(t *testing.T) {
	base := objects(t)
	got, err := withAttach(nil)
	if err != nil {
		t.Fatal(err)
	}
	drivers := Of[*storagev1.CSIDriver](got)
	if len(drivers) != 1 || drivers[0].Spec.AttachRequired == nil || !*drivers[0].Spec.AttachRequired {
		t.Fatalf("CSIDrivers %+v, want hostpath.csi.volplane.io with attachRequired", drivers)
	}
	ds := workload[*appsv1.DaemonSet](t, got, "volplane-node")
	baseDS := workload[*appsv1.DaemonSet](t, base, "volplane-node")
	pod, basePod := ds.Spec.Template.Spec, baseDS.Spec.Template.Spec
	if want := append(slices.Clone(container(t, basePod, "driver").Args), "--attach-required"); !slices.Equal(container(t, pod, "driver").Args, want) {
		t.Errorf("driver args %v, want %v", container(t, pod, "driver").Args, want)
	}
	wantArgs := slices.Clone(container(t, basePod, "provisioner").Args)
	wantArgs[slices.Index(wantArgs, "--controllers=provisioner,capacity,resizer,snapshotter,health-monitor")] = "--controllers=provisioner,attacher,capacity,resizer,snapshotter,health-monitor"
	if got := container(t, pod, "provisioner").Args; !slices.Equal(got, wantArgs) {
		t.Errorf("provisioner args %v, want %v", got, wantArgs)
	}
	// Nothing else changed: the objects of deploy/ are the same but those three fields.
	drivers[0].Spec.AttachRequired = Of[*storagev1.CSIDriver](base)[0].Spec.AttachRequired
	for i, c := range pod.Containers {
		pod.Containers[i].Args = container(t, basePod, c.Name).Args
	}
	ds.Spec.Template.Spec = pod
	added := map[string]bool{}
	for _, o := range got {
		m, _ := meta.Accessor(o)
		id := reflect.TypeOf(o).String() + " " + m.GetNamespace() + "/" + m.GetName()
		i := slices.IndexFunc(base, func(b runtime.Object) bool {
			bm, _ := meta.Accessor(b)
			return reflect.TypeOf(b) == reflect.TypeOf(o) && bm.GetName() == m.GetName() && bm.GetNamespace() == m.GetNamespace()
		})
		if i < 0 {
			added[id] = true
			continue
		}
		if !reflect.DeepEqual(o, base[i]) {
			t.Errorf("%s differs from deploy/'s beyond the component's three changes", id)
		}
	}
	wantAdded := map[string]bool{
		"*v1.ClusterRole /volplane-node-attacher": true, "*v1.ClusterRoleBinding /volplane-node-attacher": true,
		"*v1.ValidatingAdmissionPolicy /volplane-node-attachments": true, "*v1.ValidatingAdmissionPolicyBinding /volplane-node-attachments": true,
	}
	if !reflect.DeepEqual(added, wantAdded) || len(got) != len(base)+len(wantAdded) {
		t.Errorf("added %v (%d objects, deploy/ has %d), want %v", added, len(got), len(base), wantAdded)
	}
	// The grants are the attacher's calls (test/e2e/nodeattach runs it with
	// them and fails on a 403 or a grant not used), bound to volplane-node.
	var role *rbacv1.ClusterRole
	for _, r := range Of[*rbacv1.ClusterRole](got) {
		if r.Name == "volplane-node-attacher" {
			role = r
		}
	}
	var grants []string
	for _, r := range role.Rules {
		for _, res := range r.Resources {
			grants = append(grants, r.APIGroups[0]+"/"+res+": "+strings.Join(r.Verbs, ","))
		}
	}
	wantGrants := []string{"storage.k8s.io/volumeattachments: list,watch,patch",
		"storage.k8s.io/volumeattachments/status: patch", "storage.k8s.io/csinodes: list,watch"}
	if !slices.Equal(grants, wantGrants) {
		t.Errorf("volplane-node-attacher grants %v, want %v", grants, wantGrants)
	}
	for _, b := range Of[*rbacv1.ClusterRoleBinding](got) {
		if b.Name == "volplane-node-attacher" && (len(b.Subjects) != 1 || b.Subjects[0].Name != "volplane-node" || b.Subjects[0].Namespace != "volplane") {
			t.Errorf("binding subjects %+v, want ServiceAccount volplane/volplane-node", b.Subjects)
		}
	}
	for _, p := range Of[*admissionv1.ValidatingAdmissionPolicy](got) {
		if p.Name == "volplane-node-attachments" && *p.Spec.FailurePolicy != admissionv1.Fail {
			t.Errorf("policy %s fails open", p.Name)
		}
	}
}

// Each patch tests the old value first: a deploy/ that changed under the
// component fails the build instead of being patched blindly.
func TestAttachComponentRefusesAChangedDeploy(t *testing.T) {
	changes := map[string][2]string{
		"csidriver.yaml": {"attachRequired: false", "attachRequired: true"},
		"node.yaml":      {"--controllers=provisioner,capacity,resizer,snapshotter,health-monitor", "--controllers=provisioner,capacity,resizer"},
	}
	for file, c := range changes {
		_, err := withAttach(func(name string, data []byte) []byte {
			if name != file {
				return data
			}
			if !bytes.Contains(data, []byte(c[0])) {
				t.Fatalf("%s has no %q", file, c[0])
			}
			return bytes.Replace(data, []byte(c[0]), []byte(c[1]), 1)
		})
		if err == nil || !strings.Contains(err.Error(), "test") {
			t.Errorf("%s changed to %q: build error %v, want the component's test to fail", file, c[1], err)
		}
	}
}
