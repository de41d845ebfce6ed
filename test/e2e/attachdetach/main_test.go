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

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/controller/attachdetach"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// unmountWait replaces the reference's 6 minutes.
const unmountWait = 4 * time.Second

// bed is the package's test bed.
var bed struct {
	registry *prometheus.Registry
	loop     *stacktest.LoopRun
}

func TestMain(m *testing.M) {
	support.Main(m, 2, setUp)
}

func setUp(cp *cluster.ControlPlane) (func(), error) {
	bed.registry = prometheus.NewRegistry()
	var err error
	bed.loop, err = stacktest.RunLoop(cp, 0, func(d stacktest.LoopDeps) (interface{ Run(context.Context) error }, error) {
		return attachdetach.New(attachdetach.Config{
			Client: d.Client, Informers: d.Informers, Metrics: bed.registry,
			Recorder: d.Recorder(attachment.EventComponent),
			Workers:  2, ResyncPeriod: 2 * time.Second, MaxWaitForUnmount: unmountWait,
		})
	})
	if err != nil {
		return nil, err
	}
	return bed.loop.Stop, nil
}
