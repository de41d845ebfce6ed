// Package features is volplane's registry of Kubernetes feature gates: the names, stages and
// defaults of the kube-controller-manager gates that volplane's loops read, as Kubernetes v1.37
// defines them (pkg/features/kube_features.go, defaultVersionedKubernetesFeatureGates), parsed by
// k8s.io/component-base/featuregate. `volplane controller` and `up` take them as --feature-gates.
//
// Each process builds its own gate with New (tests run several managers with different gates in
// one process); code that has no gate of its own reads Defaults.
package features

import (
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/component-base/featuregate"
)

// Version is the Kubernetes version whose gate defaults volplane follows.
const Version = "1.37"

const (
	// PersistentVolumeClaimUnusedSinceTime: pvc-protection keeps the claim condition Unused
	// (KEP-5541). Alpha in 1.36 (off), beta in 1.37 (on).
	PersistentVolumeClaimUnusedSinceTime featuregate.Feature = "PersistentVolumeClaimUnusedSinceTime"

	// CSIVolumeHealth: volume health is written to the API (claim, pod, CSINode fields) beside
	// events. Alpha since 1.21 (off).
	CSIVolumeHealth featuregate.Feature = "CSIVolumeHealth"

	// VolumeAttributesClass: claims and PVs name a VolumeAttributesClass; vac-protection and the
	// modifier act on them. GA in 1.34, locked on since 1.36.
	VolumeAttributesClass featuregate.Feature = "VolumeAttributesClass"

	// MutableCSINodeAllocatableCount: the node agent refreshes CSINode allocatable counts. GA and
	// locked on since 1.36.
	MutableCSINodeAllocatableCount featuregate.Feature = "MutableCSINodeAllocatableCount"

	// CrossNamespaceVolumeDataSource: a claim's dataSourceRef may name another namespace (checked
	// against ReferenceGrants). Alpha since 1.26 (off).
	CrossNamespaceVolumeDataSource featuregate.Feature = "CrossNamespaceVolumeDataSource"
)

// specs are Kubernetes v1.37's versioned specs of the gates above (data, as kube_features.go
// lists them).
var specs = map[featuregate.Feature]featuregate.VersionedSpecs{
	PersistentVolumeClaimUnusedSinceTime: {
		{Version: version.MustParse("1.36"), Default: false, PreRelease: featuregate.Alpha},
		{Version: version.MustParse("1.37"), Default: true, PreRelease: featuregate.Beta},
	},
	CSIVolumeHealth: {
		{Version: version.MustParse("1.21"), Default: false, PreRelease: featuregate.Alpha},
	},
	VolumeAttributesClass: {
		{Version: version.MustParse("1.29"), Default: false, PreRelease: featuregate.Alpha},
		{Version: version.MustParse("1.31"), Default: false, PreRelease: featuregate.Beta},
		{Version: version.MustParse("1.34"), Default: true, PreRelease: featuregate.GA},
		{Version: version.MustParse("1.36"), Default: true, PreRelease: featuregate.GA, LockToDefault: true},
	},
	MutableCSINodeAllocatableCount: {
		{Version: version.MustParse("1.33"), Default: false, PreRelease: featuregate.Alpha},
		{Version: version.MustParse("1.34"), Default: false, PreRelease: featuregate.Beta},
		{Version: version.MustParse("1.35"), Default: true, PreRelease: featuregate.Beta},
		{Version: version.MustParse("1.36"), Default: true, PreRelease: featuregate.GA, LockToDefault: true},
	},
	CrossNamespaceVolumeDataSource: {
		{Version: version.MustParse("1.26"), Default: false, PreRelease: featuregate.Alpha},
	},
}

// New returns a fresh, settable gate holding volplane's gates at their v1.37 defaults.
func New() featuregate.MutableVersionedFeatureGate {
	g := featuregate.NewVersionedFeatureGate(version.MustParse(Version))
	if err := g.AddVersioned(specs); err != nil {
		panic(err) // the table above is static; a failure is a programming error
	}
	return g
}

var defaults = New()

// Defaults is the read-only gate at v1.37's defaults, for code given no gate.
func Defaults() featuregate.FeatureGate { return defaults }

// Or returns g, or Defaults when g is nil.
func Or(g featuregate.FeatureGate) featuregate.FeatureGate {
	if g == nil {
		return defaults
	}
	return g
}

// AddFlag registers --feature-gates for g on fs.
func AddFlag(g featuregate.MutableVersionedFeatureGate, fs *pflag.FlagSet) { g.AddFlag(fs) }
