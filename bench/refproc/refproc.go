// Package refproc is what the reference sidecars the bench runs as
// binaries of their own (the reference attacher and resizer) share: their
// flags, with the sidecars' names and defaults for the few a bench sets,
// the checks of them, klog, the signals that stop them, the line that says
// their caches are synced, and their client config. Like bench/reflog it
// imports nothing of k8s.io/kubernetes, which those binaries cannot link.
package refproc

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/bench/reflog"
)

// ReadySuffix ends the line a reference process prints once its informers'
// caches are synced; the bench waits for it.
const ReadySuffix = ": caches synced"

// Config is how a reference sidecar reaches the API server and its driver.
type Config struct {
	Kubeconfig string
	// QPS <= 0: unthrottled.
	QPS   float32
	Burst int
	// CSIEndpoint is the driver's controller service.
	CSIEndpoint string
	// Ready, if set, is called once the caches are synced.
	Ready func()
}

// Run is a reference binary's main: Main with the process's arguments,
// exiting 1 with the error on stderr should it fail.
func Run(program, sidecar string, run func(context.Context, Config) error) {
	if err := Main(program, sidecar, os.Args[1:], run); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}

// Check refuses a config a reference process cannot start with: no
// kubeconfig, no driver endpoint (when it serves one), a limit without a
// burst.
func Check(cfg Config, needsCSI bool) error {
	switch {
	case cfg.Kubeconfig == "":
		return errors.New("--kubeconfig is required")
	case needsCSI && cfg.CSIEndpoint == "":
		return errors.New("--csi-address is required")
	case cfg.QPS > 0 && cfg.Burst < 1:
		return errors.New("--kube-api-burst must be at least 1 with a --kube-api-qps limit")
	}
	return nil
}

// Main parses args as program takes them (the sidecar's flag names; its
// default limits, 5 QPS and burst 10), configures klog, and runs run until
// SIGTERM or SIGINT. Once the caches are synced it prints
// "reference <sidecar>: caches synced".
func Main(program, sidecar string, args []string, run func(context.Context, Config) error) error {
	var (
		cfg       Config
		qps       float64
		verbosity int
	)
	fs := flag.NewFlagSet(program, flag.ContinueOnError)
	fs.StringVar(&cfg.Kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (required)")
	fs.Float64Var(&qps, "kube-api-qps", 5, "API requests per second, client side; 0 or less: no client-side limit")
	fs.IntVar(&cfg.Burst, "kube-api-burst", 10, "API request burst (ignored without a --kube-api-qps limit)")
	fs.StringVar(&cfg.CSIEndpoint, "csi-address", "", "the CSI driver's controller endpoint, unix:///path (required)")
	fs.IntVar(&verbosity, "v", 0, "klog verbosity; at 0 only errors reach stderr")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg.QPS = float32(qps)
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	if err := Check(cfg, true); err != nil {
		return err
	}
	if err := reflog.Configure(verbosity); err != nil {
		return err
	}
	defer klog.Flush()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg.Ready = func() { fmt.Println("reference " + sidecar + ReadySuffix) }
	return run(ctx, cfg)
}

// REST is the kubeconfig's client config with cfg's limits (QPS <= 0: no
// client-side limit) and userAgent, speaking JSON; Protobuf is that config
// speaking protobuf, as the sidecars' core clients do.
func REST(cfg Config, userAgent string) (*rest.Config, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	rc.QPS, rc.Burst = cfg.QPS, cfg.Burst
	if cfg.QPS <= 0 {
		rc.QPS = -1
	}
	rc.UserAgent = userAgent
	return rc, nil
}

// Start starts the factory's informers and calls ready once their caches
// are synced (never, if ctx ends first). The caller shuts the factory down.
func Start(ctx context.Context, f informers.SharedInformerFactory, ready func()) {
	f.Start(ctx.Done())
	go func() {
		for _, synced := range f.WaitForCacheSync(ctx.Done()) {
			if !synced {
				return
			}
		}
		ready()
	}()
}

// Client is the core clientset a reference sidecar builds: REST's config,
// speaking protobuf.
func Client(cfg Config, userAgent string) (*kubernetes.Clientset, error) {
	rc, err := REST(cfg, userAgent)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(Protobuf(rc))
}

// Protobuf is a copy of rc that speaks protobuf.
func Protobuf(rc *rest.Config) *rest.Config {
	rc = rest.CopyConfig(rc)
	rc.ContentType = runtime.ContentTypeProtobuf
	return rc
}
