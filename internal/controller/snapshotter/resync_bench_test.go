package snapshotter

import (
	"context"
	"fmt"
	"testing"

	snapfake "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/fake"
	snapinformers "github.com/kubernetes-csi/external-snapshotter/client/v8/informers/externalversions"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/volplane/volplane/internal/csi"
)

// BenchmarkResyncAtRest is one resync pass over n contents, all ready and
// at rest, as their handlers saw them: what every resync period costs a
// cluster whose snapshots are done.
//
//	go test ./internal/controller/snapshotter -run '^$' -bench ResyncAtRest
func BenchmarkResyncAtRest(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			sf := snapinformers.NewSharedInformerFactory(snapfake.NewSimpleClientset(), 0)
			c, err := New(Config{Client: fake.NewClientset(), Snapshots: snapfake.NewSimpleClientset(),
				Informers: informers.NewSharedInformerFactory(fake.NewClientset(), 0), SnapshotInformers: sf,
				Pool:     csi.NewPool(&csi.Endpoint{Info: csi.Info{Driver: "d", Controller: true, Snapshot: true, ListSnapshots: true}}),
				Recorder: func(string) record.EventRecorder { return record.NewFakeRecorder(1) }})
			if err != nil {
				b.Fatal(err)
			}
			contents := sf.Snapshot().V1().VolumeSnapshotContents().Informer().GetIndexer()
			for i := range n {
				content := readyContent(fmt.Sprintf("snapcontent-%06d", i))
				if err := contents.Add(content); err != nil {
					b.Fatal(err)
				}
				c.onContent(content)
				k, _ := c.q.Get()
				c.q.Done(k)
			}
			for b.Loop() {
				c.resync(context.Background())
			}
			if c.q.Len() != 0 {
				b.Fatalf("the resync queued %d contents at rest", c.q.Len())
			}
		})
	}
}
