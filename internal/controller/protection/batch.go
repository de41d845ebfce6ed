package protection

import (
	"context"
	"errors"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/informerindex"
	"github.com/volplane/volplane/internal/protection"
)

// batch is one namespace's queued claims, processed together. live is the
// namespace's pods from the batch's live list, made on the first claim that
// needs one; a failed list is not remembered, so the next claim tries again.
type batch struct {
	ns     string
	live   []*v1.Pod
	listed bool
}

// write is a decided finalizer change, an Unused condition to write, or
// both.
type write struct {
	claim    *v1.PersistentVolumeClaim
	decision protection.Decision
	// unused, if set, is the claim's new Unused condition.
	unused *v1.PersistentVolumeClaimCondition
}

// syncNamespace processes every claim queued for the namespace. Claims
// whose processing failed are queued again and the namespace retried with
// backoff (the runner's, on the returned error); the others are done.
func (c *ClaimLoop) syncNamespace(ctx context.Context, ns string) (loop.Result, error) {
	b := &batch{ns: ns}
	var (
		writes []write
		failed []string
		errs   []error
	)
	for _, name := range c.pending.take(ns) {
		w, err := c.decide(ctx, b, name)
		if err != nil {
			failed, errs = append(failed, name), append(errs, err)
			continue
		}
		if w != nil {
			writes = append(writes, *w)
		}
	}
	for _, f := range c.apply(ctx, writes) {
		failed, errs = append(failed, f.name), append(errs, f.err)
	}
	if len(failed) == 0 {
		return loop.Done(), nil
	}
	c.pending.add(ns, failed...)
	return loop.Done(), fmt.Errorf("%d claim(s) of namespace %s: %w", len(failed), ns, errors.Join(errs...))
}

// decide reads one claim and decides it, listing the namespace's pods live
// if the cache cannot settle it. It returns the write to make, if any.
func (c *ClaimLoop) decide(ctx context.Context, b *batch, name string) (*write, error) {
	logger := klog.FromContext(ctx)
	key := b.ns + "/" + name
	claim, err := c.claims.PersistentVolumeClaims(b.ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("claim %s: %w", key, err)
	}
	claim = c.newest.Observe(key, claim)
	facts := protection.ClaimFacts{Claim: claim, Cached: c.cachedPods(key)}
	var unused *v1.PersistentVolumeClaimCondition
	if protection.UnusedTracked(c.trackUnused, claim) {
		u := protection.DecideUnused(facts, metav1.Now())
		if u.Action == protection.UnusedListPods {
			if err := c.listLive(ctx, b); err != nil {
				return nil, err
			}
			facts.Live, facts.Listed = b.live, true
			u = protection.DecideUnused(facts, metav1.Now())
		}
		if u.Action == protection.UnusedWrite {
			unused = &u.Condition
		}
	}
	d := protection.DecideClaim(facts)
	if d.Action == protection.ListPods {
		if err := c.listLive(ctx, b); err != nil {
			return nil, err
		}
		facts.Live, facts.Listed = b.live, true
		d = protection.DecideClaim(facts)
	}
	switch d.Action {
	case protection.AddFinalizer, protection.RemoveFinalizer:
		return &write{claim: claim, decision: d, unused: unused}, nil
	case protection.Keep:
		logger.V(2).Info("Keeping PVC because it is being used", "pvc", klog.KObj(claim), "pod", d.Pod, "use", d.Use)
	}
	if unused != nil {
		return &write{claim: claim, decision: d, unused: unused}, nil
	}
	return nil, nil
}

// cachedPods are the cached pods using the claim key, of every phase.
func (c *ClaimLoop) cachedPods(key string) []*v1.Pod {
	pods, err := informerindex.PodsUsing(c.pods, key)
	if err != nil {
		return nil // the live list decides then
	}
	return pods
}

// listLive lists the namespace's pods from the API server, once per batch:
// a pod created a moment ago may not be in the cache yet.
func (c *ClaimLoop) listLive(ctx context.Context, b *batch) error {
	if b.listed {
		return nil
	}
	klog.FromContext(ctx).V(4).Info("Live listing Pods in namespace", "namespace", b.ns)
	list, err := c.client.CoreV1().Pods(b.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("live list of pods failed: %w", err)
	}
	b.live = make([]*v1.Pod, len(list.Items))
	for i := range list.Items {
		b.live[i] = &list.Items[i]
	}
	b.listed = true
	return nil
}

type failure struct {
	name string
	err  error
}

// apply makes the batch's writes, up to WritersPerWorker*c.workers at once.
func (c *ClaimLoop) apply(ctx context.Context, writes []write) []failure {
	var (
		mu     sync.Mutex
		failed []failure
		wg     sync.WaitGroup
	)
	sem := make(chan struct{}, WritersPerWorker*c.workers)
	for _, w := range writes {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := c.write(ctx, w); err != nil {
				mu.Lock()
				failed = append(failed, failure{name: w.claim.Name, err: err})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return failed
}
