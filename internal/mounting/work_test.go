package mounting

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func ready(p *corev1.Pod) *corev1.Pod {
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	return p
}

func claimIn(status corev1.ClaimResourceStatus) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data"}}
	if status != "" {
		c.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{corev1.ResourceStorage: status}
	}
	return c
}

// Where an event about a pod of the node goes.
func TestPodWorkSendsEachPodWhereItHasWork(t *testing.T) {
	phase := func(p corev1.PodPhase) *corev1.Pod { q := pod(podUID, "data"); q.Status.Phase = p; return q }
	for _, tc := range []struct {
		name   string
		pod    *corev1.Pod
		claims []*corev1.PersistentVolumeClaim
		want   Work
	}{
		{"new pod: mount", pod(podUID, "data"), nil, MountPod},
		{"running, not ready: mount", running(pod(podUID, "data")), nil, MountPod},
		{"running and ready: nothing", ready(pod(podUID, "data")), []*corev1.PersistentVolumeClaim{claimIn("")}, NoWork},
		{"ready, claim waits for the node: online expansion", ready(pod(podUID, "data")), []*corev1.PersistentVolumeClaim{claimIn(pending)}, MountPod},
		{"ready, a node stopped mid-expansion: online expansion", ready(pod(podUID, "data")), []*corev1.PersistentVolumeClaim{claimIn(inProgress)}, MountPod},
		{"ready, controller side still resizing: nothing", ready(pod(podUID, "data")),
			[]*corev1.PersistentVolumeClaim{claimIn(corev1.PersistentVolumeClaimControllerResizeInProgress)}, NoWork},
		{"being deleted: teardown", deleting(ready(pod(podUID, "data"))), nil, TearDown},
		{"succeeded: teardown", phase(corev1.PodSucceeded), nil, TearDown},
		{"failed: teardown", phase(corev1.PodFailed), nil, TearDown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := PodWork(tc.pod, tc.claims); got != tc.want {
				t.Errorf("PodWork = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCapacityChangedComparesStatusCapacity(t *testing.T) {
	sized := func(q string) *corev1.PersistentVolumeClaim {
		c := claimIn("")
		if q != "" {
			c.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(q)}
		}
		return c
	}
	for _, tc := range []struct {
		old, cur string
		want     bool
	}{
		{"1Gi", "1Gi", false}, {"1Gi", "1024Mi", false}, {"1Gi", "2Gi", true}, {"", "1Gi", true}, {"", "", false},
	} {
		if got := CapacityChanged(sized(tc.old), sized(tc.cur)); got != tc.want {
			t.Errorf("CapacityChanged(%q, %q) = %v, want %v", tc.old, tc.cur, got, tc.want)
		}
	}
}

func TestVolumeCapacityChangedComparesSpecCapacity(t *testing.T) {
	sized := func(q string) *corev1.PersistentVolume {
		pv := &corev1.PersistentVolume{}
		if q != "" {
			pv.Spec.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(q)}
		}
		return pv
	}
	for _, tc := range []struct {
		old, cur string
		want     bool
	}{
		{"1Gi", "1Gi", false}, {"1Gi", "1024Mi", false}, {"1Gi", "2Gi", true}, {"", "1Gi", true}, {"", "", false},
	} {
		if got := VolumeCapacityChanged(sized(tc.old), sized(tc.cur)); got != tc.want {
			t.Errorf("VolumeCapacityChanged(%q, %q) = %v, want %v", tc.old, tc.cur, got, tc.want)
		}
	}
}

// A pod is marked running once no volume waits, and only once.
func TestMarkRunningOnceNothingWaits(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    World
		want bool
	}{
		{"volume to stage: runs once staged and published", world(local, withPods(pod(podUID, "data"))), true},
		{"published: runs", world(local, withPods(pod(podUID, "data")), staged(local, true), published(podUID, local, true)), true},
		{"already running and ready", world(local, withPods(ready(pod(podUID, "data"))), staged(local, true), published(podUID, local, true)), false},
		{"waits for attach", world(network, withPods(pod(podUID, "data"))), false},
		{"claim missing", world(local, withPods(pod(podUID, "missing"))), false},
		{"no CSI volume", world(local, withPods(pod(podUID))), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pp, ok := Decide(tc.w).PodPlan(tc.w.Pods[0])
			if !ok {
				t.Fatal("no plan for the live pod")
			}
			if got := pp.MarkRunning(); got != tc.want {
				t.Errorf("MarkRunning = %v, want %v (steps %+v)", got, tc.want, pp.Steps)
			}
		})
	}
}

func TestPodPlanOnlyForLivePods(t *testing.T) {
	live, gone := pod(podUID, "data"), deleting(pod(otherUID, "data"))
	plan := Decide(world(local, withPods(live, gone)))
	if _, ok := plan.PodPlan(live); !ok {
		t.Error("no plan for the live pod")
	}
	if _, ok := plan.PodPlan(gone); ok {
		t.Error("a plan for a pod being deleted")
	}
	if WantsMount(gone) || !WantsMount(live) {
		t.Error("WantsMount: want only the pod not being deleted")
	}
}

func TestRunningStatusIsTheKubeletsAfterStart(t *testing.T) {
	p := pod(podUID, "data")
	p.Spec.Containers = []corev1.Container{{Name: "app", Image: "busybox"}}
	now := metav1.Now()
	upd := RunningStatus(p, now)
	if p.Status.Phase != "" {
		t.Fatal("the pod given was modified")
	}
	if !RunningAndReady(upd) || upd.Status.PodIP != PodIP || upd.Status.StartTime == nil || !upd.Status.StartTime.Equal(&now) {
		t.Errorf("status %+v: want Running, Ready, pod IP %s, started now", upd.Status, PodIP)
	}
	if len(upd.Status.Conditions) != 5 {
		t.Errorf("conditions %+v: want the five of a started pod", upd.Status.Conditions)
	}
	for _, c := range upd.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			t.Errorf("condition %s is %s", c.Type, c.Status)
		}
	}
	cs := upd.Status.ContainerStatuses
	if len(cs) != 1 || !cs[0].Ready || cs[0].Started == nil || !*cs[0].Started || cs[0].State.Running == nil ||
		cs[0].ContainerID != "volplane://"+string(podUID)+"/app" {
		t.Errorf("container statuses %+v: want app running, ready and started", cs)
	}
	earlier := metav1.NewTime(now.Add(-1e9))
	p.Status.StartTime = &earlier
	if got := RunningStatus(p, now).Status.StartTime; !got.Equal(&earlier) {
		t.Errorf("start time %v: want the pod's own kept", got)
	}
}
