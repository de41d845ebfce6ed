package resizing

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/controller/secrets"
	"github.com/volplane/volplane/internal/csi"
)

// Base is what the resizer and the modifier are each built on: the Config
// with its defaults, the claim and PV listers and informers, the claim
// queue, the newest copies of the loop's own writes and its Memory.
type Base struct {
	Config
	Recorders Recorders
	Claims    corelisters.PersistentVolumeClaimLister
	PVs       corelisters.PersistentVolumeLister
	// ClaimInformer and PVInformer are the informers the listers read;
	// the loop registers its handlers on them.
	ClaimInformer, PVInformer cache.SharedIndexInformer
	// Queue holds claim keys (namespace/name).
	Queue workqueue.TypedRateLimitingInterface[string]
	// NewestClaim and NewestPV hold what the loop's own writes returned
	// until the informer catches up, so a sync never decides on an older
	// copy.
	NewestClaim *loop.Newest[*v1.PersistentVolumeClaim]
	NewestPV    *loop.Newest[*v1.PersistentVolume]
	Memory      *Memory
}

// NewBase checks cfg and fills in its defaults; name names the loop in
// errors, queue names its work queue.
func NewBase(cfg Config, name, queue string) (*Base, error) {
	cfg, err := cfg.WithDefaults(name)
	if err != nil {
		return nil, err
	}
	claimInf := cfg.Informers.Core().V1().PersistentVolumeClaims()
	pvInf := cfg.Informers.Core().V1().PersistentVolumes()
	return &Base{Config: cfg, Recorders: cfg.recorders(),
		Claims: claimInf.Lister(), PVs: pvInf.Lister(),
		ClaimInformer: claimInf.Informer(), PVInformer: pvInf.Informer(),
		Queue:       loop.NewQueue(queue, cfg.RetryStart, cfg.RetryMax),
		NewestClaim: loop.NewNewest[*v1.PersistentVolumeClaim](),
		NewestPV:    loop.NewNewest[*v1.PersistentVolume](),
		Memory:      NewMemory()}, nil
}

// Runner runs sync on the queue's keys with the Config's workers, resync
// period, clock and metrics.
func (b *Base) Runner(name string, synced []cache.InformerSynced,
	sync func(context.Context, string) (loop.Result, error), resync func(context.Context)) *loop.Runner {
	return &loop.Runner{Name: name, Synced: synced, Workers: b.Workers,
		Queues: []loop.Queue{{Q: b.Queue, Sync: sync}}, Resync: resync, ResyncPeriod: b.ResyncPeriod,
		Metrics: b.Metrics, Clock: b.Clock}
}

// Capable are the driver's endpoints whose probe says able: those a call
// may go to (csi.Pool.ForVolume then picks the one holding the volume).
func (b *Base) Capable(driver string, able func(csi.Info) bool) []*csi.Endpoint {
	var out []*csi.Endpoint
	for _, e := range b.Pool.Endpoints(driver) {
		if able(e.Info) {
			out = append(out, e)
		}
	}
	return out
}

// Secrets reads the data of the secret ref names for a driver call (nil
// without a reference), its error in the external-resizer's words.
func (b *Base) Secrets(ctx context.Context, ref *v1.SecretReference) (map[string]string, error) {
	out, err := secrets.Read(ctx, b.Client, ref)
	if err != nil {
		return nil, fmt.Errorf("error getting secret %s in namespace %s: %w", ref.Name, ref.Namespace, err)
	}
	return out, nil
}

// MarkTime is the time a claim's condition records: now, on the Config's
// clock.
func (b *Base) MarkTime() metav1.Time { return metav1.NewTime(b.Clock.Now()) }

// Claim is the newest copy of the key's claim; nil, and no error, when
// the claim is gone or the key is not a claim's.
func (b *Base) Claim(key string) (*v1.PersistentVolumeClaim, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil, nil // not a key of ours; retrying will not fix it
	}
	claim, err := b.Claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("claim %s: %w", key, err)
	}
	return b.NewestClaim.Newer(key, claim), nil
}

// Volume is the newest copy of the claim's PV; nil when it names none or
// the cache has none.
func (b *Base) Volume(claim *v1.PersistentVolumeClaim) *v1.PersistentVolume {
	if claim.Spec.VolumeName == "" {
		return nil
	}
	pv, err := b.PVs.Get(claim.Spec.VolumeName)
	if err != nil {
		return nil
	}
	return b.NewestPV.Newer(pv.Name, pv)
}

// ClaimHandler queues the claims the loop may have work for (restless),
// unless the event is the loop's own write: the sync that wrote it already
// decided what follows (and a failure's mark must not undo the backoff). A
// deleted claim is forgotten.
func (b *Base) ClaimHandler(restless func(*v1.PersistentVolumeClaim) bool) cache.ResourceEventHandlerFuncs {
	onClaim := func(obj any) {
		claim, ok := obj.(*v1.PersistentVolumeClaim)
		if !ok {
			return
		}
		key := binding.ClaimKey(claim)
		own := b.NewestClaim.IsOwnWrite(key, claim)
		claim = b.NewestClaim.Observe(key, claim)
		if !own && restless(claim) {
			b.Queue.Add(key)
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: onClaim, UpdateFunc: loop.Updated(onClaim),
		DeleteFunc: func(obj any) {
			if claim, ok := loop.As[*v1.PersistentVolumeClaim](obj); ok {
				key := binding.ClaimKey(claim)
				b.NewestClaim.Forget(key)
				b.Memory.Forget(key)
			}
		}}
}

// VolumeHandler wakes the restless claim a served PV is bound to: the sync
// may have found the PV missing from the cache, or waited for it. The
// loop's own writes wake nothing.
func (b *Base) VolumeHandler(restless func(*v1.PersistentVolumeClaim) bool) cache.ResourceEventHandlerFuncs {
	onVolume := func(obj any) {
		pv, ok := obj.(*v1.PersistentVolume)
		if !ok {
			return
		}
		pv = b.NewestPV.Observe(pv.Name, pv)
		if b.NewestPV.IsOwnWrite(pv.Name, pv) {
			return
		}
		ref := pv.Spec.ClaimRef
		if ref == nil || pv.Spec.CSI == nil || !b.Pool.Serves(pv.Spec.CSI.Driver) {
			return
		}
		if claim, err := b.Claims.PersistentVolumeClaims(ref.Namespace).Get(ref.Name); err == nil && restless(claim) {
			b.Queue.Add(binding.ClaimKey(claim))
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: onVolume, UpdateFunc: loop.Updated(onVolume),
		DeleteFunc: func(obj any) {
			if pv, ok := loop.As[*v1.PersistentVolume](obj); ok {
				b.NewestPV.Forget(pv.Name)
			}
		}}
}

// Resync revisits the restless claims, leaving alone the keys waiting out
// a backoff (adding them would retry at once).
func (b *Base) Resync(restless func(*v1.PersistentVolumeClaim) bool) func(context.Context) {
	return func(context.Context) {
		claims, _ := b.Claims.List(labels.Everything())
		for _, claim := range claims {
			key := binding.ClaimKey(claim)
			if restless(claim) && b.Queue.NumRequeues(key) == 0 {
				b.Queue.Add(key)
			}
		}
	}
}
