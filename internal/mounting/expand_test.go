package mounting

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/volplane/volplane/internal/expansion"
)

// grown: the PV was expanded to pv while the claim's status says claim
// and its storage resize status is status ("" for none).
func grown(pv, claim string, status corev1.ClaimResourceStatus) func(*World) {
	return func(w *World) {
		w.Volumes["pv-1"].Spec.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(pv)}
		c := w.Claims["ns/data"]
		if claim != "" {
			c.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(claim)}
		}
		if status != "" {
			c.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{corev1.ResourceStorage: status}
		}
	}
}

func running(p *corev1.Pod) *corev1.Pod { p.Status.Phase = corev1.PodRunning; return p }

// inUse is a running pod on node with ns/data published and staged (the
// staging record at nodeSize, "" for none).
func inUse(driver, nodeSize string) []func(*World) {
	return []func(*World){withPods(running(pod(podUID, "data"))), published(podUID, driver, true), func(w *World) {
		s := Staged{Driver: driver, Handle: "h-1", PV: "pv-1", Done: true}
		if nodeSize != "" {
			s.Size = resource.MustParse(nodeSize)
		}
		w.Staged = append(w.Staged, s)
	}}
}

func with(base []func(*World), more ...func(*World)) []func(*World) {
	return append(append([]func(*World){}, base...), more...)
}

const (
	pending    = corev1.PersistentVolumeClaimNodeResizePending
	inProgress = corev1.PersistentVolumeClaimNodeResizeInProgress
)

// The kubelet's node expansion gate, for a volume in use and at mount.
func TestNodeExpansionRunsOnlyWhenTheClaimWaitsForTheNode(t *testing.T) {
	rwx := func(w *World) {
		w.Claims["ns/data"].Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
	}
	notRequired := func(w *World) {
		w.Claims["ns/data"].Annotations = map[string]string{expansion.AnnNodeExpansionNotRequired: "true"}
	}
	readOnly := func(w *World) { w.Pods[0].Spec.Volumes[2].PersistentVolumeClaim.ReadOnly = true }
	cannotExpand := func(w *World) { w.Drivers[local] = Driver{Stage: true} }
	expandable := func(w *World) { w.Drivers[local] = Driver{Stage: true, Expand: true} }
	refusedInUse := func(w *World) { w.Staged[0].RefusedInUse = resource.MustParse("2Gi") }
	for _, tc := range []struct {
		name    string
		mods    []func(*World)
		action  Action
		mode    ExpandMode // when an expansion is wanted
		atMount bool
		reason  Reason
	}{
		{"in use, NodeResizePending: expand online", with(inUse(local, "1Gi"), expandable, grown("2Gi", "1Gi", pending)), ExpandOnNode, ExpandAndFinish, false, ""},
		{"in use, NodeResizeInProgress (a restart): expand again", with(inUse(local, "1Gi"), expandable, grown("2Gi", "1Gi", inProgress)), ExpandOnNode, ExpandAndFinish, false, ""},
		{"no staging size recorded: the claim's capacity stands in", with(inUse(local, ""), expandable, grown("2Gi", "1Gi", pending)), ExpandOnNode, ExpandAndFinish, false, ""},
		{"controller still resizing: gate closed", with(inUse(local, "1Gi"), expandable, grown("2Gi", "1Gi", corev1.PersistentVolumeClaimControllerResizeInProgress)), Done, 0, false, ResizeNotPending},
		{"no resize status: gate closed", with(inUse(local, "1Gi"), expandable, grown("2Gi", "1Gi", "")), Done, 0, false, ResizeNotPending},
		{"node expansion infeasible: gate closed", with(inUse(local, "1Gi"), expandable, grown("2Gi", "1Gi", corev1.PersistentVolumeClaimNodeResizeInfeasible)), Done, 0, false, ResizeNotPending},
		{"sizes equal: nothing", with(inUse(local, "1Gi"), expandable, grown("1Gi", "1Gi", "")), Done, 0, false, ""},
		{"claim without status capacity", with(inUse(local, ""), expandable, grown("2Gi", "", pending)), Done, 0, false, SizeUnknown},
		{"read-only: skipped with the event", with(inUse(local, "1Gi"), expandable, readOnly, grown("2Gi", "1Gi", pending)), ExpandOnNode, SkipReadOnly, false, ""},
		{"node cannot expand: finish without a call", with(inUse(local, "1Gi"), cannotExpand, grown("2Gi", "1Gi", pending)), ExpandOnNode, FinishWithoutCall, false, ""},
		{"RWX another node finished: expand here too", with(inUse(local, "1Gi"), expandable, rwx, grown("2Gi", "2Gi", "")), ExpandOnNode, ExpandOnly, false, ""},
		{"RWX expanded by the controller alone: record only", with(inUse(local, "1Gi"), expandable, rwx, notRequired, grown("2Gi", "2Gi", "")), ExpandOnNode, RecordOnly, false, ""},
		{"RWX, node cannot expand: record only", with(inUse(local, "1Gi"), cannotExpand, rwx, grown("2Gi", "2Gi", "")), ExpandOnNode, RecordOnly, false, ""},
		{"RWO claim expanded without this node: record only", with(inUse(local, "1Gi"), expandable, grown("2Gi", "2Gi", "")), ExpandOnNode, RecordOnly, false, ""},
		{"RWX, this node already expanded: nothing", with(inUse(local, "2Gi"), expandable, rwx, grown("2Gi", "2Gi", "")), Done, 0, false, ""},
		{"published, driver no longer served: nothing finishes it in its place", with(inUse(local, "1Gi"), grown("2Gi", "1Gi", pending), func(w *World) { delete(w.Drivers, local) }), Done, 0, false, DriverNotServed},
		{"refused in use at this size: not tried online again", with(inUse(local, "1Gi"), expandable, refusedInUse, grown("2Gi", "1Gi", pending)), Done, 0, false, RefusedInUse},
		{"refused in use: the next pod's mount tries again", []func(*World){withPods(pod(podUID, "data")), expandable, staged(local, true), refusedInUse, grown("2Gi", "1Gi", pending)}, Publish, ExpandAndFinish, true, ""},
		{"next use: staged then expanded at mount", []func(*World){withPods(pod(podUID, "data")), expandable, grown("2Gi", "1Gi", pending)}, Stage, ExpandAndFinish, true, ""},
		{"next use, staged for another pod at the old size", []func(*World){withPods(pod(podUID, "data")), expandable, staged(local, true), grown("2Gi", "1Gi", pending)}, Publish, ExpandAndFinish, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := Decide(world(local, tc.mods...))
			s := plan.Pods[0].Steps[0]
			if s.Action != tc.action || s.NotExpanded != tc.reason {
				t.Fatalf("step %v (not expanded: %q), want %v (%q)", s.Action, s.NotExpanded, tc.action, tc.reason)
			}
			wantExpansion := tc.action == ExpandOnNode || (tc.action != Done && tc.reason == "")
			if (s.Expand != nil) != wantExpansion {
				t.Fatalf("expansion %+v, want one: %v", s.Expand, wantExpansion)
			}
			if s.Expand == nil {
				return
			}
			if s.Expand.Mode != tc.mode || s.Expand.AtMount != tc.atMount || s.Expand.Size.Cmp(resource.MustParse("2Gi")) != 0 {
				t.Errorf("expansion %v at mount %v to %s, want %v at mount %v to 2Gi", s.Expand.Mode, s.Expand.AtMount, s.Expand.Size.String(), tc.mode, tc.atMount)
			}
			if tc.action == ExpandOnNode && !plan.Pods[0].Ready() {
				t.Errorf("a published volume waiting for expansion makes the pod not ready")
			}
		})
	}
}

// The kubelet expands to the claim's allocated storage once the resizer
// recorded one (a driver that rounded the PV up does not make the node
// expand past it), else to the PV's capacity.
func TestNodeExpandsToTheAllocatedSize(t *testing.T) {
	allocated := func(size string) func(*World) {
		return func(w *World) {
			w.Claims["ns/data"].Status.AllocatedResources = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}
		}
	}
	for _, tc := range []struct {
		name string
		mods []func(*World)
		want string
	}{
		{"no allocation recorded", with(inUse(local, "1Gi"), grown("3Gi", "1Gi", pending)), "3Gi"},
		{"allocated below the rounded PV", with(inUse(local, "1Gi"), grown("3Gi", "1Gi", pending), allocated("2Gi")), "2Gi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := world(local, tc.mods...)
			w.Drivers[local] = Driver{Stage: true, Expand: true}
			s := Decide(w).Pods[0].Steps[0]
			if s.Expand == nil || s.Expand.Size.String() != tc.want {
				t.Fatalf("expansion %+v (%s), want to %s", s.Expand, s.NotExpanded, tc.want)
			}
		})
	}
}
