package attachdetach

import (
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/volplane/volplane/internal/attachment"
)

func queued(l *fakeLoop) []string {
	var out []string
	for l.q.Len() > 0 {
		k, _ := l.q.Get()
		l.q.Done(k)
		out = append(out, k)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Work is keyed by node: a change of a claim, a volume or an attachment
// wakes the nodes whose pods use it, and only those.
func TestChangesWakeTheNodesOfThePodsThatUseTheVolume(t *testing.T) {
	claim, pv := boundVolume()
	other := podUsing("other-claim")
	other.Name, other.Spec.NodeName = "other", "node-9"
	l := newFakeLoop(t, claim, pv, podUsing("data"), other)
	queued(l)
	for name, event := range map[string]func(){
		"claim":                     func() { l.onClaim(claim) },
		"volume":                    func() { l.onVolume(pv) },
		"attachment deleted":        func() { a := attachmentOf(true); a.Spec.NodeName = "node-2"; l.onAttachmentDeleted(a) },
		"pod":                       func() { l.onPod(podUsing("data")) },
		"attachment (its own node)": func() { l.onAttachment(attachmentOf(false)) },
	} {
		event()
		got := queued(l)
		want := []string{nodeName}
		if name == "attachment deleted" {
			want = []string{nodeName, "node-2"}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: queued %v, want %v", name, got, want)
		}
	}
}

func TestMetricsHaveTheReferenceNames(t *testing.T) {
	reg := prometheus.NewRegistry()
	client := fake.NewClientset()
	c, err := New(Config{Client: client, Informers: informers.NewSharedInformerFactory(client, 0),
		Recorder: record.NewFakeRecorder(1), Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer c.q.ShutDown()
	c.metrics.forcedDetaches.WithLabelValues("timeout").Inc()
	c.metrics.observe("node-1", attachmentCounts())
	n, err := testutil.GatherAndCount(reg, "attachdetach_controller_total_volumes",
		"storage_count_attachable_volumes_in_use", "attach_detach_controller_attachdetach_controller_forced_detaches")
	if err != nil || n != 4 {
		t.Errorf("series %d (%v), want desired+actual totals, one in-use and one forced-detach series", n, err)
	}
}

func attachmentCounts() attachment.Counts {
	k := "kubernetes.io/csi:" + drv
	return attachment.Counts{Desired: map[string]int{k: 1}, Attached: map[string]int{k: 1}, InUse: map[string]int{k: 2}}
}
