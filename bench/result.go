package bench

import "time"

// Scenarios `volplane bench` runs.
const (
	// Static: N PVs and N claims exist before the controller starts.
	Static = "static"
	// Trickle: N claims wait; their PVs arrive one by one at a fixed rate.
	Trickle = "trickle"
	// Dynamic: N claims of the bundled driver's class, provisioned and bound.
	Dynamic = "dynamic"
	// Churn: claims created and deleted continuously, Delete policy.
	Churn = "churn"
	// Snapshot: N bound claims, each with a VolumeSnapshot, made ready by
	// the snapshot-controller and csi-snapshotter roles.
	Snapshot = "snapshot"
	// Attach: N bound network volumes and, once the controllers run, N pods
	// already placed on M nodes; an attach counts once its VolumeAttachment
	// is attached.
	Attach = "attach"
	// Expand: N bound, unused claims of the bundled node-local driver; once
	// the controllers run, every claim's request is raised at once; an
	// expansion counts once the claim's status.capacity shows the new size.
	Expand = "expand"
	// Protection: N unused claims and N free PVs, each with its protection
	// finalizer; once the controllers run, all are deleted at once; a pair
	// counts once both its claim and its PV are gone.
	Protection = "protection"
)

// Scenarios lists the scenarios in the order of the help text.
func Scenarios() []string {
	return []string{Static, Trickle, Dynamic, Churn, Snapshot, Attach, Expand, Protection}
}

// Sides of a comparison.
const (
	Volplane  = "volplane"
	Reference = "reference"
)

// Report is everything one `volplane bench` run measured: one Side per
// implementation run (volplane, then the reference with --compare) and the
// API server's ceiling for the same writes.
type Report struct {
	Scenario string  `json:"scenario"`
	Pairs    int     `json:"pairs"`
	QPS      float32 `json:"qps"` // <= 0: unthrottled
	Burst    int     `json:"burst"`
	// AttacherQPS and AttacherBurst: the attach scenario's attacher role
	// (QPS and Burst are then the attach/detach role's).
	AttacherQPS   float32 `json:"attacherQPS,omitempty"`
	AttacherBurst int     `json:"attacherBurst,omitempty"`
	// ResizerQPS and ResizerBurst: the expand scenario's resizer role
	// (QPS and Burst are then the expander's).
	ResizerQPS   float32   `json:"resizerQPS,omitempty"`
	ResizerBurst int       `json:"resizerBurst,omitempty"`
	Workers      int       `json:"workers"`
	Started      time.Time `json:"started"`
	Sides        []Side    `json:"sides"`
	// Ceiling is nil when it was not measured (it is for static only).
	Ceiling *Ceiling `json:"ceiling,omitempty"`
}

// Side is what one implementation did with the workload.
type Side struct {
	Name string `json:"name"` // Volplane or Reference
	// Processes names what ran, e.g. "volplane controller --controllers binder".
	Processes []string `json:"processes"`
	// Bound is how many claims were Bound when the measurement ended;
	// Complete says whether that was all of them.
	Bound    int  `json:"bound"`
	Complete bool `json:"complete"`
	// Seconds from the controller's start to the last bind measured.
	Seconds     float64 `json:"seconds"`
	BindsPerSec float64 `json:"bindsPerSec"`
	// Time to Bound per claim, from the moment it could be bound (the
	// controller's start, its PV's creation, or its own creation).
	P50, P90, P99 time.Duration `json:"-"`
	P50Ms         float64       `json:"p50Ms"`
	P90Ms         float64       `json:"p90Ms"`
	P99Ms         float64       `json:"p99Ms"`
	// VAP50Ms and the rest are, in the attach scenario, the time from a
	// VolumeAttachment first seen to it attached (P50 and the rest there
	// measure from the pod's create).
	VAP50Ms float64 `json:"vaP50Ms,omitempty"`
	VAP90Ms float64 `json:"vaP90Ms,omitempty"`
	VAP99Ms float64 `json:"vaP99Ms,omitempty"`
	// PVP50Ms and the rest are, in the dynamic scenario, the time from a
	// claim's create to a PV naming it first seen.
	PVP50Ms float64 `json:"pvP50Ms,omitempty"`
	PVP90Ms float64 `json:"pvP90Ms,omitempty"`
	PVP99Ms float64 `json:"pvP99Ms,omitempty"`
	// Writes are the controller's writes to PVs and claims (create, update,
	// patch, delete, status included); Events its event writes.
	Writes        int64   `json:"writes"`
	Events        int64   `json:"events"`
	WritesPerBind float64 `json:"writesPerBind"`
	// WorkloadWritesPerBind are the workload's own writes made while the
	// controllers ran (the raised requests, the deletions, the claims
	// created), per piece of work: the API server served them beside the
	// controllers', so the ceiling's share counts them too.
	WorkloadWritesPerBind float64 `json:"workloadWritesPerBind,omitempty"`
	// WritesBy counts the writes and events by "resource[/subresource]
	// VERB" (the workload's own writes during the run included).
	WritesBy map[string]int64 `json:"writesBy,omitempty"`
	// CPUSeconds is user+system CPU of the controller process(es) over the
	// run; PeakRSSBytes their peak resident set (VmHWM), summed.
	CPUSeconds   float64 `json:"cpuSeconds"`
	CPUMsPerBind float64 `json:"cpuMsPerBind"`
	PeakRSSBytes int64   `json:"peakRSSBytes"`
	// ControlPlaneCPUSeconds is the CPU of the side's own process over the
	// measurement: the embedded API server and etcd, the bundled driver,
	// the workload's client and watches, and the reference's
	// kube-controller-manager loops where they run inside the control plane
	// (attach, expand, protection); MachineBusy the fraction of all the machine's
	// cores busy meanwhile, every process's (the controllers', the
	// driver's, this side's and anything else running). Together they say
	// whether a side below the API server's ceiling was held back by the
	// controllers or by a machine the API server already filled.
	ControlPlaneCPUSeconds   float64 `json:"controlPlaneCpuSeconds,omitempty"`
	ControlPlaneCPUMsPerBind float64 `json:"controlPlaneCpuMsPerBind,omitempty"`
	MachineBusy              float64 `json:"machineBusy,omitempty"`
	// Measured are the measured processes' own figures, when there are
	// several (their sums are CPUSeconds and PeakRSSBytes).
	Measured []ProcessFigures `json:"measured,omitempty"`
	// Curve is claims Bound over time since the controller started.
	Curve []Point `json:"curve"`
}

// setSinceVA sets the VA percentiles from each volume's time from its
// VolumeAttachment seen to attached.
func (s *Side) setSinceVA(d []time.Duration) {
	p50, p90, p99 := Percentiles(d)
	s.VAP50Ms, s.VAP90Ms, s.VAP99Ms = millis(p50), millis(p90), millis(p99)
}

// setSincePV sets the PV percentiles from each claim's time from its
// create to its PV seen.
func (s *Side) setSincePV(d []time.Duration) {
	p50, p90, p99 := Percentiles(d)
	s.PVP50Ms, s.PVP90Ms, s.PVP99Ms = millis(p50), millis(p90), millis(p99)
}

// ProcessFigures are one measured process's CPU and peak RSS.
type ProcessFigures struct {
	Name         string  `json:"name"`
	CPUSeconds   float64 `json:"cpuSeconds"`
	PeakRSSBytes int64   `json:"peakRSSBytes"`
}

// Point is one step of a Side's curve.
type Point struct {
	Seconds float64 `json:"s"`
	Bound   int     `json:"bound"`
}

// Ceiling is the API server's sustained write rate for the writes of a bind
// (PV and claim updates and status updates) from a trivial writer that
// knows what to write and reads nothing, on the same store.
type Ceiling struct {
	Writes       int64   `json:"writes"`
	Seconds      float64 `json:"seconds"`
	WritesPerSec float64 `json:"writesPerSec"`
}

// BindsPossible is the ceiling expressed in binds/s for a controller that
// needs writesPerBind writes per bind.
func (c Ceiling) BindsPossible(writesPerBind float64) float64 {
	if writesPerBind <= 0 {
		return 0
	}
	return c.WritesPerSec / writesPerBind
}
