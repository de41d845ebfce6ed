package manager

import (
	"context"
	"fmt"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/controller/snapshot"
	"github.com/volplane/volplane/internal/snapshotbinding"
)

// newSnapshot builds the snapshot loop (external-snapshotter's
// snapshot-controller role). It calls no driver. Before it builds, it
// reads what snapshotbinding.CheckCluster judges: the snapshot API served
// (else it fails at once, naming deploy/crd, rather than wait forever for
// caches that cannot sync), and, unless told to ignore them, no v1 group
// snapshot API missing and no other snapshot-controller holding its Lease.
// Workers: the reference's 10, not --workers.
func newSnapshot(w wiring) ([]Runnable, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	facts, err := readSnapshotCluster(ctx, w.Client)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	policy := snapshotbinding.Elsewhere(w.Config.SnapshotControllerElsewhere)
	if policy == "" {
		policy = snapshotbinding.Refuse
	}
	groups, err := snapshotbinding.CheckCluster(facts, policy)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	s, err := snapshot.New(snapshot.Config{Client: w.Client, Snapshots: w.Snapshots, Informers: w.Informers,
		SnapshotInformers: w.SnapshotInformers, Groups: groups,
		Recorder: w.Recorder(snapshot.EventComponent), Metrics: w.Metrics})
	if err != nil {
		return nil, err
	}
	return []Runnable{s}, nil
}

// readSnapshotCluster reads the served snapshot APIs and the other
// snapshot-controller's Leases (in every namespace). Without the right to
// list Leases (asked with a SelfSubjectAccessReview), the Leases are
// skipped and that is logged: the check then cannot see another
// controller.
func readSnapshotCluster(ctx context.Context, client kubernetes.Interface) (snapshotbinding.ClusterFacts, error) {
	f := snapshotbinding.ClusterFacts{Now: time.Now()}
	var err error
	if f.Snapshot, err = served(client, "snapshot.storage.k8s.io/v1"); err != nil {
		return f, err
	}
	if f.Group, err = served(client, "groupsnapshot.storage.k8s.io/v1"); err != nil {
		return f, err
	}
	// Asked first, so that a role without it (deploy/ grants none) makes
	// no forbidden call.
	review, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: "list", Group: coordinationv1.GroupName, Resource: "leases", Name: snapshotbinding.OtherControllerLease}}}, metav1.CreateOptions{})
	if err == nil && !review.Status.Allowed {
		klog.FromContext(ctx).Info("Not allowed to list Leases: another snapshot-controller would not be seen")
		return f, nil
	}
	leases, err := client.CoordinationV1().Leases(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", snapshotbinding.OtherControllerLease).String()})
	switch {
	case apierrors.IsForbidden(err):
		klog.FromContext(ctx).Info("Cannot list Leases: another snapshot-controller would not be seen", "err", err)
		return f, nil
	case err != nil:
		return f, fmt.Errorf("list Leases %s: %w", snapshotbinding.OtherControllerLease, err)
	}
	for _, l := range leases.Items {
		f.Leases = append(f.Leases, leaseSeen(l))
	}
	return f, nil
}

func leaseSeen(l coordinationv1.Lease) snapshotbinding.LeaseSeen {
	s := snapshotbinding.LeaseSeen{Namespace: l.Namespace}
	if l.Spec.HolderIdentity != nil {
		s.Holder = *l.Spec.HolderIdentity
	}
	if l.Spec.RenewTime != nil {
		s.Renewed = l.Spec.RenewTime.Time
	}
	if l.Spec.LeaseDurationSeconds != nil {
		s.Duration = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	return s
}

// served lists the resources the API server serves at groupVersion, nil
// if it serves none.
func served(client kubernetes.Interface, groupVersion string) ([]string, error) {
	list, err := client.Discovery().ServerResourcesForGroupVersion(groupVersion)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("discover %s: %w", groupVersion, err)
	}
	var names []string
	for _, r := range list.APIResources {
		names = append(names, r.Name)
	}
	return names, nil
}
