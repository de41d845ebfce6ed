// Command volplane-reference-attacher runs external-attacher v4.13.0's
// controller (cmd/csi-attacher's wiring, its default flags, no leader
// election) for `volplane bench --scenario attach --compare`, which execs
// and measures it as the reference attacher.
//
// It is a binary of its own, not a `volplane bench` subcommand: the
// external-attacher registers the feature gate MutableCSINodeAllocatableCount
// in the process-wide gate with a spec other than k8s.io/kubernetes'
// (which the volplane binary links for its embedded control plane), and
// the second registration panics as the process starts.
package main

import (
	"context"
	"fmt"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-lib-utils/connection"
	csimetrics "github.com/kubernetes-csi/csi-lib-utils/metrics"
	csirpc "github.com/kubernetes-csi/csi-lib-utils/rpc"
	"github.com/kubernetes-csi/external-attacher/v4/pkg/attacher"
	"github.com/kubernetes-csi/external-attacher/v4/pkg/controller"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/util/workqueue"
	csitrans "k8s.io/csi-translation-lib"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/bench/refproc"
)

func main() { refproc.Run("volplane-reference-attacher", "csi-attacher", run) }

// The defaults of external-attacher v4.13.0's main (cmd/csi-attacher), the
// flags a deployment leaves alone.
const (
	attacherResync        = 10 * time.Minute
	attacherTimeout       = 15 * time.Second
	attacherRetryStart    = time.Second
	attacherRetryMax      = 5 * time.Minute
	attacherWorkers       = 10
	attacherMaxEntries    = 0
	attacherReconcileSync = time.Minute
	attacherCSITimeout    = time.Second
)

// run runs external-attacher's controller for the
// driver at cfg.CSIEndpoint as its main wires it (no leader election, its
// default flags), until ctx ends.
func run(ctx context.Context, cfg refproc.Config) error {
	client, err := refproc.Client(cfg, "reference-csi-attacher")
	if err != nil {
		return err
	}
	conn, err := connection.Connect(ctx, cfg.CSIEndpoint, csimetrics.NewCSIMetricsManager(""),
		connection.OnConnectionLoss(connection.ExitOnConnectionLoss()))
	if err != nil {
		return fmt.Errorf("connecting to the CSI driver: %w", err)
	}
	defer conn.Close()
	if err := csirpc.ProbeForever(ctx, conn, attacherTimeout); err != nil {
		return fmt.Errorf("waiting for the CSI driver: %w", err)
	}
	tctx, cancel := context.WithTimeout(ctx, attacherCSITimeout)
	defer cancel()
	driver, err := csirpc.GetDriverName(tctx, conn)
	if err != nil {
		return fmt.Errorf("CSI driver name: %w", err)
	}
	caps, err := csirpc.GetControllerCapabilities(tctx, conn)
	if err != nil {
		return fmt.Errorf("CSI controller capabilities: %w", err)
	}
	if !caps[csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME] {
		return fmt.Errorf("CSI driver %s does not support ControllerPublishVolume", driver)
	}
	reconcile := caps[csi.ControllerServiceCapability_RPC_LIST_VOLUMES] && caps[csi.ControllerServiceCapability_RPC_LIST_VOLUMES_PUBLISHED_NODES]
	factory := informers.NewSharedInformerFactory(client, attacherResync)
	timeout := attacherTimeout
	handler := controller.NewCSIHandler(client, driver, attacher.NewAttacher(conn),
		attacher.NewVolumeLister(conn, attacherMaxEntries),
		factory.Core().V1().PersistentVolumes().Lister(),
		factory.Storage().V1().CSINodes().Lister(),
		factory.Storage().V1().VolumeAttachments().Lister(),
		&timeout,
		caps[csi.ControllerServiceCapability_RPC_PUBLISH_READONLY],
		caps[csi.ControllerServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER],
		csitrans.New(), "")
	limiter := func() workqueue.TypedRateLimiter[string] {
		return workqueue.NewTypedItemExponentialFailureRateLimiter[string](attacherRetryStart, attacherRetryMax)
	}
	ctrl := controller.NewCSIAttachController(klog.FromContext(ctx), client, driver, handler,
		factory.Storage().V1().VolumeAttachments(), factory.Core().V1().PersistentVolumes(),
		limiter(), limiter(), reconcile, attacherReconcileSync)
	refproc.Start(ctx, factory, cfg.Ready)
	defer factory.Shutdown()
	ctrl.Run(ctx, attacherWorkers, nil)
	return nil
}
