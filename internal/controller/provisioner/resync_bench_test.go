package provisioner

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/hostpath/hostpathtest"
)

// BenchmarkResyncOfQueuedClaims is one resync pass over n unsettled claims
// of a served class, all still waiting in the claims queue (a burst of
// claims the workers have not reached): what every resync period cost while
// the backlog lasted.
//
//	go test ./internal/controller/provisioner -run '^$' -bench ResyncOfQueued
func BenchmarkResyncOfQueuedClaims(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			pool, err := csi.DialPool(ctx, []string{hostpathtest.Serve(b, "a", 1<<30)}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer pool.Close()
			factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
			c, err := New(Config{Client: fake.NewClientset(), Informers: factory, Pool: pool,
				Recorder: func(string) record.EventRecorder { return record.NewFakeRecorder(1) }})
			if err != nil {
				b.Fatal(err)
			}
			if err := factory.Storage().V1().StorageClasses().Informer().GetIndexer().Add(class()); err != nil {
				b.Fatal(err)
			}
			claims := factory.Core().V1().PersistentVolumeClaims().Informer().GetIndexer()
			for i := range n {
				cl := claim(func(c *v1.PersistentVolumeClaim) {
					c.Name, c.UID = fmt.Sprintf("c-%06d", i), types.UID(fmt.Sprintf("uid-%06d", i))
				})
				if err := claims.Add(cl); err != nil {
					b.Fatal(err)
				}
				key := cl.Namespace + "/" + cl.Name
				c.memory.unsettledClaims.Saw(key, false)
				c.queues.claims.Add(key)
			}
			b.ResetTimer()
			for b.Loop() {
				c.resyncPending(ctx)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/claim")
		})
	}
}
