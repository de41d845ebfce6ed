package badinput

import (
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/hostpath"
)

// What the API server's validation refuses never reaches a loop: the user
// gets the field and the rule at once. Each case names the validation.
func TestTheAPIServerRejects(t *testing.T) {
	e := newEnv(t)
	manyParams := map[string]string{}
	for i := range 513 {
		manyParams["k"+strconv.Itoa(i)] = "v"
	}
	e.run([]edgeCase{
		// StorageClass validation.
		{name: "class-recycle", make: classWith(nil, func(sc *storagev1.StorageClass) {
			sc.ReclaimPolicy = ptr.To(corev1.PersistentVolumeReclaimRecycle)
		}), rejected: `reclaimPolicy: Unsupported value: "Recycle": supported values: "Delete", "Retain"`},
		{name: "class-binding-mode", make: classWith(nil, func(sc *storagev1.StorageClass) {
			sc.VolumeBindingMode = ptr.To(storagev1.VolumeBindingMode("Later"))
		}), rejected: `volumeBindingMode: Unsupported value: "Later": supported values: "Immediate", "WaitForFirstConsumer"`},
		// The name is lowercased before it is checked, and said so.
		{name: "class-provisioner-name", make: classWith(nil, func(sc *storagev1.StorageClass) { sc.Provisioner = "Not A Driver!" }),
			rejected: `provisioner: Invalid value: "not a driver!": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`},
		// The limit is 512 parameters; the message says bytes.
		{name: "class-513-parameters", make: classWith(manyParams, nil),
			rejected: `parameters: Too long: may not be more than 512 bytes`},
		{name: "class-topology-no-values", make: classWith(nil, allowedTopology(hostpath.TopologyKey)),
			rejected: `allowedTopologies[0].matchLabelExpressions[0].values: Required value`},

		// PersistentVolumeClaim validation.
		{name: "size-0", make: claimWith(size("0")),
			rejected: `spec.resources[storage]: Invalid value: "0": must be greater than zero`},
		{name: "size-negative", make: claimWith(size("-1Gi")),
			rejected: `spec.resources[storage]: Invalid value: "-1Gi": must be greater than zero`},
		{name: "no-access-modes", make: claimWith(modes()),
			rejected: `spec.accessModes: Required value: at least 1 access mode is required`},
		{name: "unknown-access-mode", make: claimWith(modes("ReadWriteSometimes")),
			rejected: `spec.accessModes: Unsupported value: "ReadWriteSometimes": supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"`},
		{name: "once-pod-with-others", make: claimWith(modes(corev1.ReadWriteOncePod, corev1.ReadWriteOnce)),
			rejected: `spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes`},
		{name: "volume-mode-raw", make: claimWith(func(c *corev1.PersistentVolumeClaim) {
			c.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeMode("Raw"))
		}), rejected: `spec.volumeMode: Unsupported value: "Raw": supported values: "Block", "Filesystem"`},
		{name: "selector-operator", make: claimWith(selector(expression("a", "Near"))),
			rejected: `spec.selector.matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator`},
		{name: "selector-in-no-values", make: claimWith(selector(expression("a", metav1.LabelSelectorOpIn))),
			rejected: "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"},
		{name: "selector-exists-values", make: claimWith(selector(expression("a", metav1.LabelSelectorOpExists, "x"))),
			rejected: "spec.selector.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"},
		{name: "selector-key", make: claimWith(selector(&metav1.LabelSelector{MatchLabels: map[string]string{"bad key!": "x"}})),
			rejected: `spec.selector.matchLabels: Invalid value: "bad key!": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`},
		{name: "class-name-invalid", make: claimWith(classNamed("Bad_Class!")),
			rejected: `spec.storageClassName: Invalid value: "Bad_Class!": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
		{name: "label-64", make: claimWith(func(c *corev1.PersistentVolumeClaim) { c.Labels = map[string]string{"l": longName(64)} }),
			rejected: `metadata.labels: Invalid value: "` + longName(64) + `": must be no more than 63 bytes`},
		{name: longName(254), make: claimWith(),
			rejected: `metadata.name: Invalid value: "` + longName(254) + `": must be no more than 253 characters`},
		// Unlike the same kind in dataSource, which the API server drops
		// (TestClaimsAtTheirEdges), dataSourceRef is copied to dataSource
		// and both are refused.
		{name: "data-source-configmap-ref", make: claimWith(func(c *corev1.PersistentVolumeClaim) {
			c.Spec.DataSourceRef = &corev1.TypedObjectReference{Kind: "ConfigMap", Name: "cm"}
		}), rejected: `[spec.dataSource: Invalid value: "ConfigMap": must be 'PersistentVolumeClaim' when referencing the default apiGroup, spec.dataSourceRef: Invalid value: "ConfigMap": must be 'PersistentVolumeClaim' when referencing the default apiGroup]`},

		// VolumeAttributesClass validation.
		{name: "attributes-class-without-parameters", make: vacClaim(hostpath.DriverName, nil),
			rejected: `parameters: Required value: must contain at least one key/value pair`},

		// PersistentVolume validation.
		{name: "pv-no-capacity", make: pvWith(func(_ *env, pv *corev1.PersistentVolume) { pv.Spec.Capacity = nil }),
			rejected: `[spec.capacity: Required value, spec.capacity: Unsupported value: null: supported values: "storage"]`},
		{name: "pv-no-access-modes", make: pvWith(func(_ *env, pv *corev1.PersistentVolume) { pv.Spec.AccessModes = nil }),
			rejected: `spec.accessModes: Required value`},
		{name: "pv-name-" + longName(250), make: pvWith(nil),
			rejected: `must be no more than 253 characters`},
		{name: "pv-size-0", make: pvWith(func(_ *env, pv *corev1.PersistentVolume) {
			pv.Spec.Capacity = corev1.ResourceList{corev1.ResourceStorage: *resourceZero()}
		}), rejected: `spec.capacity[storage]: Invalid value: "0": must be greater than zero`},
		{name: "pv-no-source", make: pvWith(func(_ *env, pv *corev1.PersistentVolume) { pv.Spec.CSI = nil }),
			rejected: `spec: Required value: must specify a volume type`},
		{name: "pv-csi-no-handle", make: pvWith(func(_ *env, pv *corev1.PersistentVolume) { pv.Spec.CSI.VolumeHandle = "" }),
			rejected: `spec.csi.volumeHandle: Required value`},
		{name: "pv-class-name-invalid", make: pvWith(func(_ *env, pv *corev1.PersistentVolume) { pv.Spec.StorageClassName = "Bad_Class!" }),
			rejected: `spec.storageClassName: Invalid value: "Bad_Class!": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
		{name: "pv-reclaim-policy", make: pvWith(func(_ *env, pv *corev1.PersistentVolume) { pv.Spec.PersistentVolumeReclaimPolicy = "Shred" }),
			rejected: `spec.persistentVolumeReclaimPolicy: Unsupported value: "Shred": supported values: "Delete", "Recycle", "Retain"`},
		{name: "pv-affinity-no-terms", make: pvWith(func(_ *env, pv *corev1.PersistentVolume) {
			pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{}}
		}), rejected: `spec.nodeAffinity.required.nodeSelectorTerms: Required value: must have at least one node selector term`},
	})
	if t.Failed() {
		return
	}
	// None of them left an object behind.
	claims, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).List(e.ctx, metav1.ListOptions{})
	if err != nil || len(claims.Items) != 1 || claims.Items[0].Name != "after-bad-input-1" {
		t.Errorf("claims after the rejections: %v (%v)", names(claims.Items), err)
	}
}

func names(claims []corev1.PersistentVolumeClaim) string {
	var out []string
	for _, c := range claims {
		out = append(out, c.Name)
	}
	return strings.Join(out, ",")
}
