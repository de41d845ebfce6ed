package mounting

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func healthy(w *World) {
	d := w.Drivers[local]
	d.VolumeHealth = true
	w.Drivers[local] = d
}

// Health is asked for a pod's volume published (or attempted) here, by
// the pod's volume name with the staging and target paths; not for a
// driver without GET_VOLUME_HEALTH, a pod gone, or a claim whose volume's
// claimRef names another claim.
func TestHealthTargetsAreThePodsOwnPublishedVolumes(t *testing.T) {
	l := Layout{Root: "/var/lib/node"}
	p := pod(podUID, "data")
	got := world(local, healthy, withPods(p), published(podUID, local, false)).HealthTargets(l)
	_, target := l.PublishPaths(false, podUID, "pv-1")
	if len(got) != 1 || got[0].Volume != "vol-data" || got[0].Handle != "h-1" || got[0].PublishPath != target ||
		got[0].StagingPath != l.StagingPath(local, "h-1") {
		t.Fatalf("targets = %+v, want vol-data of pv-1 at its paths", got)
	}
	blockPub := func(w *World) { w.Published[0].Block = true }
	got = world(local, healthy, withPods(p), published(podUID, local, false), blockPub).HealthTargets(l)
	if len(got) != 1 || got[0].StagingPath != l.BlockStagingPath("pv-1") || got[0].PublishPath != l.BlockPublishPath("pv-1", podUID) {
		t.Errorf("block targets = %+v, want the block mapper's staging path %s and target %s",
			got, l.BlockStagingPath("pv-1"), l.BlockPublishPath("pv-1", podUID))
	}
	noStage := func(w *World) { d := w.Drivers[local]; d.Stage = false; w.Drivers[local] = d }
	for _, block := range []bool{false, true} {
		got = world(local, healthy, noStage, withPods(p), published(podUID, local, false), func(w *World) { w.Published[0].Block = block }).HealthTargets(l)
		if len(got) != 1 || got[0].StagingPath != "" || got[0].PublishPath == "" {
			t.Errorf("driver without STAGE_UNSTAGE, block %t: targets = %+v, want no staging path, as CSI 1.13 asks", block, got)
		}
	}
	for name, w := range map[string]World{
		"no capability": world(local, withPods(p), published(podUID, local, true)),
		"not published": world(local, healthy, withPods(p)),
		"pod deleting":  world(local, healthy, withPods(deleting(pod(podUID, "data"))), published(podUID, local, true)),
		"other pod's":   world(local, healthy, withPods(pod(otherUID, "data")), published(podUID, local, true)),
		"claimRef elsewhere": world(local, healthy, withPods(p), published(podUID, local, true), func(w *World) {
			w.Volumes["pv-1"].Spec.ClaimRef = &corev1.ObjectReference{Namespace: "other", Name: "data", UID: "x"}
		}),
	} {
		if got := w.HealthTargets(l); len(got) != 0 {
			t.Errorf("%s: targets = %+v, want none", name, got)
		}
	}
}
