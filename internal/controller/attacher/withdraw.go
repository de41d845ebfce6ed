package attacher

import (
	"context"
	"fmt"
	"sync"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// An attachment published for a VolumeAttachment that is gone: the API
// server can delete an object although a finalizer was added to it
// concurrently (kubernetes/kubernetes#77988; the fix was merged and
// reverted). Our finalizer patch then succeeds, we publish, and the
// attachment it was for no longer exists: nobody would ever unpublish, the
// volume would stay attached to the node, and a driver that refuses to
// delete an attached volume would keep it forever (the fault soak found
// this). So when marking attached answers NotFound, the publication is
// withdrawn: ControllerUnpublishVolume with what was published, retried on
// the attachment's key until it succeeds, or until a new VolumeAttachment
// of that name (same PV, node and driver) takes the publication over.
type withdrawal struct {
	driver    string
	volume    *v1.PersistentVolume
	request   *csipb.ControllerUnpublishVolumeRequest
	secretRef *v1.SecretReference
}

// withdrawals are the publications to withdraw, by attachment name.
type withdrawals struct {
	mu sync.Mutex
	m  map[string]withdrawal
}

func (w *withdrawals) put(name string, wd withdrawal) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]withdrawal{}
	}
	w.m[name] = wd
}

func (w *withdrawals) get(name string) (withdrawal, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	wd, ok := w.m[name]
	return wd, ok
}

func (w *withdrawals) drop(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, name)
}

// withdraw unpublishes what was published for the gone attachment name, if
// anything; an error requeues the name, whose next sync finds the
// attachment still gone and tries again.
func (c *Controller) withdraw(ctx context.Context, name string) error {
	wd, ok := c.withdrawals.get(name)
	if !ok {
		return nil
	}
	ep, err := c.endpoint(wd.driver, wd.volume)
	if err != nil {
		return fmt.Errorf("withdraw the publication of deleted VolumeAttachment %s: %w", name, err)
	}
	req := wd.request
	if req.Secrets, err = c.secrets(ctx, wd.secretRef); err != nil {
		return fmt.Errorf("withdraw the publication of deleted VolumeAttachment %s: %w", name, err)
	}
	callCtx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if err := ep.ControllerUnpublishVolume(callCtx, req); err != nil {
		return fmt.Errorf("withdraw the publication of deleted VolumeAttachment %s: ControllerUnpublishVolume: %w", name, err)
	}
	c.withdrawals.drop(name)
	klog.FromContext(ctx).Info("Detached a volume whose VolumeAttachment was deleted while it was being attached",
		"volumeattachment", name, "volume", req.VolumeId, "nodeID", req.NodeId)
	return nil
}
