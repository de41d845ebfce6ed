package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/controller/loop"
)

// Options are the flags of `volplane bench`.
type Options struct {
	Scenario string
	Pairs    int
	// QPS and Burst limit the controllers' clients; QPS <= 0: unthrottled.
	QPS   float32
	Burst int
	// Nodes is how many simulated nodes the attach scenario spreads its
	// pods over; 0 means DefaultAttachNodes. Other scenarios run one node
	// and reject any other value.
	Nodes int
	// AttacherQPS and AttacherBurst limit the attacher role's client in
	// the attach scenario (the external-attacher's and volplane's attacher);
	// QPS and Burst there limit the attach/detach role. QPS <= 0:
	// unthrottled.
	AttacherQPS   float32
	AttacherBurst int
	// ResizerQPS and ResizerBurst limit the resizer role's client in the
	// expand scenario (the external-resizer's and volplane's resizer); QPS
	// and Burst there limit the expander role. QPS <= 0: unthrottled.
	ResizerQPS   float32
	ResizerBurst int
	// Workers is volplane's --workers; 0 keeps its default.
	Workers int
	// Compare also runs the reference on an identical fresh control plane.
	Compare bool
	// Rate is how many PVs per second arrive in the trickle scenario.
	Rate float64
	// Timeout ends one side's measurement; what was bound by then is
	// reported, marked incomplete.
	Timeout time.Duration
	// Executable is the volplane binary the controllers run from.
	Executable string
	// ReferenceAttacher is the volplane-reference-attacher binary the
	// attach scenario's reference side runs (with Compare only).
	ReferenceAttacher string
	// ReferenceResizer is the volplane-reference-resizer binary the expand
	// scenario's reference side runs (with Compare only).
	ReferenceResizer string
	// ReferenceProvisioner is the volplane-reference-provisioner binary the
	// dynamic scenario's reference side runs (with Compare only).
	ReferenceProvisioner string
	// MemoryLimit, if set, is the measured controller's GOMEMLIMIT (Go's
	// soft memory limit, e.g. "900MiB"), on both sides: the GC then works
	// harder to keep the heap under it, trading CPU for peak RSS.
	MemoryLimit string
	// Progress receives the progress bar and the phases; nil: silent.
	Progress io.Writer `json:"-"`
	// Profile, when set, is a path prefix: volplane's controller writes a
	// CPU profile of its whole run to Profile.cpu.pprof, and its heap as the
	// run ends is saved to Profile.heap.pprof.
	Profile string
}

// Validate rejects options that cannot run, with the reason.
func (o Options) Validate() error {
	switch {
	case !slices.Contains(Scenarios(), o.Scenario):
		return fmt.Errorf("unknown scenario %q: choose one of %v", o.Scenario, Scenarios())
	case o.Pairs < 1:
		return fmt.Errorf("--pairs must be at least 1, got %d", o.Pairs)
	case o.Burst < 0:
		return fmt.Errorf("--burst must not be negative, got %d", o.Burst)
	case o.QPS > 0 && o.Burst < 1:
		return fmt.Errorf("--burst must be at least 1 with a --qps limit")
	case o.Nodes < 0:
		return fmt.Errorf("--nodes must not be negative, got %d", o.Nodes)
	case o.Nodes != 0 && o.Scenario != Attach:
		return fmt.Errorf("--nodes is only for the attach scenario (got --scenario %s)", o.Scenario)
	case o.Scenario == Attach && o.AttacherQPS > 0 && o.AttacherBurst < 1:
		return fmt.Errorf("the attacher's burst must be at least 1 with a QPS limit")
	case o.Scenario == Expand && o.ResizerQPS > 0 && o.ResizerBurst < 1:
		return fmt.Errorf("the resizer's burst must be at least 1 with a QPS limit")
	case o.Workers < 0:
		return fmt.Errorf("--workers must not be negative, got %d", o.Workers)
	case o.Scenario == Trickle && o.Rate <= 0:
		return fmt.Errorf("--rate must be above 0 for the trickle scenario, got %g", o.Rate)
	case o.Timeout <= 0:
		return fmt.Errorf("--timeout must be above 0, got %s", o.Timeout)
	case o.MemoryLimit != "" && !memoryLimitRE.MatchString(o.MemoryLimit):
		return fmt.Errorf("--memory-limit %q: want a size such as 900MiB or 1GiB", o.MemoryLimit)
	case o.Scenario == Attach && o.Compare && o.ReferenceAttacher == "":
		return fmt.Errorf("the attach scenario's reference needs the %s binary (go build ./cmd/%s)", ReferenceAttacherProgram, ReferenceAttacherProgram)
	case o.Scenario == Expand && o.Compare && o.ReferenceResizer == "":
		return fmt.Errorf("the expand scenario's reference needs the %s binary (go build ./bench/cmd/%s)", ReferenceResizerProgram, ReferenceResizerProgram)
	case o.Scenario == Dynamic && o.Compare && o.ReferenceProvisioner == "":
		return fmt.Errorf("the dynamic scenario's reference needs the %s binary (go build ./bench/cmd/%s)", ReferenceProvisionerProgram, ReferenceProvisionerProgram)
	case o.Executable == "":
		return errors.New("no volplane executable to run the controllers from")
	}
	return nil
}

// memoryLimitRE is what the Go runtime accepts as GOMEMLIMIT, less "off".
var memoryLimitRE = regexp.MustCompile(`^[0-9]+(B|KiB|MiB|GiB|TiB)?$`)

// Run measures volplane (and with Compare the reference) on the workload.
// Each side runs in a child process of its own (`volplane bench side`),
// on a fresh embedded control plane: the control plane's components
// register process-wide state and cannot be started twice in one process.
func Run(ctx context.Context, o Options) (Report, error) {
	if err := o.Validate(); err != nil {
		return Report{}, err
	}
	workers := o.Workers
	if workers == 0 {
		workers = loop.DefaultWorkers
	}
	r := Report{Scenario: o.Scenario, Pairs: o.Pairs, QPS: o.QPS, Burst: o.Burst, Workers: workers, Started: time.Now()}
	if o.Scenario == Attach {
		r.AttacherQPS, r.AttacherBurst = o.AttacherQPS, o.AttacherBurst
	}
	if o.Scenario == Expand {
		r.ResizerQPS, r.ResizerBurst = o.ResizerQPS, o.ResizerBurst
	}
	sides := []string{Volplane}
	if o.Compare {
		sides = append(sides, Reference)
	}
	for _, name := range sides {
		res, err := runSideProcess(ctx, o, name)
		if err != nil {
			return r, fmt.Errorf("%s: %w", name, err)
		}
		r.Sides = append(r.Sides, res.Side)
		if res.Ceiling != nil && r.Ceiling == nil {
			r.Ceiling = res.Ceiling
		}
	}
	return r, nil
}

// SideResult is what `volplane bench side` prints for its parent.
type SideResult struct {
	Side    Side     `json:"side"`
	Ceiling *Ceiling `json:"ceiling,omitempty"`
}

// resultPrefix starts the line that carries a child's SideResult.
const resultPrefix = "RESULT "

// runSideProcess runs one side in `volplane bench side`, its progress passed
// through to o.Progress.
func runSideProcess(ctx context.Context, o Options, side string) (SideResult, error) {
	opts, err := json.Marshal(o)
	if err != nil {
		return SideResult{}, err
	}
	cmd := exec.CommandContext(ctx, o.Executable, "bench", "side", "--side", side, "--options", string(opts))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = time.Minute
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if o.Progress != nil {
		cmd.Stderr = io.MultiWriter(&stderr, o.Progress)
	}
	if err := cmd.Run(); err != nil {
		return SideResult{}, fmt.Errorf("%w: %s", err, lastLines(stderr.String(), 15))
	}
	var res SideResult
	err = decodeResult(stdout.String(), &res)
	return res, err
}

// decodeResult decodes the JSON a child printed after resultPrefix.
func decodeResult(out string, v any) error {
	for _, line := range strings.Split(out, "\n") {
		if js, ok := strings.CutPrefix(line, resultPrefix); ok {
			if err := json.Unmarshal([]byte(js), v); err != nil {
				return fmt.Errorf("reading the child's result: %w", err)
			}
			return nil
		}
	}
	return fmt.Errorf("the child printed no result: %s", lastLines(out, 15))
}

// RunSide measures one side in this process and prints its SideResult on
// out, for the parent that ran `volplane bench side`.
func RunSide(ctx context.Context, o Options, side string, out io.Writer) error {
	if side != Volplane && side != Reference {
		return fmt.Errorf("unknown side %q: %s or %s", side, Volplane, Reference)
	}
	if err := o.Validate(); err != nil {
		return err
	}
	s, c, err := runSide(ctx, o, side)
	if err != nil {
		return err
	}
	js, err := json.Marshal(SideResult{Side: s, Ceiling: c})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "%s%s\n", resultPrefix, js)
	return err
}

// sideEnv is one side's fresh control plane and what runs on it.
type sideEnv struct {
	o        Options
	name     string
	dir      string
	cp       *cluster.ControlPlane
	admin    kubernetes.Interface
	drivers  *bundle.Drivers
	work     *workload
	progress *progress
	snaps    snapclient.Interface // the snapshot scenario's
}

func runSide(ctx context.Context, o Options, name string) (Side, *Ceiling, error) {
	dir, err := os.MkdirTemp("", "volplane-bench-")
	if err != nil {
		return Side{}, nil, err
	}
	defer os.RemoveAll(dir)
	e := &sideEnv{o: o, name: name, dir: dir, progress: newProgress(o.Progress, name)}
	e.progress.phase("starting a fresh control plane")
	e.cp, err = cluster.Start(ctx, e.clusterConfig())
	if err != nil {
		return Side{}, nil, err
	}
	defer e.cp.Stop()
	// Everything of the bench's own (watches, drivers, controllers) ends
	// before the control plane stops: an open watch holds the API server's
	// shutdown for its whole grace period.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	e.admin = kubernetes.NewForConfigOrDie(unthrottled(e.cp.RESTConfig))
	e.work = &workload{client: e.admin}
	if needsDrivers(o.Scenario) {
		e.drivers, err = bundle.Start(ctx, bundle.Config{DataDir: dir, Nodes: e.cp.Nodes, Capacity: 1 << 50})
		if err != nil {
			return Side{}, nil, err
		}
		defer e.drivers.Stop()
	}
	if err := e.work.prepare(ctx, o.Scenario); err != nil {
		return Side{}, nil, err
	}
	if o.Scenario == Snapshot {
		if err := e.prepareSnapshots(ctx); err != nil {
			return Side{}, nil, err
		}
	}
	side, err := e.measure(ctx)
	if err != nil {
		return side, nil, err
	}
	if o.Scenario == Churn {
		return side, nil, nil
	}
	e.progress.phase("measuring the API server's ceiling")
	switch o.Scenario {
	case Snapshot:
		c, err := measureSnapshotCeiling(ctx, e.snaps, e.admin)
		return side, c, err
	case Attach:
		c, err := measureAttachCeiling(ctx, e.admin)
		return side, c, err
	case Expand:
		c, err := measureExpandCeiling(ctx, e.admin)
		return side, c, err
	case Protection:
		if name == Reference {
			// kube-controller-manager's protection loops still run there,
			// and would race the ceiling's writer.
			return side, nil, nil
		}
		c, err := measureProtectionCeiling(ctx, e.admin, o.Pairs)
		return side, c, err
	}
	c, err := measureCeiling(ctx, e.admin)
	return side, c, err
}

// clusterConfig is the side's control plane. On the attach scenario's
// reference side its kube-controller-manager also runs upstream's
// attach/detach controller, at the attach/detach role's limits (which its
// other loops, idle here, share: it runs with one client for all).
func (e *sideEnv) clusterConfig() cluster.Config {
	cfg := cluster.Config{DataDir: e.dir, Nodes: e.o.AttachNodes(), UnsafeNoFsync: true}
	if e.o.Scenario == Attach && e.name == Reference {
		cfg.KeepControllers = []string{"attachdetach"}
	}
	if e.o.Scenario == Expand && e.name == Reference {
		cfg.KeepControllers = []string{expanderController}
	}
	if e.o.Scenario == Protection && e.name == Reference {
		cfg.KeepControllers = protectionControllers
	}
	if len(cfg.KeepControllers) > 0 {
		cfg.ControllerManagerQPS, cfg.ControllerManagerBurst = e.o.QPS, e.o.Burst
		if e.o.QPS <= 0 {
			cfg.ControllerManagerQPS = -1
		}
	}
	return cfg
}

// unthrottled is a copy of rc speaking protobuf, as the controllers do,
// with no client-side limit: the bench's own writes must never be what is
// slow.
func unthrottled(rc *rest.Config) *rest.Config {
	rc = rest.CopyConfig(rc)
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	rc.QPS, rc.Burst = -1, 0
	rc.UserAgent = "volplane-bench"
	return rc
}

// start starts the processes a side runs: the binder under test
// (measured) and, in churn, volplane's provisioner and protection loops in
// a process of their own, the same on both sides; the other scenarios'
// processes are their own (dynamic: the provisioner under test).
func (e *sideEnv) start(ctx context.Context) ([]*controllerProcess, error) {
	o, kc := e.o, e.cp.Kubeconfig
	limits := []string{"--kubeconfig", kc, "--kube-api-qps", fmtQPS(o.QPS), "--kube-api-burst", strconv.Itoa(o.Burst)}
	var binder []string
	if e.name == Reference {
		binder = append([]string{"bench", "reference-binder"}, limits...)
	} else {
		binder = append([]string{"controller", "--controllers", "binder", "--leader-elect=false",
			"--metrics-bind-address", "127.0.0.1:0"}, limits...)
		if o.Workers > 0 {
			binder = append(binder, "--workers", strconv.Itoa(o.Workers))
		}
		if o.Profile != "" {
			binder = append(binder, "--cpuprofile", o.Profile+".cpu.pprof", "--profiling")
		}
	}
	var env []string
	if o.MemoryLimit != "" {
		env = append(env, "GOMEMLIMIT="+o.MemoryLimit)
	}
	switch o.Scenario {
	case Snapshot:
		return e.snapshotProcesses(ctx, env)
	case Attach:
		return e.attachProcesses(ctx, env)
	case Expand:
		return e.expandProcesses(ctx, env)
	case Dynamic:
		return e.dynamicProcesses(ctx, env)
	case Protection:
		return e.protectionProcesses(ctx, env, limits)
	}
	p, err := startProcess(ctx, o.Executable, e.dir, e.name+" binder", true, env, binder...)
	if err != nil {
		return nil, err
	}
	procs := []*controllerProcess{p}
	if o.Scenario != Churn {
		return procs, nil
	}
	helpers := append([]string{"controller", "--controllers", "provisioner,pvc-protection,pv-protection",
		"--leader-elect=false", "--metrics-bind-address", ""}, limits...)
	for _, ep := range e.drivers.Endpoints {
		helpers = append(helpers, "--csi-endpoint", ep)
	}
	h, err := startProcess(ctx, o.Executable, e.dir, e.name+" provisioner", false, nil, helpers...)
	if err != nil {
		p.stop()
		return nil, err
	}
	return append(procs, h), nil
}

func fmtQPS(q float32) string {
	if q <= 0 {
		return "0"
	}
	return strconv.FormatFloat(float64(q), 'f', -1, 32)
}
