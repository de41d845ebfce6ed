// Package heartbeats is the writer of the heartbeat Leases of the
// provisioner and the snapshotter (internal/heartbeat's roles): Run renews
// a Lease per role and driver served every period and deletes them when it
// stops (only while it still holds them: another replica may have taken
// over). What a Lease holds, and how a reader judges it, is the
// pure internal/heartbeat's.
package heartbeats

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/volplane/volplane/internal/heartbeat"
)

const (
	// attempts bounds the writes of one renewal that conflict with
	// another writer's.
	attempts = 3
	// stopTimeout bounds the deletes after Run's context ended.
	stopTimeout = 5 * time.Second
)

// Config says which heartbeats Run keeps.
type Config struct {
	// Namespace holds the Leases.
	Namespace string
	// Provisioners are the driver names served by the provisioner, one
	// Lease each (heartbeat.Provisioner); Snapshotters those served by the
	// snapshotter (heartbeat.Snapshotter). One of them at least.
	Provisioners, Snapshotters []string
	// Node is the node of a node deployment, "" in the central mode.
	Node string
	// Identity is the holder written in the Leases (the host name).
	Identity string
	// Period between renewals (0: heartbeat.DefaultPeriod); Duration is the Leases'
	// leaseDurationSeconds (0: four periods), longer than Period.
	Period, Duration time.Duration
}

func (c Config) withDefaults() Config {
	if c.Period == 0 {
		c.Period = heartbeat.DefaultPeriod
	}
	if c.Duration == 0 {
		c.Duration = 4 * c.Period
	}
	return c
}

// Validate rejects a Config Run cannot keep, with the reason.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Namespace == "":
		return errors.New("heartbeat: no namespace for the Leases")
	case len(c.Provisioners) == 0 && len(c.Snapshotters) == 0:
		return errors.New("heartbeat: no provisioner or snapshotter to beat for")
	case c.Identity == "":
		return errors.New("heartbeat: no holder identity")
	case c.Period < 0 || c.Duration <= c.Period:
		return fmt.Errorf("heartbeat: the lease duration %s must be longer than the period %s", c.Duration, c.Period)
	}
	return nil
}

// Run renews a heartbeat Lease for every role and driver of cfg at once and
// then every Period until ctx ends; then it deletes the Leases that are
// still held by it, and returns nil. A failed write is logged
// and tried again at the next period: the heartbeat never stops the
// loops. Only an invalid cfg is an error.
func Run(ctx context.Context, leases coordinationv1client.LeasesGetter, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg = cfg.withDefaults()
	var beats []*beater
	for _, role := range []struct {
		role    heartbeat.Role
		drivers []string
	}{{heartbeat.Provisioner, cfg.Provisioners}, {heartbeat.Snapshotter, cfg.Snapshotters}} {
		for _, d := range role.drivers {
			beats = append(beats, &beater{client: leases.Leases(cfg.Namespace), clock: clock.RealClock{}, beat: heartbeat.Beat{
				Role: role.role, Namespace: cfg.Namespace, Driver: d, Node: cfg.Node, Identity: cfg.Identity, Duration: cfg.Duration}})
		}
	}
	logger := klog.FromContext(ctx)
	ticker := time.NewTicker(cfg.Period)
	defer ticker.Stop()
	for {
		for _, b := range beats {
			if err := b.renew(ctx); err != nil && ctx.Err() == nil {
				logger.Error(err, "Heartbeat not renewed", "role", b.beat.Role, "driver", b.beat.Driver, "lease", cfg.Namespace+"/"+b.beat.Name())
			}
		}
		select {
		case <-ctx.Done():
			stopAll(ctx, beats, stopTimeout)
			return nil
		case <-ticker.C:
		}
	}
}

// stopAll deletes the Leases, within timeout after ctx ended.
func stopAll(ctx context.Context, beats []*beater, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	for _, b := range beats {
		if err := b.stop(ctx); err != nil {
			klog.FromContext(ctx).Info("Heartbeat Lease left to expire", "role", b.beat.Role, "driver", b.beat.Driver, "err", err)
		}
	}
}

// beater keeps one Lease.
type beater struct {
	client coordinationv1client.LeaseInterface
	clock  clock.PassiveClock
	beat   heartbeat.Beat
	// last is the Lease as last written or read; nil: read it first.
	last *coordinationv1.Lease
}

// renew writes the Renewal of the Lease, reading it again after a
// conflict with another writer.
func (b *beater) renew(ctx context.Context) error {
	var err error
	for range attempts {
		if err = b.write(ctx); err == nil || !raced(err) {
			return err
		}
		b.last = nil
	}
	return err
}

// raced says the Lease is not as last seen: another writer changed,
// created or deleted it.
func raced(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err)
}

func (b *beater) write(ctx context.Context) error {
	if b.last == nil {
		l, err := b.client.Get(ctx, b.beat.Name(), metav1.GetOptions{})
		switch {
		case err == nil:
			b.last = l
		case !apierrors.IsNotFound(err):
			return fmt.Errorf("read lease: %w", err)
		}
	}
	want := heartbeat.Renewal(b.last, b.beat, b.clock.Now())
	var got *coordinationv1.Lease
	var err error
	if b.last == nil {
		got, err = b.client.Create(ctx, want, metav1.CreateOptions{})
	} else {
		got, err = b.client.Update(ctx, want, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("write lease: %w", err)
	}
	b.last = got
	return nil
}

// stop deletes the Lease if it is still the one last written (another
// replica may have taken it over since). A renewal cut short when Run's
// context ended may have been written without its answer: the Lease is then
// newer than the last one seen, so on a conflict it is read again and
// deleted if this process (its identity) still holds it.
func (b *beater) stop(ctx context.Context) error {
	if b.last == nil {
		return nil
	}
	err := b.delete(ctx, b.last)
	if !apierrors.IsConflict(err) {
		return err
	}
	cur, err := b.client.Get(ctx, b.last.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	case cur.Spec.HolderIdentity == nil || *cur.Spec.HolderIdentity != b.beat.Identity:
		return fmt.Errorf("lease %s is held by another process now", cur.Name)
	}
	return b.delete(ctx, cur)
}

// delete deletes the Lease if it is still l (UID and resourceVersion).
func (b *beater) delete(ctx context.Context, l *coordinationv1.Lease) error {
	err := b.client.Delete(ctx, l.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{
		UID: &l.UID, ResourceVersion: &l.ResourceVersion}})
	if err == nil || apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
