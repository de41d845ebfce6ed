package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/volplane/volplane/internal/snapshotapi"
)

// settleTimeout is the least wait for a side's writes after its last
// snapshot was ready; the side's --timeout, if later, bounds it instead (at
// the reference's limits its 1,000 claim releases take over 3 minutes).
const settleTimeout = 2 * time.Minute

// settleSnapshots waits, once every snapshot is ready, until the side has
// finished what making them entails: no claim keeps the
// pvc-as-source-protection finalizer and no content the being-created
// annotation. The reference releases a claim on a sync after the snapshot
// is ready, so writes counted at "all ready" would leave its last writes
// out. A side that has not settled by until (or settleTimeout, if later)
// is reported as it stands, with the reason.
func (e *sideEnv) settleSnapshots(ctx context.Context, until time.Time) error {
	var left string
	limit := max(time.Until(until), settleTimeout)
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, limit, true, func(ctx context.Context) (bool, error) {
		claims, err := e.admin.CoreV1().PersistentVolumeClaims(benchNS).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range claims.Items {
			if slices.Contains(c.Finalizers, snapshotapi.ClaimFinalizer) {
				left = "claim " + c.Name + " still has " + snapshotapi.ClaimFinalizer
				return false, nil
			}
		}
		contents, err := e.snaps.SnapshotV1().VolumeSnapshotContents().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range contents.Items {
			if _, ok := c.Annotations[snapshotapi.BeingCreated]; ok {
				left = "content " + c.Name + " still has " + snapshotapi.BeingCreated
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil && ctx.Err() == nil {
		e.progress.phase(fmt.Sprintf("not settled after %s: %s", limit.Round(time.Second), left))
		return nil
	}
	return err
}
