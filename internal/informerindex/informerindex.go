// Package informerindex is the one registry of the indexes volplane adds to
// shared informers. Every loop and the node agent ask it for the informer
// they watch; the first ask in a process registers the informer's indexes,
// later asks find them there. So one process holds each index once, under
// one name with one function, however many loops read it.
//
// Nouns: the indexes (ClaimOfPod, NodeOfPod, InlineVolumeOfPod, NodeOfAttachment,
// PVOfAttachment, VolumeOfPV, ClaimOfSnapshot, ClassOfPV, ClassOfClaim,
// SegmentOfCapacity) and the lookups that read them (PodsUsing, PodsOn, PodsWithInline, AttachmentsOn,
// AttachmentsOf, PVsOf, SnapshotsOf, PVsOfClass, ClaimsOfClass).
package informerindex

import (
	"fmt"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapinformers "github.com/kubernetes-csi/external-snapshotter/client/v8/informers/externalversions"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/capacity"
	"github.com/volplane/volplane/internal/protection"
)

// The index names. Each is registered by this package only.
const (
	// ClaimOfPod indexes pods by the "namespace/name" of every claim they
	// use, generic ephemeral ones included (protection.ClaimKeys), whatever
	// the pod's phase.
	ClaimOfPod = "volplane.io/claim"
	// NodeOfPod indexes scheduled pods by spec.nodeName.
	NodeOfPod = "volplane.io/node"
	// InlineVolumeOfPod indexes pods by the unique volume name of every
	// attachable inline volume they use (attachment.InlineVolumes: iscsi,
	// fc, and those of migrated plugins as their CSI driver's).
	InlineVolumeOfPod = "volplane.io/inline-volume"
	// NodeOfAttachment indexes VolumeAttachments by spec.nodeName.
	NodeOfAttachment = "volplane.io/attachment-node"
	// PVOfAttachment indexes VolumeAttachments by the PV they attach.
	PVOfAttachment = "volplane.io/attachment-pv"
	// VolumeOfPV indexes CSI PVs by their unique volume name
	// (attachment.VolumeOf: driver^handle).
	VolumeOfPV = "volplane.io/unique-volume"
	// ClaimOfSnapshot indexes VolumeSnapshots by the "namespace/name" of
	// the claim they snapshot (spec.source.persistentVolumeClaimName, in
	// the snapshot's own namespace).
	ClaimOfSnapshot = "volplane.io/snapshot-claim"
	// ClassOfPV indexes PVs by the VolumeAttributesClass they name
	// (protection.VolumeClasses).
	ClassOfPV = "volplane.io/pv-attributes-class"
	// ClassOfClaim indexes claims by every VolumeAttributesClass they name
	// in spec or status (protection.ClaimClasses).
	ClassOfClaim = "volplane.io/claim-attributes-class"
	// SegmentOfCapacity indexes CSIStorageCapacity objects by the driver
	// and segment they publish for (capacity.ObjectKey); an object whose
	// nodeTopology is not plain matchLabels is not indexed.
	SegmentOfCapacity = "volplane.io/capacity-segment"
)

// Pods returns the factory's pod informer with ClaimOfPod, NodeOfPod and
// InlineVolumeOfPod.
func Pods(f informers.SharedInformerFactory) (cache.SharedIndexInformer, error) {
	return ensure(f.Core().V1().Pods().Informer(),
		cache.Indexers{ClaimOfPod: claimsOfPod, NodeOfPod: nodeOfPod, InlineVolumeOfPod: inlineVolumesOfPod})
}

// VolumeAttachments returns the factory's VolumeAttachment informer with
// NodeOfAttachment and PVOfAttachment.
func VolumeAttachments(f informers.SharedInformerFactory) (cache.SharedIndexInformer, error) {
	return ensure(f.Storage().V1().VolumeAttachments().Informer(),
		cache.Indexers{NodeOfAttachment: nodeOfAttachment, PVOfAttachment: pvOfAttachment})
}

// PersistentVolumes returns the factory's PV informer with VolumeOfPV.
func PersistentVolumes(f informers.SharedInformerFactory) (cache.SharedIndexInformer, error) {
	return ensure(f.Core().V1().PersistentVolumes().Informer(), cache.Indexers{VolumeOfPV: volumeOfPV})
}

// ClassUsers returns the factory's PV and claim informers with ClassOfPV
// and ClassOfClaim.
func ClassUsers(f informers.SharedInformerFactory) (pvs, claims cache.SharedIndexInformer, err error) {
	if pvs, err = ensure(f.Core().V1().PersistentVolumes().Informer(), cache.Indexers{ClassOfPV: classOfPV}); err != nil {
		return nil, nil, err
	}
	claims, err = ensure(f.Core().V1().PersistentVolumeClaims().Informer(), cache.Indexers{ClassOfClaim: classOfClaim})
	return pvs, claims, err
}

// VolumeSnapshots returns the factory's VolumeSnapshot informer with
// ClaimOfSnapshot.
func VolumeSnapshots(f snapinformers.SharedInformerFactory) (cache.SharedIndexInformer, error) {
	return ensure(f.Snapshot().V1().VolumeSnapshots().Informer(), cache.Indexers{ClaimOfSnapshot: claimOfSnapshot})
}

// CSIStorageCapacities returns the factory's CSIStorageCapacity informer
// with SegmentOfCapacity.
func CSIStorageCapacities(f informers.SharedInformerFactory) (cache.SharedIndexInformer, error) {
	return ensure(f.Storage().V1().CSIStorageCapacities().Informer(), cache.Indexers{SegmentOfCapacity: segmentOfCapacity})
}

// ensure adds the indexes inf does not have yet. An informer that already
// runs takes no new index; by then every loop of the process has asked for
// its informers, so every index is there. Two callers racing may both find
// an index missing: the loser's AddIndexers fails, and it is content once
// every index it wants is there.
func ensure(inf cache.SharedIndexInformer, want cache.Indexers) (cache.SharedIndexInformer, error) {
	missing := missingOf(inf, want)
	if len(missing) == 0 {
		return inf, nil
	}
	if err := inf.AddIndexers(missing); err != nil && len(missingOf(inf, want)) > 0 {
		return nil, fmt.Errorf("informer indexes: %w", err)
	}
	return inf, nil
}

func missingOf(inf cache.SharedIndexInformer, want cache.Indexers) cache.Indexers {
	have := inf.GetIndexer().GetIndexers()
	missing := cache.Indexers{}
	for name, fn := range want {
		if _, ok := have[name]; !ok {
			missing[name] = fn
		}
	}
	return missing
}

func segmentOfCapacity(obj any) ([]string, error) {
	if o, ok := obj.(*storagev1.CSIStorageCapacity); ok {
		if k, ok := capacity.ObjectKey(o); ok {
			return []string{k}, nil
		}
	}
	return nil, nil
}

func claimsOfPod(obj any) ([]string, error) {
	if pod, ok := obj.(*v1.Pod); ok {
		return protection.ClaimKeys(pod), nil
	}
	return nil, nil
}

func nodeOfPod(obj any) ([]string, error) {
	if pod, ok := obj.(*v1.Pod); ok && pod.Spec.NodeName != "" {
		return []string{pod.Spec.NodeName}, nil
	}
	return nil, nil
}

func inlineVolumesOfPod(obj any) ([]string, error) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return nil, nil
	}
	var out []string
	for _, v := range attachment.InlineVolumes(pod) {
		out = append(out, string(v.Unique))
	}
	return out, nil
}

func nodeOfAttachment(obj any) ([]string, error) {
	if va, ok := obj.(*storagev1.VolumeAttachment); ok {
		return []string{va.Spec.NodeName}, nil
	}
	return nil, nil
}

func pvOfAttachment(obj any) ([]string, error) {
	if va, ok := obj.(*storagev1.VolumeAttachment); ok && va.Spec.Source.PersistentVolumeName != nil {
		return []string{*va.Spec.Source.PersistentVolumeName}, nil
	}
	return nil, nil
}

func volumeOfPV(obj any) ([]string, error) {
	pv, _ := obj.(*v1.PersistentVolume)
	if u, ok := attachment.VolumeOf(pv); ok {
		return []string{string(u)}, nil
	}
	return nil, nil
}

func classOfPV(obj any) ([]string, error) {
	if pv, ok := obj.(*v1.PersistentVolume); ok {
		return protection.VolumeClasses(pv), nil
	}
	return nil, nil
}

func classOfClaim(obj any) ([]string, error) {
	if c, ok := obj.(*v1.PersistentVolumeClaim); ok {
		return protection.ClaimClasses(c), nil
	}
	return nil, nil
}

func claimOfSnapshot(obj any) ([]string, error) {
	if s, ok := obj.(*snapv1.VolumeSnapshot); ok && s.Spec.Source.PersistentVolumeClaimName != nil {
		return []string{cache.NewObjectName(s.Namespace, *s.Spec.Source.PersistentVolumeClaimName).String()}, nil
	}
	return nil, nil
}

// PodsUsing are the pods that name the claim "namespace/name", in any phase.
func PodsUsing(pods cache.Indexer, claimKey string) ([]*v1.Pod, error) {
	return by[*v1.Pod](pods, ClaimOfPod, claimKey)
}

// PodsOn are the pods scheduled to the node.
func PodsOn(pods cache.Indexer, node string) ([]*v1.Pod, error) {
	return by[*v1.Pod](pods, NodeOfPod, node)
}

// PodsWithInline are the pods using the volume of that unique name inline.
func PodsWithInline(pods cache.Indexer, unique v1.UniqueVolumeName) ([]*v1.Pod, error) {
	return by[*v1.Pod](pods, InlineVolumeOfPod, string(unique))
}

// AttachmentsOn are the VolumeAttachments to the node.
func AttachmentsOn(vas cache.Indexer, node string) ([]*storagev1.VolumeAttachment, error) {
	return by[*storagev1.VolumeAttachment](vas, NodeOfAttachment, node)
}

// AttachmentsOf are the VolumeAttachments of the PV.
func AttachmentsOf(vas cache.Indexer, pv string) ([]*storagev1.VolumeAttachment, error) {
	return by[*storagev1.VolumeAttachment](vas, PVOfAttachment, pv)
}

// PVsOf are the PVs of the unique volume name (attachment.UniqueVolumeName).
func PVsOf(pvs cache.Indexer, unique v1.UniqueVolumeName) ([]*v1.PersistentVolume, error) {
	return by[*v1.PersistentVolume](pvs, VolumeOfPV, string(unique))
}

// PVsOfClass are the PVs naming the VolumeAttributesClass.
func PVsOfClass(pvs cache.Indexer, class string) ([]*v1.PersistentVolume, error) {
	return by[*v1.PersistentVolume](pvs, ClassOfPV, class)
}

// ClaimsOfClass are the claims naming the VolumeAttributesClass in spec or
// status.
func ClaimsOfClass(claims cache.Indexer, class string) ([]*v1.PersistentVolumeClaim, error) {
	return by[*v1.PersistentVolumeClaim](claims, ClassOfClaim, class)
}

// SnapshotsOf are the VolumeSnapshots of the claim name in namespace.
func SnapshotsOf(snapshots cache.Indexer, namespace, claim string) ([]*snapv1.VolumeSnapshot, error) {
	return by[*snapv1.VolumeSnapshot](snapshots, ClaimOfSnapshot, cache.NewObjectName(namespace, claim).String())
}

// by reads one index; an object of another type is skipped. The error is
// the indexer's: the index is missing, so the informer was not asked for
// through this package.
func by[T any](idx cache.Indexer, index, key string) ([]T, error) {
	objs, err := idx.ByIndex(index, key)
	if err != nil {
		return nil, fmt.Errorf("index %s: %w", index, err)
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	return out, nil
}
