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
		{func(c *Config) { c.Provisioners = nil }, "no provisioner or snapshotter"},
		{func(c *Config) { c.Provisioners, c.Snapshotters = nil, []string{driver} }, ""},
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

// A snapshotter's heartbeats are its role's Leases, one per driver and
// node, beside the provisioner's of the same process.
func TestRunBeatsForEachRole(t *testing.T) {
	client := fake.NewClientset()
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	cfg := Config{Namespace: "volplane", Provisioners: []string{driver}, Snapshotters: []string{driver, "network.csi.volplane.io"},
		Node: "node-1", Identity: "me", Period: 5 * time.Millisecond}
	go func() { done <- Run(ctx, client.CoordinationV1(), cfg) }()
	leases := client.CoordinationV1().Leases("volplane")
	waitFor(t, "a Lease per role and driver", func() bool {
		list, err := leases.List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == 3
	})
	for _, want := range []struct {
		role   heartbeat.Role
		driver string
	}{{heartbeat.Provisioner, driver}, {heartbeat.Snapshotter, driver}, {heartbeat.Snapshotter, "network.csi.volplane.io"}} {
		l, err := leases.Get(ctx, want.role.LeaseName(want.driver, "node-1"), metav1.GetOptions{})
		if err != nil {
			t.Errorf("%s of %s: %v", want.role, want.driver, err)
			continue
		}
		if p := want.role.Find([]coordinationv1.Lease{*l}, want.driver, time.Now()); !p.Serving || len(p.Nodes) != 1 || p.Nodes[0] != "node-1" {
			t.Errorf("%s of %s: %+v", want.role, want.driver, p)
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if list, err := leases.List(context.Background(), metav1.ListOptions{}); err != nil || len(list.Items) != 0 {
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

// A renewal written without its answer (Run's context ended during it)
// leaves the Lease newer than the one last seen: stop still deletes it
// while this process holds it, and never once another process does.
func TestStopDeletesALeaseRenewedUnseenButNotOneTakenOver(t *testing.T) {
	for _, tc := range []struct {
		holder  string
		deleted bool
	}{{"me", true}, {"another", false}} {
		client := fake.NewClientset()
		leases := client.CoordinationV1().Leases("kube-system")
		client.PrependReactor("delete", "leases", func(a clienttesting.Action) (bool, runtime.Object, error) {
			want := a.(clienttesting.DeleteActionImpl).GetDeleteOptions().Preconditions
			cur, err := client.Tracker().Get(a.GetResource(), a.GetNamespace(), a.(clienttesting.DeleteActionImpl).GetName())
			if err == nil && want != nil && want.ResourceVersion != nil && *want.ResourceVersion != cur.(*coordinationv1.Lease).ResourceVersion {
				return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "x", nil)
			}
			return false, nil, nil
		})
		b := &beater{client: leases, beat: heartbeat.Beat{Namespace: "kube-system", Driver: driver, Identity: "me", Duration: time.Minute}}
		seen := heartbeat.Renewal(nil, b.beat, time.Now())
		seen.ResourceVersion = "1"
		if _, err := leases.Create(context.Background(), seen, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		b.last = seen
		unseen := heartbeat.Renewal(seen, heartbeat.Beat{Namespace: "kube-system", Driver: driver, Identity: tc.holder, Duration: time.Minute}, time.Now())
		unseen.ResourceVersion = "2"
		if _, err := leases.Update(context.Background(), unseen, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		err := b.stop(context.Background())
		_, getErr := leases.Get(context.Background(), seen.Name, metav1.GetOptions{})
		if gone := apierrors.IsNotFound(getErr); gone != tc.deleted || (err == nil) != tc.deleted {
			t.Errorf("held by %s: stop = %v, Lease deleted %v, want %v", tc.holder, err, gone, tc.deleted)
		}
	}
}
