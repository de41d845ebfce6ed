package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
)

// ReadyLine is what `volplane bench reference-binder` prints once its
// caches are synced, so the bench knows when it is running.
const ReadyLine = "reference binder" + readySuffix

// measure creates the workload, starts the side's controllers and measures
// until every claim is Bound or the timeout ends the run.
func (e *sideEnv) measure(ctx context.Context) (Side, error) {
	if err := e.createUpfront(ctx); err != nil {
		return Side{}, err
	}
	var (
		watch *bindWatch
		vas   attachWatches
		pvs   *bindWatch // dynamic: the PVs made for the claims, by claim name
		err   error
	)
	switch e.o.Scenario {
	case Snapshot:
		watch, err = startSnapshotWatch(ctx, e.snaps)
	case Attach:
		vas, err = startAttachWatches(ctx, e.admin)
		watch = vas.attached
	case Expand:
		watch, err = startExpandWatch(ctx, e.admin)
	case Protection:
		watch, err = startGoneWatch(ctx, e.admin)
	case Dynamic:
		if pvs, err = startProvisionedWatch(ctx, e.admin); err == nil {
			watch, err = startBindWatch(ctx, e.admin)
		}
	default:
		watch, err = startBindWatch(ctx, e.admin)
	}
	if err != nil {
		return Side{}, err
	}
	before, err := readAPIWrites(ctx, e.admin)
	if err != nil {
		return Side{}, err
	}
	ownBefore := e.work.writes.Load()
	e.progress.phase("starting the controller")
	began := time.Now()
	procs, err := e.start(ctx)
	if err != nil {
		return Side{}, err
	}
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()
	if err := waitReady(ctx, procs); err != nil {
		return Side{}, err
	}
	if e.o.Scenario == Attach || e.o.Scenario == Expand || e.o.Scenario == Protection || e.o.Scenario == Dynamic {
		// The clock starts with the pods (attach), the raised requests
		// (expand), the deletions (protection) or the claims (dynamic),
		// once the controllers run.
		began = time.Now()
	}
	cpuBefore, err := markCPU()
	if err != nil {
		return Side{}, err
	}
	arrivals := e.drive(ctx, watch)
	complete, err := e.waitBound(ctx, watch, procs, began, arrivals)
	if err != nil {
		return Side{}, err
	}
	if complete && e.o.Scenario == Snapshot {
		if err := e.settleSnapshots(ctx, began.Add(e.o.Timeout)); err != nil {
			return Side{}, err
		}
	}
	cpuAfter, err := markCPU()
	if err != nil {
		return Side{}, err
	}
	stats, err := sampleAll(procs)
	if err != nil {
		return Side{}, err
	}
	if e.o.Profile != "" && e.name == Volplane {
		e.saveHeap(ctx, procs[0])
	}
	after, err := settledAPIWrites(ctx, e.admin)
	if err != nil {
		return Side{}, err
	}
	writes := after.minus(before)
	own := e.work.writes.Load() - ownBefore
	writes.Volumes -= own
	for kind, n := range timedWorkloadWrites(e.o.Scenario, e.o.Pairs) {
		if writes.By[kind] -= n; writes.By[kind] == 0 {
			delete(writes.By, kind)
		}
	}
	a := arrivals.wait()
	side := e.summarize(watch.snapshot(), began, a, complete, writes, stats, procs)
	side.ControlPlaneCPUSeconds, side.MachineBusy = cpuBefore.since(cpuAfter)
	if side.Bound > 0 {
		side.ControlPlaneCPUMsPerBind = 1000 * side.ControlPlaneCPUSeconds / float64(side.Bound)
	}
	if e.o.Pairs > 0 {
		side.WorkloadWritesPerBind = float64(own) / float64(e.o.Pairs)
	}
	if e.o.Scenario == Attach {
		side.setSinceVA(sinceSeen(watch.snapshot(), vas.seen.snapshot()))
	}
	if pvs != nil {
		side.setSincePV(sinceSeen(pvs.snapshot(), a.claims))
	}
	return side, nil
}

// timedWorkloadWrites are, by kind as apiWrites.By counts them, the writes
// the workload makes while the controllers run, which are not theirs: the
// raised requests (expand), the deletions (protection).
func timedWorkloadWrites(scenario string, pairs int) map[string]int64 {
	n := int64(pairs)
	switch scenario {
	case Expand:
		return map[string]int64{raiseWrite: n}
	case Dynamic:
		return map[string]int64{claimCreate: n}
	case Protection:
		return map[string]int64{"persistentvolumeclaims DELETE": n, "persistentvolumes DELETE": n}
	}
	return nil
}

// createUpfront creates what exists before the controller starts.
func (e *sideEnv) createUpfront(ctx context.Context) error {
	n, w := e.o.Pairs, e.work
	switch e.o.Scenario {
	case Static:
		e.progress.start("creating PVs and claims", 2*n)
		err := forEach(ctx, n, func() { e.progress.add(2) }, func(i int) error {
			if err := w.createVolume(ctx, i); err != nil {
				return fmt.Errorf("creating %s: %w", volumeName(i), err)
			}
			return w.createClaim(ctx, Static, i)
		})
		e.progress.done()
		return err
	case Snapshot:
		return e.createSnapshotWorkload(ctx)
	case Attach:
		return e.createAttachWorkload(ctx)
	case Expand:
		return e.createExpandWorkload(ctx)
	case Protection:
		return e.createProtectionWorkload(ctx)
	case Dynamic:
		return e.createDynamicWorkload(ctx)
	case Trickle:
		e.progress.start("creating claims", n)
		err := forEach(ctx, n, func() { e.progress.add(1) }, func(i int) error { return w.createClaim(ctx, e.o.Scenario, i) })
		e.progress.done()
		return err
	}
	return nil
}

// arrivals are the times the workload made each claim bindable while the
// controller ran (trickle: PV creations in order; churn: claim creations by
// name; attach: pod creations by the name of the pod's PV); both empty for
// the scenarios where everything exists up front.
type arrivals struct {
	done   chan struct{}
	pvs    []time.Time
	claims map[string]time.Time
	err    error
}

func (a *arrivals) wait() *arrivals {
	<-a.done
	return a
}

// drive starts the part of the workload that runs with the controller.
func (e *sideEnv) drive(ctx context.Context, watch *bindWatch) *arrivals {
	a := &arrivals{done: make(chan struct{})}
	switch e.o.Scenario {
	case Trickle:
		go func() { defer close(a.done); a.pvs, a.err = e.work.trickle(ctx, e.o.Pairs, e.o.Rate) }()
	case Churn:
		go func() { defer close(a.done); a.claims, a.err = e.work.churn(ctx, e.o.Pairs, watch) }()
	case Attach:
		go func() { defer close(a.done); a.claims, a.err = e.createPods(ctx) }()
	case Expand:
		go func() { defer close(a.done); a.claims, a.err = e.raiseRequests(ctx) }()
	case Protection:
		go func() { defer close(a.done); a.claims, a.err = e.deletePairs(ctx) }()
	case Dynamic:
		go func() { defer close(a.done); a.claims, a.err = e.createClaims(ctx) }()
	default:
		close(a.done)
	}
	return a
}

// waitBound waits until every claim is Bound (true), the timeout passes
// (false) or a controller or the workload fails.
func (e *sideEnv) waitBound(ctx context.Context, watch *bindWatch, procs []*controllerProcess, began time.Time, a *arrivals) (bool, error) {
	what := "binding"
	switch e.o.Scenario {
	case Snapshot:
		what = "waiting for snapshots ready to use"
	case Attach:
		what = "creating pods, waiting for their volumes attached"
	case Expand:
		what = "raising requests, waiting for the claims expanded"
	case Protection:
		what = "deleting claims and PVs, waiting for them gone"
	case Dynamic:
		what = "creating claims, waiting for them provisioned and bound"
	}
	e.progress.start(what, e.o.Pairs)
	defer e.progress.done()
	deadline := time.NewTimer(time.Until(began.Add(e.o.Timeout)))
	defer deadline.Stop()
	check := time.NewTicker(time.Second)
	defer check.Stop()
	for {
		n := watch.count()
		e.progress.set(n)
		if n >= e.o.Pairs {
			return true, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-deadline.C:
			return false, nil
		case <-watch.changed:
		case <-check.C:
			for _, p := range procs {
				if err := p.exited(); err != nil {
					return false, err
				}
			}
			select {
			case <-a.done:
				if a.err != nil {
					return false, fmt.Errorf("workload: %w", a.err)
				}
			default:
			}
		}
	}
}

// summarize turns the bind times into the side's figures.
func (e *sideEnv) summarize(bound map[string]time.Time, began time.Time, a *arrivals, complete bool, w apiWrites, s procStats, procs []*controllerProcess) Side {
	side := Side{Name: e.name, Bound: len(bound), Complete: complete, Writes: w.Volumes, Events: w.Events, WritesBy: w.By,
		CPUSeconds: s.CPUSeconds, PeakRSSBytes: s.PeakRSS}
	var measured []ProcessFigures
	for _, p := range procs {
		side.Processes = append(side.Processes, describe(p))
		if p.measured {
			measured = append(measured, ProcessFigures{Name: p.name, CPUSeconds: p.last.CPUSeconds, PeakRSSBytes: p.last.PeakRSS})
		}
	}
	if len(measured) > 1 {
		side.Measured = measured
	}
	sinceStart := make([]time.Duration, 0, len(bound))
	last := began
	for _, t := range bound {
		sinceStart = append(sinceStart, t.Sub(began))
		if t.After(last) {
			last = t
		}
	}
	side.Seconds = last.Sub(began).Seconds()
	if !complete {
		side.Seconds = e.o.Timeout.Seconds()
	}
	side.Curve = CurveOf(sinceStart, 500)
	side.P50, side.P90, side.P99 = Percentiles(timesToBound(bound, began, a))
	side.P50Ms, side.P90Ms, side.P99Ms = millis(side.P50), millis(side.P90), millis(side.P99)
	if n := float64(side.Bound); n > 0 {
		side.BindsPerSec = n / side.Seconds
		side.WritesPerBind = float64(side.Writes) / n
		side.CPUMsPerBind = 1000 * side.CPUSeconds / n
	}
	return side
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// timesToBound measures each claim from when it could be bound: the
// controller's start when everything existed before it, its PV's arrival
// in trickle (claims are interchangeable there, so the i-th bind answers
// the i-th PV), its own creation in churn.
func timesToBound(bound map[string]time.Time, began time.Time, a *arrivals) []time.Duration {
	out := make([]time.Duration, 0, len(bound))
	switch {
	case a.claims != nil:
		for name, t := range bound {
			if c, ok := a.claims[name]; ok {
				out = append(out, t.Sub(c))
			}
		}
	case a.pvs != nil:
		times := make([]time.Time, 0, len(bound))
		for _, t := range bound {
			times = append(times, t)
		}
		slices.SortFunc(times, func(x, y time.Time) int { return x.Compare(y) })
		for i := 0; i < len(times) && i < len(a.pvs); i++ {
			out = append(out, times[i].Sub(a.pvs[i]))
		}
	default:
		for _, t := range bound {
			out = append(out, t.Sub(began))
		}
	}
	return out
}

func describe(p *controllerProcess) string {
	args := strings.Join(p.cmd.Args[1:], " ")
	if !p.measured {
		args += " (not measured)"
	}
	program := "volplane"
	if p.program != "" {
		program = p.program
	}
	return program + " " + args
}

var servingRE = regexp.MustCompile(`Serving /metrics, /healthz and /readyz on http://(\S+)`)

// waitReady waits until every measured (or awaited) controller has synced
// its caches: volplane's /readyz answers, or the reference prints its ready
// line.
func waitReady(ctx context.Context, procs []*controllerProcess) error {
	for _, p := range procs {
		if p.measured || p.awaited {
			if err := waitOneReady(ctx, p); err != nil {
				return err
			}
		}
	}
	return nil
}

func waitOneReady(ctx context.Context, p *controllerProcess) error {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if err := p.exited(); err != nil {
			return err
		}
		if ready(ctx, p) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s not ready within 2 minutes; see %s", p.name, p.log)
}

// ready: a reference process (bench reference-binder or a reference
// sidecar) prints its ready line; volplane's controller serves /readyz.
func ready(ctx context.Context, p *controllerProcess) bool {
	log, _ := os.ReadFile(p.log)
	if strings.Contains(string(log), readySuffix) {
		return true
	}
	base, ok := metricsURL(p)
	return ok && httpOK(ctx, base+"/readyz", nil)
}

// metricsURL is where volplane's controller serves /metrics and the rest,
// read from the line it logs once listening.
func metricsURL(p *controllerProcess) (string, bool) {
	log, _ := os.ReadFile(p.log)
	m := servingRE.FindSubmatch(log)
	if m == nil {
		return "", false
	}
	return "http://" + string(m[1]), true
}

func httpOK(ctx context.Context, url string, into io.Writer) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if into != nil {
		_, err = io.Copy(into, resp.Body)
	}
	return err == nil && resp.StatusCode == http.StatusOK
}

// saveHeap saves volplane's controller's heap profile as the run ends.
func (e *sideEnv) saveHeap(ctx context.Context, p *controllerProcess) {
	base, ok := metricsURL(p)
	if !ok {
		return
	}
	f, err := os.Create(e.o.Profile + ".heap.pprof")
	if err != nil {
		e.progress.phase("heap profile: " + err.Error())
		return
	}
	defer f.Close()
	if !httpOK(ctx, base+"/debug/pprof/heap", f) {
		e.progress.phase("heap profile: the controller did not serve /debug/pprof/heap")
	}
}
