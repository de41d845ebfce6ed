package heartbeats

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/volplane/volplane/internal/heartbeat"
)

const driver = "hostpath.csi.volplane.io"

func TestConfigIsCheckedUpFront(t *testing.T) {
	ok := Config{Namespace: "kube-system", Provisioners: []string{driver}, Identity: "x"}
	cases := []struct {
		change func(*Config)
		want   string // "" = valid
	}{
		{func(*Config) {}, ""},
		{func(c *Config) { c.Namespace = "" }, "no namespace"},
		{func(c *Config) { c.Provisioners = nil }, "no provisioner"},
		{func(c *Config) { c.Identity = "" }, "no holder identity"},
		{func(c *Config) { c.Period, c.Duration = time.Second, time.Second }, "the lease duration 1s must be longer than the period 1s"},
		{func(c *Config) { c.Period = time.Second }, ""}, // duration: four periods
	}
	for _, c := range cases {
		cfg := ok
		c.change(&cfg)
		err := cfg.Validate()
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", cfg, err, c.want)
		}
	}
	if err := Run(context.Background(), fake.NewClientset().CoordinationV1(), Config{}); err == nil {
		t.Error("Run accepted an empty Config")
	}
}

// Run keeps a Lease per driver, retries a write that raced with another
// writer at once, and deletes its Leases when it stops.
func TestRunRenewsRetriesConflictsAndDeletesOnStop(t *testing.T) {
	client := fake.NewClientset()
	var updates, conflicts atomic.Int32
	client.PrependReactor("update", "leases", func(clienttesting.Action) (bool, runtime.Object, error) {
		if updates.Add(1) == 2 { // the second renewal races with another writer
			conflicts.Add(1)
			return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "x", nil)
		}
		return false, nil, nil
	})
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	cfg := Config{Namespace: "kube-system", Provisioners: []string{driver, "network.csi.volplane.io"}, Identity: "me", Period: 5 * time.Millisecond}
	go func() { done <- Run(ctx, client.CoordinationV1(), cfg) }()

	leases := client.CoordinationV1().Leases("kube-system")
	waitFor(t, "both Leases renewed after a conflict", func() bool {
		a, errA := leases.Get(ctx, heartbeat.LeaseName(driver, ""), metav1.GetOptions{})
		b, errB := leases.Get(ctx, heartbeat.LeaseName("network.csi.volplane.io", ""), metav1.GetOptions{})
		return errA == nil && errB == nil && conflicts.Load() == 1 && updates.Load() >= 6 &&
			renewedAfterAcquired(a) && renewedAfterAcquired(b)
	})
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	list, err := leases.List(context.Background(), metav1.ListOptions{})
	if err != nil || len(list.Items) != 0 {
		t.Errorf("after Run: %d Leases (%v), want them deleted", len(list.Items), err)
	}
}

func renewedAfterAcquired(l *coordinationv1.Lease) bool {
	return l.Spec.RenewTime != nil && l.Spec.AcquireTime != nil && l.Spec.RenewTime.After(l.Spec.AcquireTime.Time)
}

// waitFor polls cond until it holds, failing after a generous bound.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
