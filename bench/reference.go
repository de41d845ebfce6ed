package bench

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	kcmapp "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	kcmoptions "k8s.io/kubernetes/cmd/kube-controller-manager/app/options"
	"k8s.io/kubernetes/pkg/controller/volume/persistentvolume"
)

// ReferenceUserAgent is the User-Agent of the reference binder's requests;
// its informers' requests carry ReferenceUserAgent + "/shared-informers".
const ReferenceUserAgent = "reference-persistentvolume-binder"

// referenceResync is the informers' resync period: kube-controller-manager's
// default --min-resync-period (it picks between 1x and 2x of it at random),
// far longer than any bench run.
const referenceResync = 12 * time.Hour

// ReferenceConfig is how the reference binder reaches the API server.
type ReferenceConfig struct {
	Kubeconfig string
	// QPS and Burst limit the client side, as kube-controller-manager's
	// --kube-api-qps and --kube-api-burst; QPS <= 0 means unthrottled.
	QPS   float32
	Burst int
	// Ready, if set, is called once the informers' caches are synced.
	Ready func()
}

// RunReferenceBinder runs kube-controller-manager's PersistentVolumeController
// (persistentvolume-binder) until ctx ends, then returns nil. It is set up
// as kube-controller-manager sets it up: its default component
// configuration (sync period 15s, dynamic provisioning on), the volume
// plugins it probes for this loop, and shared informers started once the
// controller is built. Logs go through klog, whose process-wide settings
// are left to the caller.
func RunReferenceBinder(ctx context.Context, cfg ReferenceConfig) error {
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	rc = referenceREST(rc, cfg)
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("binder client: %w", err)
	}
	// Like kube-controller-manager, the informers have a client (and so a
	// client-side rate limiter) of their own.
	irc := rest.CopyConfig(rc)
	irc.UserAgent += "/shared-informers"
	informerClient, err := kubernetes.NewForConfig(irc)
	if err != nil {
		return fmt.Errorf("informer client: %w", err)
	}

	defaults, err := kcmoptions.NewDefaultComponentConfig()
	if err != nil {
		return fmt.Errorf("kube-controller-manager defaults: %w", err)
	}
	binder := defaults.PersistentVolumeBinderController
	logger := klog.FromContext(ctx)
	plugins, err := kcmapp.ProbeProvisionableRecyclableVolumePlugins(logger, binder.VolumeConfiguration)
	if err != nil {
		return fmt.Errorf("probe volume plugins: %w", err)
	}

	factory := informers.NewSharedInformerFactory(informerClient, referenceResync)
	ctrl, err := persistentvolume.NewController(ctx, persistentvolume.ControllerParameters{
		KubeClient:                client,
		SyncPeriod:                binder.PVClaimBinderSyncPeriod.Duration,
		VolumePlugins:             plugins,
		VolumeInformer:            factory.Core().V1().PersistentVolumes(),
		ClaimInformer:             factory.Core().V1().PersistentVolumeClaims(),
		ClassInformer:             factory.Storage().V1().StorageClasses(),
		PodInformer:               factory.Core().V1().Pods(),
		NodeInformer:              factory.Core().V1().Nodes(),
		EnableDynamicProvisioning: binder.VolumeConfiguration.EnableDynamicProvisioning,
	})
	if err != nil {
		return fmt.Errorf("build persistentvolume controller: %w", err)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if cfg.Ready != nil {
		go func() {
			for _, synced := range factory.WaitForCacheSync(ctx.Done()) {
				if !synced {
					return
				}
			}
			cfg.Ready()
		}()
	}
	ctrl.Run(ctx) // returns once ctx ends and its workers stopped
	return nil
}

// referenceREST is rc as kube-controller-manager configures its clients:
// protobuf, limited to cfg's QPS and burst (or unthrottled).
func referenceREST(rc *rest.Config, cfg ReferenceConfig) *rest.Config {
	rc = rest.CopyConfig(rc)
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	rc.UserAgent = ReferenceUserAgent
	rc.QPS, rc.Burst = cfg.QPS, cfg.Burst
	if cfg.QPS <= 0 {
		rc.QPS = -1
	}
	return rc
}
