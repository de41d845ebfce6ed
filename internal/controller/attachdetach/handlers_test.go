package attachdetach

import (
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
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
	c.metrics.observe("node-1", attachmentCounts(), nil)
	n, err := testutil.GatherAndCount(reg, "attachdetach_controller_total_volumes",
		"storage_count_attachable_volumes_in_use", "attach_detach_controller_attachdetach_controller_forced_detaches")
	if err != nil || n != 4 {
		t.Errorf("series %d (%v), want desired+actual totals, one in-use and one forced-detach series", n, err)
	}
}

func attachmentCounts() attachment.Counts {
	k := "kubernetes.io/csi:" + drv
	return attachment.Counts{attachment.UniqueVolumeName(drv, "h"): {Desired: k, Attached: k, InUse: 2}}
}

// A pod using a volume inline has no claim to be found by: an inline
// attachment deleted on another node, or an iscsi volume another node no
// longer lists, wakes its node at once, not at the resync.
func TestAVolumeLetGoWakesThePodsUsingItInline(t *testing.T) {
	ebs := podOn("ebs", "node-3", "unused")
	ebs.Spec.Volumes = []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{
		AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-1"}}}}
	iscsi := podOn("iscsi", "node-4", "unused")
	iscsi.Spec.Volumes = []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{
		ISCSI: &v1.ISCSIVolumeSource{TargetPortal: "10.0.0.1:3260", IQN: "iqn.x", Lun: 1}}}}
	l := newFakeLoop(t, ebs, iscsi)
	queued(l)
	inline := attachment.InlineVolumes(ebs)
	if len(inline) != 1 || inline[0].PV == nil {
		t.Fatalf("inline volumes of the ebs pod: %+v", inline)
	}
	va := attachment.NewAttachment(&attachment.Desired{Volume: inline[0]}, "node-2")
	l.onAttachmentDeleted(va)
	if got := queued(l); !slices.Equal(got, []string{"node-2", "node-3"}) {
		t.Errorf("inline attachment deleted: queued %v, want [node-2 node-3]", got)
	}
	held := managedNode("node-5")
	held.Status.VolumesAttached = []v1.AttachedVolume{{Name: "kubernetes.io/iscsi/10.0.0.1:3260:iqn.x:1"}}
	freed := held.DeepCopy()
	freed.Status.VolumesAttached, freed.ResourceVersion = nil, "2"
	l.onNodeUpdate(held, freed)
	if got := queued(l); !slices.Equal(got, []string{"node-4", "node-5"}) {
		t.Errorf("iscsi let go: queued %v, want [node-4 node-5]", got)
	}
}

// What a sync of the node already knows wakes nothing: the arrival of the
// attachment it created, as created; the attacher's finalizer; our own
// status patch. What it does not know does: the attacher's answer, an
// attachment someone else made, a node no longer Ready.
func TestOnlyNewsWakesTheNode(t *testing.T) {
	claim, pv := boundVolume()
	l := newFakeLoop(t, claim, pv, podUsing("data"))
	queued(l)
	made := attachmentOf(false)
	l.wrote(made.Name, createWrite)
	l.onAttachment(made)
	finalized := made.DeepCopy()
	finalized.Finalizers, finalized.ResourceVersion = []string{attachment.Finalizer(drv)}, "2"
	l.onAttachmentUpdate(made, finalized)
	node := managedNode(nodeName)
	patched := node.DeepCopy()
	patched.Status.VolumesAttached, patched.ResourceVersion = []v1.AttachedVolume{{Name: "kubernetes.io/csi/x^y"}}, "7"
	l.newestNode.Wrote(nodeName, patched)
	l.onNodeUpdate(node, patched)
	if got := queued(l); len(got) != 0 {
		t.Errorf("known changes queued %v, want nothing", got)
	}

	attached := finalized.DeepCopy()
	attached.Status.Attached, attached.ResourceVersion = true, "3"
	l.onAttachmentUpdate(finalized, attached)
	if got := queued(l); !slices.Equal(got, []string{nodeName}) {
		t.Errorf("attached: queued %v, want [%s]", got, nodeName)
	}
	l.onAttachment(attachmentOf(false)) // not a create of ours
	if got := queued(l); !slices.Equal(got, []string{nodeName}) {
		t.Errorf("someone else's attachment: queued %v, want [%s]", got, nodeName)
	}
	notReady := patched.DeepCopy()
	notReady.Status.Conditions, notReady.ResourceVersion = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse}}, "8"
	l.onNodeUpdate(patched, notReady)
	if got := queued(l); !slices.Equal(got, []string{nodeName}) {
		t.Errorf("node not Ready: queued %v, want [%s]", got, nodeName)
	}
}
