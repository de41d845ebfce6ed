// Command volplane-reference-resizer runs external-resizer v2.3.0's
// controllers (cmd/csi-resizer's wiring: the resize controller and, when
// the driver can modify volumes and the VolumeAttributesClass API is
// served, the modify controller; its default flags, no leader election)
// for `volplane bench --scenario expand --compare`, which execs and
// measures it as the reference resizer.
//
// It is a binary of its own, not a `volplane bench` subcommand: the
// external-resizer registers the feature gate VolumeAttributesClass in the
// process-wide gate with a spec other than k8s.io/kubernetes' (which the
// volplane binary links for its embedded control plane), and the second
// registration panics as the process starts.
package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	csimetrics "github.com/kubernetes-csi/csi-lib-utils/metrics"
	"github.com/kubernetes-csi/external-resizer/v2/pkg/controller"
	resizercsi "github.com/kubernetes-csi/external-resizer/v2/pkg/csi"
	"github.com/kubernetes-csi/external-resizer/v2/pkg/features"
	"github.com/kubernetes-csi/external-resizer/v2/pkg/modifier"
	"github.com/kubernetes-csi/external-resizer/v2/pkg/modifycontroller"
	"github.com/kubernetes-csi/external-resizer/v2/pkg/resizer"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/util/workqueue"

	"github.com/volplane/volplane/bench/refproc"
)

func main() { refproc.Run("volplane-reference-resizer", "csi-resizer", run) }

// The defaults of external-resizer v2.3.0's main (cmd/csi-resizer), the
// flags a deployment leaves alone. --timeout is the driver's probe timeout
// and, left at its default, --resize-timeout and --modify-timeout are the
// per-call ones.
const (
	resizerResync           = 10 * time.Minute
	resizerWorkers          = 10
	resizerTimeout          = 10 * time.Second
	resizerResizeTimeout    = 10 * time.Second
	resizerModifyTimeout    = 10 * time.Second
	resizerRetryStart       = time.Second
	resizerRetryMax         = 5 * time.Minute
	resizerHandleInUseError = true
	resizerExtraModifyMeta  = false
)

// run runs external-resizer's controllers for the driver at
// cfg.CSIEndpoint as its main wires them (no leader election, its default
// flags), until ctx ends.
func run(ctx context.Context, cfg refproc.Config) error {
	client, err := refproc.Client(cfg, "reference-csi-resizer")
	if err != nil {
		return err
	}
	// As its main does when the gate is not set: modify volumes only if the
	// API server serves VolumeAttributesClass v1.
	enabled, err := features.IsVolumeAttributesClassV1Enabled(client.Discovery())
	if err != nil {
		return fmt.Errorf("probing the VolumeAttributesClass v1 API: %w", err)
	}
	if !enabled {
		if err := utilfeature.DefaultMutableFeatureGate.OverrideDefault(features.VolumeAttributesClass, false); err != nil {
			return err
		}
	}
	factory := informers.NewSharedInformerFactory(client, resizerResync)
	conn, err := resizercsi.New(ctx, cfg.CSIEndpoint, resizerTimeout, csimetrics.NewCSIMetricsManager(""))
	if err != nil {
		return fmt.Errorf("connecting to the CSI driver: %w", err)
	}
	defer conn.CloseConnection()
	tctx, cancel := context.WithTimeout(ctx, resizerTimeout)
	driver, err := conn.GetDriverName(tctx)
	cancel()
	if err != nil {
		return fmt.Errorf("CSI driver name: %w", err)
	}
	rsz, err := resizer.NewResizerFromClient(conn, resizerResizeTimeout, client, driver)
	if err != nil && !errors.Is(err, resizer.ResizeNotSupportErr) {
		return fmt.Errorf("CSI resizer: %w", err)
	}
	mod, err := modifier.NewModifierFromClient(conn, resizerModifyTimeout, client, factory, resizerExtraModifyMeta, driver)
	if err != nil && !errors.Is(err, modifier.ModifyNotSupportErr) {
		return fmt.Errorf("CSI modifier: %w", err)
	}
	if rsz == nil && mod == nil {
		return fmt.Errorf("CSI driver %s supports neither resize nor modify", driver)
	}
	limiter := func() workqueue.TypedRateLimiter[string] {
		return workqueue.NewTypedItemExponentialFailureRateLimiter[string](resizerRetryStart, resizerRetryMax)
	}
	var rctrl controller.ResizeController
	if rsz != nil {
		rctrl = controller.NewResizeController(rsz.Name(), rsz, client, resizerResync, factory,
			limiter(), resizerHandleInUseError, resizerRetryMax)
	}
	var mctrl modifycontroller.ModifyController
	if mod != nil && utilfeature.DefaultFeatureGate.Enabled(features.VolumeAttributesClass) {
		mctrl = modifycontroller.NewModifyController(mod.Name(), mod, client, resizerResync,
			resizerRetryMax, resizerExtraModifyMeta, factory, limiter())
	}
	refproc.Start(ctx, factory, cfg.Ready)
	defer factory.Shutdown()
	if rctrl != nil {
		go rctrl.Run(resizerWorkers, ctx, nil)
	}
	if mctrl != nil {
		go mctrl.Run(resizerWorkers, ctx, nil)
	}
	<-ctx.Done()
	return nil
}
