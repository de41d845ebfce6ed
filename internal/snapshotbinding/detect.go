package snapshotbinding

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// The Lease another snapshot-controller (external-snapshotter's
// cmd/snapshot-controller) holds while it runs with leader election, and
// its default lease duration.
const (
	OtherControllerLease        = "snapshot-controller-leader"
	OtherControllerLeaseDefault = 15 * time.Second
)

// Elsewhere says what to do when the cluster already runs another
// snapshot-controller or lacks the group snapshot API.
type Elsewhere string

const (
	// Refuse: do not start (the default).
	Refuse Elsewhere = "refuse"
	// Ignore: start anyway (two controllers then act on the same objects;
	// without the group API, members are not protected).
	Ignore Elsewhere = "ignore"
)

// LeaseSeen is a snapshot-controller-leader Lease read from the cluster.
type LeaseSeen struct {
	Namespace, Holder string
	// Renewed is the Lease's renewTime (zero if none); Duration its
	// leaseDurationSeconds (zero if none).
	Renewed  time.Time
	Duration time.Duration
}

// ClusterFacts is what the loop read of the cluster before it starts.
type ClusterFacts struct {
	Now time.Time
	// Snapshot lists the resources served at snapshot.storage.k8s.io/v1,
	// Group those at groupsnapshot.storage.k8s.io/v1 (nil: not served).
	Snapshot, Group []string
	Leases          []LeaseSeen
}

// CheckCluster says whether the snapshot loop may start: the v1 snapshot
// API must be served (else no policy helps: install deploy/crd); under
// Refuse, the v1 group snapshot API must be served too and no other
// snapshot-controller may hold its Lease (renewed within twice its
// duration). groups says whether the group API is there to read.
func CheckCluster(f ClusterFacts, policy Elsewhere) (groups bool, err error) {
	var missing []string
	for _, r := range []string{"volumesnapshots", "volumesnapshotcontents", "volumesnapshotclasses"} {
		if !slices.Contains(f.Snapshot, r) {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		return false, fmt.Errorf("the snapshot loop needs the v1 snapshot API (snapshot.storage.k8s.io/v1 %s not served): "+
			"install the CustomResourceDefinitions of deploy/crd (external-snapshotter v8.6.0)", strings.Join(missing, ", "))
	}
	groups = slices.Contains(f.Group, "volumegroupsnapshots") && slices.Contains(f.Group, "volumegroupsnapshotcontents")
	if policy == Ignore {
		return groups, nil
	}
	if !groups {
		return false, fmt.Errorf("the cluster serves older snapshot CRDs (no groupsnapshot.storage.k8s.io/v1 VolumeGroupSnapshot): " +
			"install the CustomResourceDefinitions of deploy/crd (external-snapshotter v8.6.0), or pass --snapshot-controller-elsewhere=ignore")
	}
	for _, l := range f.Leases {
		d := l.Duration
		if d <= 0 {
			d = OtherControllerLeaseDefault
		}
		if l.Holder != "" && !l.Renewed.IsZero() && f.Now.Sub(l.Renewed) < 2*d {
			return false, fmt.Errorf("another snapshot-controller runs in this cluster (Lease %s/%s held by %q, renewed %s ago): "+
				"stop it before running volplane's snapshot loop, or pass --snapshot-controller-elsewhere=ignore",
				l.Namespace, OtherControllerLease, l.Holder, f.Now.Sub(l.Renewed).Round(time.Second))
		}
	}
	return groups, nil
}
