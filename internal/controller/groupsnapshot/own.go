package groupsnapshot

import (
	vgsv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/controller/loop"
)

// ownWrites are the controller's last writes of each kind it writes,
// through loop.Newest: a sync decides from the copy its write returned
// while the informer has not delivered it, and the informer's event of
// exactly that version wakes nothing, since the sync that wrote asked
// for what follows (loop.Again). Every other change wakes the group.
type ownWrites struct {
	groups         newest[*vgsv1.VolumeGroupSnapshot]
	contents       newest[*vgsv1.VolumeGroupSnapshotContent]
	members        newest[*snapv1.VolumeSnapshot]
	memberContents newest[*snapv1.VolumeSnapshotContent]
}

func newOwnWrites() ownWrites {
	return ownWrites{
		groups:         newest[*vgsv1.VolumeGroupSnapshot]{loop.NewNewest[*vgsv1.VolumeGroupSnapshot]()},
		contents:       newest[*vgsv1.VolumeGroupSnapshotContent]{loop.NewNewest[*vgsv1.VolumeGroupSnapshotContent]()},
		members:        newest[*snapv1.VolumeSnapshot]{loop.NewNewest[*snapv1.VolumeSnapshot]()},
		memberContents: newest[*snapv1.VolumeSnapshotContent]{loop.NewNewest[*snapv1.VolumeSnapshotContent]()},
	}
}

type newest[T metav1.Object] struct{ *loop.Newest[T] }

// seen takes an informer's copy and says whether it is our own last
// write.
func (n newest[T]) seen(key string, obj T) bool {
	own := n.IsOwnWrite(key, obj)
	n.Observe(key, obj)
	return own
}

// read is the newest copy of key: the informer's (err from its lister),
// or our write's when it is newer or the informer does not have it yet.
func (n newest[T]) read(key string, obj T, err error) (T, bool) {
	if err == nil {
		return n.Newer(key, obj), true
	}
	return n.Get(key)
}
