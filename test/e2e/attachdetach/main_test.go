// Package attachdetach runs the attachdetach loop alone against the
// embedded, real kube-apiserver. The tests play the other parties: the
// attacher (they set a VolumeAttachment's status.attached or attachError)
// and the kubelet (they set node.status.volumesInUse). Claims and volumes
// are made bound by hand, so no binder runs. The unmount wait is shortened
// to unmountWait.
//
// Tests run one at a time, each in its own namespace, with their own
// driver name so that no two see each other's volumes.
package attachdetach

import (
	"context"
	"time"

	"testing"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/controller/attachdetach"
	"github.com/volplane/volplane/test/e2e/support"
)

// unmountWait replaces the reference's 6 minutes.
const unmountWait = 4 * time.Second

// bed is the package's test bed.
var bed struct {
	registry *prometheus.Registry
	// ended receives what the loop's Run returned.
	ended chan error
}

func TestMain(m *testing.M) {
	support.Main(m, 2, setUp)
}

func setUp(cp *cluster.ControlPlane) (func(), error) {
	ctx, cancel := context.WithCancel(context.Background())
	events := record.NewBroadcaster(record.WithContext(ctx))
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cp.Client.CoreV1().Events("")})
	factory := informers.NewSharedInformerFactory(cp.Client, 0)
	bed.registry = prometheus.NewRegistry()
	c, err := attachdetach.New(attachdetach.Config{
		Client: cp.Client, Informers: factory, Metrics: bed.registry,
		Recorder: events.NewRecorder(scheme.Scheme, v1.EventSource{Component: attachment.EventComponent}),
		Workers:  2, ResyncPeriod: 2 * time.Second, MaxWaitForUnmount: unmountWait,
	})
	if err != nil {
		cancel()
		return nil, err
	}
	bed.ended = make(chan error, 1)
	go func() { bed.ended <- c.Run(ctx) }()
	factory.Start(ctx.Done())
	return func() {
		cancel()
		<-bed.ended
		factory.Shutdown()
		events.Shutdown()
	}, nil
}
