package groupsnapshot

import (
	vgsv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/resourceversion"
)

// ownWrites are the controller's last writes of each kind it writes,
// through loop.Newest: a sync decides from the copy its write returned
// while the informer has not delivered it, and the informer's event of
// exactly that version wakes nothing, since the sync that wrote asked
// for what follows (loop.Again). Every other change wakes the group.
//
// For the kinds only the group queue looks at (groups, members, member
// contents), an event older than a write of ours the informer has not
// delivered yet wakes nothing either: that write was made on the copy
// it replaced (each update carries the resourceVersion it read, and fails
// on a newer one), so the group sync that made it saw that version or a
// newer one. (A member created and bound at once had the create's event
// arrive after the bind, and each woke the group for nothing.) A group
// content is also the content queue's, which did not see what the group
// sync saw: only the exact version of our write is ignored there.
type ownWrites struct {
	groups         newest[*vgsv1.VolumeGroupSnapshot]
	contents       newest[*vgsv1.VolumeGroupSnapshotContent]
	members        newest[*snapv1.VolumeSnapshot]
	memberContents newest[*snapv1.VolumeSnapshotContent]
}

func newOwnWrites() ownWrites {
	return ownWrites{
		groups:         newest[*vgsv1.VolumeGroupSnapshot]{loop.NewNewest[*vgsv1.VolumeGroupSnapshot](), true},
		contents:       newest[*vgsv1.VolumeGroupSnapshotContent]{loop.NewNewest[*vgsv1.VolumeGroupSnapshotContent](), false},
		members:        newest[*snapv1.VolumeSnapshot]{loop.NewNewest[*snapv1.VolumeSnapshot](), true},
		memberContents: newest[*snapv1.VolumeSnapshotContent]{loop.NewNewest[*snapv1.VolumeSnapshotContent](), true},
	}
}

type newest[T metav1.Object] struct {
	*loop.Newest[T]
	// older: a copy older than our write not delivered yet counts as ours.
	older bool
}

// seen takes an informer's copy and says whether it tells nothing the
// sync that wrote did not know: our own last write (or, with older, a
// version before it).
func (n newest[T]) seen(key string, obj T) bool {
	own := n.IsOwnWrite(key, obj)
	if held, ok := n.Get(key); ok && n.older && resourceversion.Older(obj, held) {
		own = true
	}
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
