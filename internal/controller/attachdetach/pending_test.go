package attachdetach

import (
	"errors"
	"maps"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/attachment"
)

// Each event wakes its node about the volumes it names, and only those;
// the whole node when the caches cannot name them, or when the change is
// the node's own; nothing when it names no attachable volume.
func TestEventsWakeTheVolumesTheyName(t *testing.T) {
	claim, pv := boundVolume()
	other := "node-2"
	cases := []struct {
		name  string
		event func(l *fakeLoop)
		node  string
		want  []v1.UniqueVolumeName // nil: the whole node
		due   bool
	}{
		{name: "pod using a bound claim", event: func(l *fakeLoop) { l.onPod(podUsing("data")) },
			node: nodeName, want: []v1.UniqueVolumeName{unique}, due: true},
		{name: "pod of no attachable volume", event: func(l *fakeLoop) {
			p := podUsing("data")
			p.Spec.Volumes[0].VolumeSource = v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}
			l.onPod(p)
		}, node: nodeName},
		{name: "pod using a claim not in the cache", event: func(l *fakeLoop) { l.onPod(podUsing("gone")) },
			node: nodeName, due: true},
		{name: "pod with an inline iscsi volume", event: func(l *fakeLoop) {
			p := podUsing("data")
			p.Spec.Volumes[0].VolumeSource = v1.VolumeSource{ISCSI: &v1.ISCSIVolumeSource{TargetPortal: "10.0.0.1:3260", IQN: "iqn.2026-11.io.volplane:d"}}
			l.onPod(p)
		}, node: nodeName, due: true},
		{name: "claim bound", event: func(l *fakeLoop) {
			unbound := claim.DeepCopy()
			unbound.Spec.VolumeName, unbound.Status.Phase = "", v1.ClaimPending
			l.onClaimUpdate(unbound, claim)
		}, node: nodeName, want: []v1.UniqueVolumeName{unique}, due: true},
		{name: "attachment attached", event: func(l *fakeLoop) { l.onAttachmentUpdate(attachmentOf(false), attachmentOf(true)) },
			node: nodeName, want: []v1.UniqueVolumeName{unique}, due: true},
		{name: "attachment of a PV not in the cache", event: func(l *fakeLoop) {
			va := attachmentOf(false)
			va.Spec.Source.PersistentVolumeName = ptr.To("pv-gone")
			l.onAttachmentDeleted(va)
		}, node: nodeName, due: true},
		{name: "node reports the volume in use", event: func(l *fakeLoop) { l.onNodeUpdate(node(), node(unique)) },
			node: nodeName, want: []v1.UniqueVolumeName{unique}, due: true},
		{name: "node NotReady", event: func(l *fakeLoop) {
			n := node()
			n.Status.Conditions[0].Status = v1.ConditionFalse
			l.onNodeUpdate(node(), n)
		}, node: nodeName, due: true},
		{name: "node heartbeat", event: func(l *fakeLoop) {
			n := node()
			n.Status.Conditions[0].LastHeartbeatTime = metav1.Now()
			l.onNodeUpdate(node(), n)
		}, node: nodeName},
		{name: "PV of no attachable kind", event: func(l *fakeLoop) {
			nfs := pv.DeepCopy()
			nfs.Spec.PersistentVolumeSource = v1.PersistentVolumeSource{NFS: &v1.NFSVolumeSource{Server: "s", Path: "/"}}
			l.onVolume(nfs)
		}, node: nodeName},
		{name: "PV: its pods' node", event: func(l *fakeLoop) { l.onVolume(pv) }, node: nodeName,
			want: []v1.UniqueVolumeName{unique}, due: true},
		{name: "PV: no pod on another node", event: func(l *fakeLoop) { l.onVolume(pv) }, node: other},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := newFakeLoop(t, node(), claim, pv, podUsing("data"))
			tc.event(l)
			scope, due := l.take(tc.node)
			if due != tc.due || (due && !slices.Equal(sorted(scope), tc.want)) {
				t.Errorf("due %v scope %v, want due %v scope %v (nil: the whole node)", due, sorted(scope), tc.due, tc.want)
			}
		})
	}
}

func sorted(scope map[v1.UniqueVolumeName]bool) []v1.UniqueVolumeName {
	if scope == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(scope))
}

// A sync about one volume writes nothing about the others: a stale entry
// of another volume in volumesAttached stays until a sync of the whole
// node (the resync) removes it; its metrics stay counted meanwhile.
func TestASyncAboutOneVolumeLeavesTheOthersToTheWholeNodesSync(t *testing.T) {
	claim, pv := boundVolume()
	stale := attachment.UniqueVolumeName(drv, "stale")
	n := node()
	n.Status.VolumesAttached = []v1.AttachedVolume{{Name: stale}, {Name: unique}}
	l := newFakeLoop(t, n, claim, pv, podUsing("data"), attachmentOf(true))
	l.metrics.observe(nodeName, attachment.Counts{stale: {Attached: "kubernetes.io/csi:" + drv}}, nil)

	l.onAttachmentUpdate(attachmentOf(false), attachmentOf(true))
	if err := l.syncPending(t); err != nil || len(l.writes()) != 0 || len(l.recorder.Events) != 0 {
		t.Fatalf("sync about %s: err %v writes %v, %d events, want none", unique, err, l.writes(), len(l.recorder.Events))
	}
	if _, ok := l.metrics.counts[nodeName][stale]; !ok {
		t.Errorf("counts %v: the stale volume's dropped by a sync about another", l.metrics.counts[nodeName])
	}

	l.resync(t.Context())
	if err := l.syncPending(t); err != nil || !slices.Equal(l.writes(), []string{"patch nodes/status"}) {
		t.Fatalf("resync: err %v writes %v, want the stale entry patched away", err, l.writes())
	}
	if _, ok := l.metrics.counts[nodeName][stale]; ok || len(l.recorder.Events) != 0 {
		t.Errorf("after the resync: counts %v, %d events; want the stale volume gone and nothing recorded again",
			l.metrics.counts[nodeName], len(l.recorder.Events))
	}
}

// A sync whose apply fails gives its volumes back: the retry decides on
// them again, not on nothing.
func TestAFailedSyncGivesItsVolumesBack(t *testing.T) {
	claim, pv := boundVolume()
	l := newFakeLoop(t, node(), claim, pv, podUsing("data"), attachmentOf(true))
	l.client.PrependReactor("patch", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("api server on fire")
	})
	l.onAttachmentUpdate(attachmentOf(false), attachmentOf(true))
	if err := l.syncPending(t); err == nil {
		t.Fatal("the status patch failed, the sync did not say so")
	}
	if scope, due := l.take(nodeName); !due || !slices.Equal(sorted(scope), []v1.UniqueVolumeName{unique}) {
		t.Errorf("after the failure: due %v scope %v, want [%s] again", due, sorted(scope), unique)
	}
}

// syncPending runs the node's sync on what the events left pending.
func (l *fakeLoop) syncPending(t *testing.T) error {
	t.Helper()
	l.client.ClearActions()
	_, err := l.syncNode(t.Context(), nodeName)
	return err
}
