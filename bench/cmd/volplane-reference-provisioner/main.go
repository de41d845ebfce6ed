// Command volplane-reference-provisioner runs external-provisioner
// v6.4.0's provisioner (cmd/csi-provisioner's wiring: its CSI provisioner
// in sig-storage-lib-external-provisioner's ProvisionController, the
// cloning protection controller and, when the API server serves
// VolumeSnapshots, the snapshot finalizer sweep; its default flags, no
// leader election) for `volplane bench --scenario dynamic --compare`, which
// execs and measures it as the reference provisioner.
//
// It is a binary of its own, not a `volplane bench` subcommand: the
// external-provisioner registers the feature gate VolumeAttributesClass in
// the process-wide gate with a spec other than k8s.io/kubernetes' (which
// the volplane binary links for its embedded control plane), and the
// second registration panics as the process starts.
package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	csimetrics "github.com/kubernetes-csi/csi-lib-utils/metrics"
	ctrl "github.com/kubernetes-csi/external-provisioner/v6/pkg/controller"
	"github.com/kubernetes-csi/external-provisioner/v6/pkg/features"
	snapclientset "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/util/workqueue"
	csitrans "k8s.io/csi-translation-lib"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"

	"github.com/volplane/volplane/bench/refproc"
)

func main() { refproc.Run("volplane-reference-provisioner", "csi-provisioner", run) }

// The defaults of external-provisioner v6.4.0's main (cmd/csi-provisioner),
// the flags a deployment leaves alone (its deploy/kubernetes sidecar sets
// only the CSI address, leader election and the HTTP endpoint).
const (
	provisionerPrefix          = "pvc"
	provisionerUUIDLength      = -1
	provisionerRetryStart      = time.Second
	provisionerRetryMax        = 5 * time.Minute
	provisionerWorkers         = 100
	provisionerCloneWorkers    = 1
	provisionerSnapshotSweep   = 5 * time.Minute
	provisionerTimeout         = 10 * time.Second
	provisionerStrictTopology  = false
	provisionerImmediateTopo   = true
	provisionerExtraMetadata   = false
	provisionerDefaultFSType   = ""
	provisionerPublishReadOnly = false
	provisionerPreventModeConv = true
)

// run runs the external-provisioner's controllers for the driver at
// cfg.CSIEndpoint as its main wires them (no leader election, no node
// deployment, no capacity publishing: its default flags), until ctx ends.
func run(ctx context.Context, cfg refproc.Config) error {
	client, err := refproc.Client(cfg, "reference-csi-provisioner")
	if err != nil {
		return err
	}
	// As its main does when the gate is not set: VolumeAttributesClass only
	// if the API server serves it at v1.
	if enabled, err := features.IsVolumeAttributesClassV1Enabled(client.Discovery()); err == nil && !enabled {
		if err := utilfeature.DefaultMutableFeatureGate.Set(string(features.VolumeAttributesClass) + "=false"); err != nil {
			return err
		}
	}
	// Its snapshot client speaks JSON, as its main builds it.
	rc, err := refproc.REST(cfg, "reference-csi-provisioner")
	if err != nil {
		return err
	}
	snapClient, err := snapclientset.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("snapshot client: %w", err)
	}

	conn, err := ctrl.Connect(ctx, cfg.CSIEndpoint, csimetrics.NewCSIMetricsManagerWithOptions("",
		csimetrics.WithProcessStartTime(false), csimetrics.WithSubsystem(csimetrics.SubsystemSidecar)))
	if err != nil {
		return fmt.Errorf("connecting to the CSI driver: %w", err)
	}
	defer conn.Close()
	if err := ctrl.Probe(ctx, conn, provisionerTimeout); err != nil {
		return fmt.Errorf("probing the CSI driver: %w", err)
	}
	driver, err := ctrl.GetDriverName(conn, provisionerTimeout)
	if err != nil {
		return fmt.Errorf("CSI driver name: %w", err)
	}
	translator := csitrans.New()
	if translator.IsMigratedCSIDriverByName(driver) {
		return fmt.Errorf("CSI driver %s replaces an in-tree plugin: not wired here", driver)
	}
	pluginCaps, controllerCaps, err := ctrl.GetDriverCapabilities(conn, provisionerTimeout)
	if err != nil {
		return fmt.Errorf("CSI driver capabilities: %w", err)
	}
	identity := strconv.FormatInt(time.Now().UnixMilli(), 10) + "-" + strconv.Itoa(rand.IntN(10000)) + "-" + driver

	factory := informers.NewSharedInformerFactory(client, ctrl.ResyncPeriodOfCsiNodeInformer)
	scLister := factory.Storage().V1().StorageClasses().Lister()
	claimLister := factory.Core().V1().PersistentVolumeClaims().Lister()
	var vaLister storagelisters.VolumeAttachmentLister
	if controllerCaps[csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME] {
		vaLister = factory.Storage().V1().VolumeAttachments().Lister()
	}
	var (
		nodeLister    corelisters.NodeLister
		csiNodeLister storagelisters.CSINodeLister
		pvcNodeStore  *ctrl.InMemoryStore
	)
	if ctrl.SupportsTopology(pluginCaps) {
		csiNodeLister = factory.Storage().V1().CSINodes().Lister()
		nodeLister = factory.Core().V1().Nodes().Lister()
		pvcNodeStore = ctrl.NewInMemoryStore()
	}

	claimInformer := factory.Core().V1().PersistentVolumeClaims().Informer()
	options := []func(*controller.ProvisionController) error{
		controller.LeaderElection(false),
		controller.FailedProvisionThreshold(0),
		controller.FailedDeleteThreshold(0),
		controller.RateLimiter(workqueue.NewTypedItemExponentialFailureRateLimiter[string](provisionerRetryStart, provisionerRetryMax)),
		controller.Threadiness(provisionerWorkers),
		controller.CreateProvisionedPVLimiter(workqueue.DefaultTypedControllerRateLimiter[string]()),
		controller.ClaimsInformer(claimInformer),
		controller.RetryIntervalMax(provisionerRetryMax),
		controller.AddFinalizer(true),
	}
	provisioner := ctrl.NewCSIProvisioner(client, provisionerTimeout, identity, provisionerPrefix, provisionerUUIDLength,
		conn, snapClient, driver, pluginCaps, controllerCaps, "", provisionerStrictTopology, provisionerImmediateTopo,
		translator, scLister, csiNodeLister, nodeLister, claimLister, vaLister, nil, provisionerExtraMetadata,
		provisionerDefaultFSType, nil, provisionerPublishReadOnly, provisionerPreventModeConv, pvcNodeStore)
	pc := controller.NewProvisionController(ctx, client, driver, provisioner, options...)

	claimQueue := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](provisionerRetryStart, provisionerRetryMax),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "claims"})
	cloning := ctrl.NewCloningProtectionController(client, claimLister, claimInformer, claimQueue, controllerCaps)
	var sweep *ctrl.SnapshotFinalizerController
	if ok, err := features.IsVolumeSnapshotV1Available(client.Discovery()); err == nil && ok {
		sweep = ctrl.NewSnapshotFinalizerController(snapClient, claimLister, controllerCaps, provisionerSnapshotSweep)
	}

	refproc.Start(ctx, factory, cfg.Ready)
	defer factory.Shutdown()
	go cloning.Run(ctx, provisionerCloneWorkers, nil)
	if sweep != nil {
		go sweep.Run(ctx, nil)
	}
	pc.Run(ctx) // returns once ctx ends
	return nil
}
