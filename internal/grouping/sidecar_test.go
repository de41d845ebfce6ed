package grouping

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	vgsv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/snapshotapi"
)

func marked(c *vgsv1.VolumeGroupSnapshotContent) {
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[snapshotapi.GroupBeingCreated] = "yes"
}

func TestDecideContentCreate(t *testing.T) {
	g := group()
	cls := class("grp-class", true, map[string]string{"type": "fast", snapshotapi.GroupSecretNameParameter: "s", snapshotapi.GroupSecretNamespaceParameter: "kube-system"})
	c := content(g)
	if p := DecideContent(c, cls, now); p.Step != MarkCreating {
		t.Fatalf("unmarked: %s", p.Step)
	}
	marked(c)
	c.Annotations[snapshotapi.GroupDeletionSecretName] = "s"
	c.Annotations[snapshotapi.GroupDeletionSecretNamespace] = "kube-system"
	p := DecideContent(c, cls, now)
	if p.Step != Create || p.Secret == nil || p.Secret.Name != "s" {
		t.Fatalf("marked: %+v", p)
	}
	r := p.Create
	if r.Name != "groupsnapshot-g-uid" || !slices.Equal(r.SourceVolumeIds, c.Spec.Source.VolumeHandles) {
		t.Errorf("request %+v", r)
	}
	want := map[string]string{"type": "fast", snapshotapi.GroupSnapshotNameKey: "grp", snapshotapi.GroupSnapshotNamespaceKey: ns,
		snapshotapi.GroupSnapshotContentNameKey: c.Name}
	if len(r.Parameters) != len(want) {
		t.Errorf("parameters %v, want %v", r.Parameters, want)
	}
	for k, v := range want {
		if r.Parameters[k] != v {
			t.Errorf("parameter %s = %q, want %q", k, r.Parameters[k], v)
		}
	}

	answer := &csi.VolumeGroupSnapshot{GroupSnapshotId: "gsh", ReadyToUse: true, CreationTime: timestamppb.New(now), Snapshots: []*csi.Snapshot{
		{SnapshotId: "snap-0", SourceVolumeId: "vol-team-a-db-0", SizeBytes: 1 << 20, ReadyToUse: true, CreationTime: timestamppb.New(now)},
		{SnapshotId: "snap-1", SourceVolumeId: "vol-team-a-db-1", SizeBytes: 1 << 20, ReadyToUse: true, CreationTime: timestamppb.New(now)},
	}}
	st, events, unmark := AfterCreate(c, answer, nil, now)
	if !unmark || len(events) != 0 || *st.VolumeGroupSnapshotHandle != "gsh" || !*st.ReadyToUse || len(st.VolumeSnapshotInfoList) != 2 ||
		st.VolumeSnapshotInfoList[1].SnapshotHandle != "snap-1" || *st.VolumeSnapshotInfoList[1].RestoreSize != 1<<20 ||
		*st.VolumeSnapshotInfoList[0].CreationTime != now.UnixNano() {
		t.Errorf("after create: %+v %v %v", st, events, unmark)
	}
	c.Status = st
	if p := DecideContent(c, cls, now); p.Step != UnmarkCreating {
		t.Errorf("ready and marked: %s", p.Step)
	}
	delete(c.Annotations, snapshotapi.GroupBeingCreated)
	if p := DecideContent(c, cls, now); p.Step != Idle || p.Err != nil {
		t.Errorf("ready: %+v", p)
	}

	// A timeout keeps the mark (the call may still run); a refusal drops it.
	c = content(g, marked)
	_, events, unmark = AfterCreate(c, nil, status.Error(codes.DeadlineExceeded, "slow"), now)
	if unmark || len(events) != 1 || events[0].Reason != "GroupSnapshotCreationFailed" {
		t.Errorf("timeout: %v %v", events, unmark)
	}
	// The same error again: the status stays as it is (a nil status
	// written back would clear the error), and no second event.
	c.Status, _, _ = AfterCreate(c, nil, status.Error(codes.DeadlineExceeded, "slow"), now)
	again, events, _ := AfterCreate(c, nil, status.Error(codes.DeadlineExceeded, "slow"), now.Add(time.Second))
	if again == nil || again.Error == nil || !again.Error.Time.Equal(c.Status.Error.Time) || len(events) != 0 {
		t.Errorf("same error again: %+v %v", again, events)
	}
	c.Status = nil
	if _, _, unmark = AfterCreate(c, nil, status.Error(codes.InvalidArgument, "no"), now); !unmark {
		t.Errorf("final error keeps the mark")
	}
	if _, _, unmark = AfterCreate(c, nil, errors.New("connection lost"), now); unmark {
		t.Errorf("an error without status drops the mark")
	}

	// No class: the reference's refusal; unbound: wait.
	c = content(g, func(c *vgsv1.VolumeGroupSnapshotContent) { c.Spec.VolumeGroupSnapshotClassName = nil })
	if p := DecideContent(c, nil, now); p.Step != FailContent || p.Events[0].Reason != "GroupSnapshotCreationFailed" {
		t.Errorf("no class: %+v", p)
	}
	c = content(g, func(c *vgsv1.VolumeGroupSnapshotContent) { c.Spec.VolumeGroupSnapshotRef.UID = "" })
	if p := DecideContent(c, cls, now); p.Step != Idle || p.Err == nil {
		t.Errorf("unbound: %+v", p)
	}
}

func TestDecideContentDelete(t *testing.T) {
	g := group()
	deleted := func(c *vgsv1.VolumeGroupSnapshotContent) { c.DeletionTimestamp = &metav1.Time{Time: now} }
	beingDeleted := func(c *vgsv1.VolumeGroupSnapshotContent) {
		c.Annotations = map[string]string{snapshotapi.GroupBeingDeleted: "yes"}
	}
	c := content(g, answered(true), deleted)
	if p := DecideContent(c, nil, now); p.Step != Idle {
		t.Errorf("group still holds it: %s", p.Step)
	}
	c = content(g, answered(true), deleted, beingDeleted)
	p := DecideContent(c, nil, now)
	if p.Step != Delete || p.Delete.GroupSnapshotId != "gsh" || !slices.Equal(p.Delete.SnapshotIds, []string{"snap-0", "snap-1"}) {
		t.Errorf("delete: %+v", p)
	}
	// Answered, yet the mark stayed (the unmark after the status write
	// was lost): the mark goes, and the delete follows (soak seed 840694
	// held a group, its content and its members for ever).
	c = content(g, answered(true), deleted, beingDeleted, marked)
	if p := DecideContent(c, nil, now); p.Step != UnmarkCreating {
		t.Errorf("answered and marked: %s", p.Step)
	}
	c = content(g, answered(false), deleted, marked)
	if p := DecideContent(c, nil, now); p.Step != UnmarkCreating {
		t.Errorf("answered not ready, marked, group holds it: %s", p.Step)
	}
	// Deleted while a create may still run and nothing answered yet: the
	// create is asked again to settle it (soak seed 827214 held the group
	// for ever by waiting), then deleted or let go by the answer.
	cls := class("grp-class", true, nil)
	c = content(g, deleted, beingDeleted, marked)
	if p := DecideContent(c, cls, now); p.Step != Create || p.Create == nil {
		t.Errorf("create in flight, no answer: %+v", p)
	}
	if p := DecideContent(c, nil, now); p.Step != Idle || p.Err == nil {
		t.Errorf("create in flight, class gone: %+v", p)
	}
	c = content(g, deleted, beingDeleted)
	if p := DecideContent(c, cls, now); p.Step != RemoveContentFinalizer {
		t.Errorf("no create made, deleted: %s", p.Step)
	}
	c = content(g, answered(true), deleted, beingDeleted, func(c *vgsv1.VolumeGroupSnapshotContent) {
		c.Spec.DeletionPolicy = snapv1.VolumeSnapshotContentRetain
	})
	if p := DecideContent(c, nil, now); p.Step != RemoveContentFinalizer {
		t.Errorf("retain: %s", p.Step)
	}
	// Pre-provisioned, never bound: deleted with its handles.
	s := staticContent(ns, "grp", "")
	s.Spec.DeletionPolicy = snapv1.VolumeSnapshotContentDelete
	s.DeletionTimestamp = &metav1.Time{Time: now}
	s.Status = &vgsv1.VolumeGroupSnapshotContentStatus{VolumeGroupSnapshotHandle: ptr("gsh")}
	if p := DecideContent(s, nil, now); p.Step != Delete || !slices.Equal(p.Delete.SnapshotIds, []string{"s0", "s1"}) {
		t.Errorf("static: %+v", p)
	}
}

func TestDecideContentPreProvisioned(t *testing.T) {
	s := staticContent(ns, "grp", "g-uid")
	p := DecideContent(s, nil, now)
	if p.Step != Get || p.Get.GroupSnapshotId != "gsh" || !slices.Equal(p.Get.SnapshotIds, []string{"s0", "s1"}) {
		t.Fatalf("get: %+v", p)
	}
	st, _ := AfterGet(s, &csi.VolumeGroupSnapshot{GroupSnapshotId: "gsh", ReadyToUse: true}, nil, now)
	if !*st.ReadyToUse || *st.VolumeGroupSnapshotHandle != "gsh" || !st.CreationTime.Time.Equal(now) {
		t.Errorf("status %+v", st)
	}
}

func TestSecretRef(t *testing.T) {
	g := group()
	params := map[string]string{snapshotapi.GroupSecretNameParameter: "${volumegroupsnapshot.name}-${volumegroupsnapshotcontent.name}",
		snapshotapi.GroupSecretNamespaceParameter: "${volumegroupsnapshot.namespace}"}
	ref, err := SecretRef(params, snapshotapi.GroupSecretNameParameter, snapshotapi.GroupSecretNamespaceParameter, "c", g)
	if err != nil || ref.Name != "grp-c" || ref.Namespace != ns {
		t.Errorf("%+v %v", ref, err)
	}
	// The namespace may not use the group's name (the user's choice).
	params[snapshotapi.GroupSecretNamespaceParameter] = "${volumegroupsnapshot.name}"
	if _, err := SecretRef(params, snapshotapi.GroupSecretNameParameter, snapshotapi.GroupSecretNamespaceParameter, "c", g); err == nil {
		t.Error("namespace from the group's name accepted")
	}
	delete(params, snapshotapi.GroupSecretNamespaceParameter)
	if _, err := SecretRef(params, snapshotapi.GroupSecretNameParameter, snapshotapi.GroupSecretNamespaceParameter, "c", g); err == nil {
		t.Error("half a reference accepted")
	}
	if ref, err := SecretRef(nil, snapshotapi.GroupSecretNameParameter, snapshotapi.GroupSecretNamespaceParameter, "c", g); ref != nil || err != nil {
		t.Errorf("none: %v %v", ref, err)
	}
}

// The same refusal twice: the second leaves the status as the first
// wrote it (never nil, which the loop would write back, clearing the
// error).
func TestCreateRefusedAgainKeepsTheStatus(t *testing.T) {
	c := content(group())
	now := time.Unix(100, 0)
	first := CreateRefused(c, errors.New("no served endpoint"), now)
	if first.Step != FailContent || first.Status == nil || first.Status.Error == nil || len(first.Events) != 1 {
		t.Fatalf("first refusal: %+v", first)
	}
	c.Status = first.Status
	again := CreateRefused(c, errors.New("no served endpoint"), now.Add(time.Second))
	if again.Step != Idle || again.Err == nil || len(again.Events) != 0 {
		t.Fatalf("the same refusal again: %+v", again)
	}
	if again.Status == nil || *again.Status.Error.Message != *first.Status.Error.Message || !again.Status.Error.Time.Equal(first.Status.Error.Time) {
		t.Fatalf("the same refusal again changed the status to %+v", again.Status)
	}
}
