package capacity

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/bundle"
	capacitycore "github.com/volplane/volplane/internal/capacity"
	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/stacktest"
)

// restartLoops starts the loops again with the capacity loop polling every
// poll (0: the default), and a fresh write log.
func restartLoops(t *testing.T, poll time.Duration) {
	t.Helper()
	if err := bed.stack.StopLoops(); err != nil {
		t.Fatal(err)
	}
	bed.poll = poll
	bed.stack.StartLoops()
}

// capacityWrites are the loops' writes of CSIStorageCapacity objects.
func capacityWrites() []string {
	var out []string
	for _, w := range bed.writes.All() {
		if strings.Contains(w, "/csistoragecapacities") {
			out = append(out, w)
		}
	}
	return out
}

// polled waits until the drivers were asked n more times than now.
func polled(t *testing.T, n int) {
	t.Helper()
	from := bed.calls.capacityCalls()
	stacktest.Eventually(t, fmt.Sprintf("%d more GetCapacity calls", n), func() string {
		if got := bed.calls.capacityCalls() - from; got < n {
			return fmt.Sprintf("%d so far", got)
		}
		return ""
	}, alive)
}

// The objects have the external-provisioner's shape: generateName csisc-,
// the driver and managed-by labels, the class, the node's segment as
// matchLabels, the driver's answer as capacity and maximumVolumeSize, and
// no owner in `up` (no pod to own them, as --capacity-ownerref-level=-1).
func TestObjectsHaveTheReferenceShape(t *testing.T) {
	ctx := t.Context()
	stacktest.Eventually(t, "every node's capacity published", published(ctx, waitClass, everyNode(nodeCapacity)), alive)
	got, err := objects(ctx, waitClass)
	if err != nil {
		t.Fatal(err)
	}
	for _, node := range bed.cp.Nodes {
		o := got[node]
		switch {
		case !strings.HasPrefix(o.Name, capacitycore.GenerateName) || o.GenerateName != capacitycore.GenerateName:
			t.Errorf("%s: name %q generateName %q", node, o.Name, o.GenerateName)
		case len(o.Labels) != 2 || o.Labels[capacitycore.DriverNameLabel] != hostpath.DriverName || o.Labels[capacitycore.ManagedByLabel] != "volplane":
			t.Errorf("%s: labels %v", node, o.Labels)
		case len(o.OwnerReferences) != 0:
			t.Errorf("%s: owners %v", node, o.OwnerReferences)
		case len(o.NodeTopology.MatchLabels) != 1 || len(o.NodeTopology.MatchExpressions) != 0:
			t.Errorf("%s: nodeTopology %v", node, o.NodeTopology)
		case o.MaximumVolumeSize == nil || o.MaximumVolumeSize.Value() != nodeCapacity:
			t.Errorf("%s: maximumVolumeSize %v", node, o.MaximumVolumeSize)
		}
	}
	immediate, err := objects(ctx, bundle.ImmediateClass)
	if err != nil || len(immediate) != 0 {
		t.Errorf("objects for the Immediate class: %v %v, want none (as the reference without --capacity-for-immediate-binding)", immediate, err)
	}
}

// Polls that find nothing changed write nothing; a volume made on a node
// updates that node's object once; objects of a class or a segment that
// goes are deleted, and come back with it.
func TestObjectsAreWrittenOnlyOnChange(t *testing.T) {
	ctx := t.Context()
	restartLoops(t, 100*time.Millisecond)
	t.Cleanup(func() { restartLoops(t, 0) })
	stacktest.Eventually(t, "every node's capacity published", published(ctx, waitClass, everyNode(nodeCapacity)), alive)
	// The loops may have published them since their restart (when this
	// test runs first): a round of polls lets those writes be logged.
	polled(t, len(bed.cp.Nodes))
	mark := len(capacityWrites())
	polled(t, 5*len(bed.cp.Nodes))
	if w := capacityWrites()[mark:]; len(w) != 0 {
		t.Fatalf("polls that found nothing changed wrote %q", w)
	}

	w := newWorkload(t)
	w.start("one", waitClass)
	w.running("one")
	node := w.node("one")
	want := everyNode(nodeCapacity)
	want[node] = nodeCapacity - 1<<30
	stacktest.Eventually(t, "the node's object counts the volume", published(ctx, waitClass, want), alive)
	polled(t, 5*len(bed.cp.Nodes))
	objs, err := objects(ctx, waitClass)
	if err != nil {
		t.Fatal(err)
	}
	if got := capacityWrites()[mark:]; len(got) != 1 || !strings.HasPrefix(got[0], "PUT ") || !strings.HasSuffix(got[0], "/"+objs[node].Name) {
		t.Errorf("capacity writes = %q, want only one update of %s's object %s", got, node, objs[node].Name)
	}

	w.removeAll()
	classGoes(t)
	segmentGoes(t)
}

// classGoes: a new WaitForFirstConsumer class of the driver gets an object
// per node; deleting the class deletes them.
func classGoes(t *testing.T) {
	ctx := context.Background()
	class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "cap-extra"}, Provisioner: hostpath.DriverName,
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)}
	if _, err := bed.cp.Client.StorageV1().StorageClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stacktest.Eventually(t, "an object per node for the new class", published(ctx, class.Name, everyNode(nodeCapacity)), alive)
	if err := bed.cp.Client.StorageV1().StorageClasses().Delete(ctx, class.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	stacktest.Eventually(t, "the class's objects deleted", published(ctx, class.Name, nil), alive)
}

// segmentGoes: a node that loses its topology label is no segment; its
// objects go, and come back with the label.
func segmentGoes(t *testing.T) {
	ctx := context.Background()
	node := bed.cp.Nodes[len(bed.cp.Nodes)-1]
	label := func(value *string) {
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, cluster.NodeTopologyKey)
		if value != nil {
			patch = fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, cluster.NodeTopologyKey, *value)
		}
		if _, err := bed.cp.Client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	objs, err := objects(ctx, waitClass)
	if err != nil || objs[node].Name == "" {
		t.Fatalf("objects before the label goes: %v %v", objs, err)
	}
	label(nil)
	t.Cleanup(func() { label(&node) })
	stacktest.Eventually(t, "the segment's objects deleted", func() string {
		got, err := objects(ctx, waitClass)
		if err != nil {
			return err.Error()
		}
		if _, ok := got[node]; ok {
			return "still published for " + node
		}
		return ""
	}, alive)
	// A write is logged when its answer reaches the loop, which may be
	// after the delete is seen here. Updates of the object's capacity
	// (volumes of other tests on that node) may come before it; one delete,
	// last, must.
	stacktest.Eventually(t, "the loop's delete of the segment's object logged", func() string {
		got := bed.writes.About(objs[node].Name)
		deletes := 0
		for _, w := range got {
			if strings.HasPrefix(w, "DELETE ") {
				deletes++
			}
		}
		if deletes != 1 || !strings.HasPrefix(got[len(got)-1], "DELETE ") {
			return fmt.Sprintf("writes of %s's object = %q, want one delete, last", node, got)
		}
		return ""
	}, alive)
	label(&node)
	stacktest.Eventually(t, "the segment's object back", published(ctx, waitClass, everyNode(nodeCapacity)), alive)
}
