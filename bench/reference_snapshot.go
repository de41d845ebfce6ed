package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-lib-utils/connection"
	csimetrics "github.com/kubernetes-csi/csi-lib-utils/metrics"
	csirpc "github.com/kubernetes-csi/csi-lib-utils/rpc"
	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	snapscheme "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/scheme"
	snapinformers "github.com/kubernetes-csi/external-snapshotter/client/v8/informers/externalversions"
	common "github.com/kubernetes-csi/external-snapshotter/v8/pkg/common-controller"
	"github.com/kubernetes-csi/external-snapshotter/v8/pkg/features"
	snapmetrics "github.com/kubernetes-csi/external-snapshotter/v8/pkg/metrics"
	sidecar "github.com/kubernetes-csi/external-snapshotter/v8/pkg/sidecar-controller"
	"github.com/kubernetes-csi/external-snapshotter/v8/pkg/snapshotter"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	coreinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"

	"github.com/volplane/volplane/bench/refproc"
)

// Ready lines of the reference snapshot processes, printed once their
// informers' caches are synced. Every reference process's ready line ends
// in readySuffix.
const (
	ReadySnapshotController = "reference snapshot-controller" + readySuffix
	ReadyCSISnapshotter     = "reference csi-snapshotter" + readySuffix
	readySuffix             = refproc.ReadySuffix
)

// The defaults of external-snapshotter v8.6.0's two mains
// (cmd/snapshot-controller, cmd/csi-snapshotter), the flags a deployment
// leaves alone.
const (
	snapshotterWorkers       = 10
	snapshotterResync        = 15 * time.Minute
	snapshotterRetryStart    = time.Second
	snapshotterRetryMax      = 5 * time.Minute
	snapshotterCSITimeout    = time.Minute
	snapshotterNamePrefix    = "snapshot"
	snapshotterUUIDLength    = -1
	groupSnapshotNamePrefix  = "groupsnapshot"
	snapshotterExtraMetadata = false
	// Both mains default to --kube-api-qps 5 --kube-api-burst 10.
	SnapshotterQPS   = 5
	SnapshotterBurst = 10
)

// ReferenceSnapshotConfig is how a reference snapshot process reaches the
// API server (and, for the csi-snapshotter, its driver): the reference
// sidecars' config.
type ReferenceSnapshotConfig = refproc.Config

// snapshotREST is the kubeconfig's config with the mains' limits: the
// snapshot clientset speaks JSON, the core one protobuf.
func snapshotREST(cfg ReferenceSnapshotConfig, agent string) (snap, core *rest.Config, err error) {
	rc, err := refproc.REST(cfg, agent)
	if err != nil {
		return nil, nil, err
	}
	return rc, refproc.Protobuf(rc), nil
}

// groupSnapshotsEnabled is the VolumeGroupSnapshot feature gate at its
// default, as both mains read it.
func groupSnapshotsEnabled() bool {
	return utilfeature.DefaultFeatureGate.Enabled(features.VolumeGroupSnapshot)
}

// referenceSnapshotClients are the clients and informer factories both
// external-snapshotter processes build in their mains, under userAgent.
func referenceSnapshotClients(cfg ReferenceSnapshotConfig, userAgent string) (kubernetes.Interface, snapclient.Interface,
	snapinformers.SharedInformerFactory, coreinformers.SharedInformerFactory, error) {
	rc, core, err := snapshotREST(cfg, userAgent)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	kubeClient, err := kubernetes.NewForConfig(core)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	snapClient, err := snapclient.NewForConfig(rc)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if err := snapscheme.AddToScheme(scheme.Scheme); err != nil {
		return nil, nil, nil, nil, err
	}
	return kubeClient, snapClient, snapinformers.NewSharedInformerFactory(snapClient, snapshotterResync),
		coreinformers.NewSharedInformerFactory(kubeClient, snapshotterResync), nil
}

// RunReferenceSnapshotController runs external-snapshotter's common
// controller (snapshot-controller) as its main wires it, with its default
// flags, until ctx ends.
func RunReferenceSnapshotController(ctx context.Context, cfg ReferenceSnapshotConfig) error {
	kubeClient, snapClient, factory, coreFactory, err := referenceSnapshotClients(cfg, "reference-snapshot-controller")
	if err != nil {
		return err
	}
	limiter := func() workqueue.TypedRateLimiter[string] {
		return workqueue.NewTypedItemExponentialFailureRateLimiter[string](snapshotterRetryStart, snapshotterRetryMax)
	}
	ctrl := common.NewCSISnapshotCommonController(
		snapClient, kubeClient,
		factory.Snapshot().V1().VolumeSnapshots(),
		factory.Snapshot().V1().VolumeSnapshotContents(),
		factory.Snapshot().V1().VolumeSnapshotClasses(),
		factory.Groupsnapshot().V1().VolumeGroupSnapshots(),
		factory.Groupsnapshot().V1().VolumeGroupSnapshotContents(),
		factory.Groupsnapshot().V1().VolumeGroupSnapshotClasses(),
		coreFactory.Core().V1().PersistentVolumeClaims(),
		coreFactory.Core().V1().PersistentVolumes(),
		nil, // no distributed snapshotting: no node informer
		snapmetrics.NewMetricsManager(),
		snapshotterResync,
		limiter(), limiter(), limiter(), limiter(),
		false, // --enable-distributed-snapshotting
		true,  // --prevent-volume-mode-conversion
		groupSnapshotsEnabled(),
	)
	factory.Start(ctx.Done())
	coreFactory.Start(ctx.Done())
	defer factory.Shutdown()
	defer coreFactory.Shutdown()
	go readyOnSync(ctx, cfg.Ready, factory.WaitForCacheSync, coreFactory.WaitForCacheSync)
	ctrl.Run(snapshotterWorkers, ctx.Done(), nil)
	return nil
}

// RunReferenceCSISnapshotter runs external-snapshotter's sidecar controller
// (csi-snapshotter) for the driver at cfg.CSIEndpoint, as its main wires it,
// with its default flags, until ctx ends.
func RunReferenceCSISnapshotter(ctx context.Context, cfg ReferenceSnapshotConfig) error {
	if cfg.CSIEndpoint == "" {
		return errors.New("no CSI endpoint")
	}
	kubeClient, snapClient, factory, coreFactory, err := referenceSnapshotClients(cfg, "reference-csi-snapshotter")
	if err != nil {
		return err
	}
	conn, err := connection.Connect(ctx, cfg.CSIEndpoint, csimetrics.NewCSIMetricsManager(""),
		connection.OnConnectionLoss(connection.ExitOnConnectionLoss()))
	if err != nil {
		return fmt.Errorf("connecting to the CSI driver: %w", err)
	}
	defer conn.Close()
	tctx, cancel := context.WithTimeout(ctx, snapshotterCSITimeout)
	defer cancel()
	driver, err := csirpc.GetDriverName(tctx, conn)
	if err != nil {
		return fmt.Errorf("CSI driver name: %w", err)
	}
	if err := csirpc.ProbeForever(ctx, conn, snapshotterCSITimeout); err != nil {
		return fmt.Errorf("waiting for the CSI driver: %w", err)
	}
	caps, err := csirpc.GetControllerCapabilities(tctx, conn)
	if err != nil {
		return fmt.Errorf("CSI controller capabilities: %w", err)
	}
	if !caps[csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT] {
		return fmt.Errorf("CSI driver %s does not support ControllerCreateSnapshot", driver)
	}
	limiter := func() workqueue.TypedRateLimiter[string] {
		return workqueue.NewTypedItemExponentialFailureRateLimiter[string](snapshotterRetryStart, snapshotterRetryMax)
	}
	ctrl := sidecar.NewCSISnapshotSideCarController(
		snapClient, kubeClient, driver,
		factory.Snapshot().V1().VolumeSnapshotContents(),
		factory.Snapshot().V1().VolumeSnapshotClasses(),
		snapshotter.NewSnapshotter(conn),
		nil, // the group snapshotter exists only with the feature gate on
		snapshotterCSITimeout, snapshotterResync,
		snapshotterNamePrefix, snapshotterUUIDLength,
		groupSnapshotNamePrefix, snapshotterUUIDLength,
		snapshotterExtraMetadata,
		limiter(),
		groupSnapshotsEnabled(),
		factory.Groupsnapshot().V1().VolumeGroupSnapshotContents(),
		factory.Groupsnapshot().V1().VolumeGroupSnapshotClasses(),
		limiter(),
	)
	factory.Start(ctx.Done())
	coreFactory.Start(ctx.Done())
	defer factory.Shutdown()
	defer coreFactory.Shutdown()
	go readyOnSync(ctx, cfg.Ready, factory.WaitForCacheSync, coreFactory.WaitForCacheSync)
	ctrl.Run(snapshotterWorkers, ctx.Done(), nil)
	return nil
}

// readyOnSync calls ready once every factory's started informers synced.
func readyOnSync[T comparable](ctx context.Context, ready func(), waits ...func(<-chan struct{}) map[T]bool) {
	if ready == nil {
		return
	}
	for _, wait := range waits {
		for _, synced := range wait(ctx.Done()) {
			if !synced {
				return
			}
		}
	}
	ready()
}
