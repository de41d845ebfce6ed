package binding_test

import (
	"reflect"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/volplane/volplane/internal/binding"
)

const (
	inTreeFinalizer   = "kubernetes.io/pv-controller"
	externalFinalizer = "external-provisioner.volume.kubernetes.io/finalizer"
	annMigratedTo     = "pv.kubernetes.io/migrated-to"
)

func withFinalizers(f ...string) pvOpt {
	return func(pv *v1.PersistentVolume) { pv.Finalizers = f }
}

// The seven in-tree plugins migrated in Kubernetes 1.36, with their drivers
// (csi-translation-lib plugins/*.go); every other name is taken as it is, or
// refused when it is another in-tree name.
func TestExternalProvisionerOfClass(t *testing.T) {
	for _, tc := range []struct{ provisioner, want, err string }{
		{provisioner: "kubernetes.io/aws-ebs", want: "ebs.csi.aws.com"},
		{provisioner: "kubernetes.io/gce-pd", want: "pd.csi.storage.gke.io"},
		{provisioner: "kubernetes.io/azure-disk", want: "disk.csi.azure.com"},
		{provisioner: "kubernetes.io/azure-file", want: "file.csi.azure.com"},
		{provisioner: "kubernetes.io/cinder", want: "cinder.csi.openstack.org"},
		{provisioner: "kubernetes.io/vsphere-volume", want: "csi.vsphere.vmware.com"},
		{provisioner: "kubernetes.io/portworx-volume", want: "pxd.portworx.com"},
		{provisioner: "ebs.csi.aws.com", want: "ebs.csi.aws.com"},
		{provisioner: "example.com/nfs", want: "example.com/nfs"},
		{provisioner: "kubernetes.io/no-provisioner", err: "no volume plugin matched name: kubernetes.io/no-provisioner"},
		{provisioner: "kubernetes.io/host-path", err: "no volume plugin matched name: kubernetes.io/host-path"},
	} {
		t.Run(tc.provisioner, func(t *testing.T) {
			got, err := binding.ExternalProvisioner(newClass("c", tc.provisioner))
			if got != tc.want || errString(err) != tc.err {
				t.Errorf("ExternalProvisioner = %q, %v; want %q, %q", got, err, tc.want, tc.err)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestClaimOfMigratedInTreeClassIsHandedToItsCSIDriver(t *testing.T) {
	ebs := newClass("ebs", "kubernetes.io/aws-ebs")
	run(t, []claimCase{{
		name:   "kubernetes.io/aws-ebs class: provisioned by ebs.csi.aws.com",
		in:     binding.ClaimInput{Claim: newClaim("c", "1Gi", claimClass("ebs")), Class: ebs},
		action: binding.ClaimProvision, provider: "ebs.csi.aws.com",
		events: []ev{{normal, "ExternalProvisioning", "Waiting for a volume to be created either by the external provisioner 'ebs.csi.aws.com' " +
			"or manually by the system administrator. If volume creation is delayed, please verify that " +
			"the provisioner is running and correctly registered."}},
	}})
}

// setClaimProvisioner names the CSI driver, which is not a migrated plugin:
// the same write drops migrated-to, so new claims never carry it.
func TestHandingAClaimToACSIDriverDropsItsMigratedTo(t *testing.T) {
	legacy := newClaim("c", "1Gi", claimAnn(storagehelpers.AnnStorageProvisioner, "kubernetes.io/aws-ebs"),
		claimAnn(annMigratedTo, "ebs.csi.aws.com"))
	out := binding.SetClaimProvisioner(legacy, "ebs.csi.aws.com")
	want := map[string]string{
		storagehelpers.AnnStorageProvisioner:     "ebs.csi.aws.com",
		storagehelpers.AnnBetaStorageProvisioner: "ebs.csi.aws.com",
	}
	if out == nil || !reflect.DeepEqual(out.Annotations, want) {
		t.Fatalf("annotations %v, want %v", annotationsOf(out), want)
	}
	if _, ok := legacy.Annotations[storagehelpers.AnnBetaStorageProvisioner]; ok {
		t.Error("the claim passed in was modified")
	}
}

func annotationsOf(c *v1.PersistentVolumeClaim) map[string]string {
	if c == nil {
		return nil
	}
	return c.Annotations
}

func TestClaimMigrationAnnotation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		claim *v1.PersistentVolumeClaim
		want  string // migrated-to after the write; "-" for no write
	}{
		{name: "no provisioner annotation: untouched", claim: newClaim("c", "1Gi"), want: "-"},
		{name: "legacy claim of an in-tree plugin: migrated-to its driver",
			claim: newClaim("c", "1Gi", claimAnn(storagehelpers.AnnStorageProvisioner, "kubernetes.io/aws-ebs")), want: "ebs.csi.aws.com"},
		{name: "the beta annotation counts when the GA one is missing",
			claim: newClaim("c", "1Gi", claimAnn(storagehelpers.AnnBetaStorageProvisioner, "kubernetes.io/gce-pd")), want: "pd.csi.storage.gke.io"},
		{name: "already migrated-to its driver: no write",
			claim: newClaim("c", "1Gi", claimAnn(storagehelpers.AnnStorageProvisioner, "kubernetes.io/aws-ebs"),
				claimAnn(annMigratedTo, "ebs.csi.aws.com")), want: "-"},
		{name: "a CSI driver's claim loses a stale migrated-to",
			claim: newClaim("c", "1Gi", claimAnn(storagehelpers.AnnStorageProvisioner, "ebs.csi.aws.com"),
				claimAnn(annMigratedTo, "ebs.csi.aws.com")), want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := binding.ClaimMigration(tc.claim)
			got := "-"
			if out != nil {
				got = out.Annotations[annMigratedTo]
			}
			if got != tc.want {
				t.Errorf("migrated-to %q, want %q", got, tc.want)
			}
		})
	}
}

type migrationCase struct {
	name       string
	pv         *v1.PersistentVolume
	write      bool
	migratedTo string
	finalizers []string
}

func TestVolumeMigrationAnnotationAndFinalizers(t *testing.T) {
	del, retain, recycle := withPolicy(v1.PersistentVolumeReclaimDelete), withPolicy(v1.PersistentVolumeReclaimRetain),
		withPolicy(v1.PersistentVolumeReclaimRecycle)
	ebs, hostPath := provisionedBy("kubernetes.io/aws-ebs"), provisionedBy("kubernetes.io/host-path")
	runMigration(t, []migrationCase{
		{name: "static PV: left alone whatever it carries",
			pv: newPV("pv1", "1Gi", del, withAnn(annMigratedTo, "ebs.csi.aws.com"), withFinalizers(inTreeFinalizer))},
		{name: "migrated plugin: migrated-to set, in-tree finalizer replaced by the provisioner's, in one write",
			pv:    newPV("pv1", "1Gi", del, ebs, withFinalizers(inTreeFinalizer, externalFinalizer)),
			write: true, migratedTo: "ebs.csi.aws.com", finalizers: []string{externalFinalizer}},
		{name: "migrated plugin, already in step: no write",
			pv: newPV("pv1", "1Gi", del, ebs, withAnn(annMigratedTo, "ebs.csi.aws.com"), withFinalizers(externalFinalizer))},
		{name: "migrated plugin: the in-tree finalizer goes whatever the policy",
			pv:    newPV("pv1", "1Gi", retain, ebs, withAnn(annMigratedTo, "ebs.csi.aws.com"), withFinalizers(inTreeFinalizer)),
			write: true, migratedTo: "ebs.csi.aws.com", finalizers: []string{}},
		{name: "other in-tree plugin under Delete: gets the in-tree finalizer",
			pv:    newPV("pv1", "1Gi", del, hostPath, withFinalizers("kubernetes.io/pv-protection")),
			write: true, finalizers: []string{"kubernetes.io/pv-protection", inTreeFinalizer}},
		{name: "other in-tree plugin under Delete, finalizer there: no write",
			pv: newPV("pv1", "1Gi", del, hostPath, withFinalizers(inTreeFinalizer))},
		{name: "other in-tree plugin switched to Retain: loses the in-tree finalizer",
			pv: newPV("pv1", "1Gi", retain, hostPath, withFinalizers(inTreeFinalizer)), write: true, finalizers: []string{}},
		{name: "other in-tree plugin under Recycle: loses the in-tree finalizer",
			pv: newPV("pv1", "1Gi", recycle, hostPath, withFinalizers(inTreeFinalizer)), write: true, finalizers: []string{}},
		{name: "other in-tree plugin: the external finalizer and migrated-to go (migration rolled back)",
			pv:    newPV("pv1", "1Gi", del, hostPath, withAnn(annMigratedTo, "x.csi.example.com"), withFinalizers(externalFinalizer)),
			write: true, finalizers: []string{inTreeFinalizer}},
		{name: "CSI driver's PV: left alone",
			pv: newPV("pv1", "1Gi", del, provisionedBy("csi.example.com"), withCSI("csi.example.com"),
				withFinalizers(externalFinalizer, inTreeFinalizer))},
	})
}

func runMigration(t *testing.T, cases []migrationCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.pv.DeepCopy()
			out := binding.VolumeMigration(tc.pv)
			if !reflect.DeepEqual(tc.pv, before) {
				t.Error("the PV passed in was modified")
			}
			if (out != nil) != tc.write {
				t.Fatalf("write %v, want %v", out != nil, tc.write)
			}
			if out == nil {
				return
			}
			if got := out.Annotations[annMigratedTo]; got != tc.migratedTo {
				t.Errorf("migrated-to %q, want %q", got, tc.migratedTo)
			}
			if !slices.Equal(out.Finalizers, tc.finalizers) {
				t.Errorf("finalizers %v, want %v", out.Finalizers, tc.finalizers)
			}
		})
	}
}

// Once its sync has written migrated-to, a released PV of a migrated plugin
// is its CSI driver's to delete: the binder reports no failure.
func TestReleasedMigratedVolumeIsLeftToItsCSIDriver(t *testing.T) {
	pv := newPV("pv1", "1Gi", boundTo("default", "c"), withPhase(v1.VolumeBound),
		withPolicy(v1.PersistentVolumeReclaimDelete), provisionedBy("kubernetes.io/aws-ebs"))
	migrated := binding.VolumeMigration(pv)
	if migrated == nil {
		t.Fatal("no migration write")
	}
	d := binding.DecideVolume(binding.VolumeInput{Volume: migrated, LiveChecked: true})
	if d.Reclaim != binding.ReclaimMigrated || d.Phase != v1.VolumeReleased || len(d.Events) > 0 {
		t.Errorf("decision %s, want Released, reclaim Migrated, no event", d)
	}
}
