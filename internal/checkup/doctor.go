package checkup

import (
	"context"
	"io"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/volplane/volplane/internal/doctor"
	"github.com/volplane/volplane/internal/explain"
	"github.com/volplane/volplane/internal/inspect"
)

// NoEndpointsGiven is why the backend checks are skipped when no CSI
// endpoint was given or found.
const NoEndpointsGiven = "no CSI controller endpoint given (--csi-endpoint)"

// DoctorConfig says what `volplane doctor` checks and how it prints.
type DoctorConfig struct {
	// Endpoints are the CSI controller endpoints whose volumes are compared
	// with the PVs; none skips that check, NoEndpoints saying why.
	Endpoints   []string
	NoEndpoints string
	Thresholds  doctor.Thresholds
	// Output is "table" or "json".
	Output string
	// Clock is what ages are measured to (default the real clock). Whether
	// a provisioner is present is read at the real time whatever it says:
	// its heartbeat is fresh or not now, in the live cluster.
	Clock clock.PassiveClock
}

// Doctor checks the cluster, writes the report and returns it (the caller
// turns its problems into an exit code). The drivers' volumes are listed
// before the cluster is read, and again after: a volume made meanwhile is
// seen with its PV or its claim in flight, and one deleted meanwhile is not
// taken for an orphan (doctor.Backend).
func Doctor(ctx context.Context, client kubernetes.Interface, cfg DoctorConfig, w io.Writer) (doctor.Report, error) {
	var backends []doctor.Backend
	var err error
	if len(cfg.Endpoints) > 0 {
		if backends, err = ReadBackends(ctx, cfg.Endpoints); err != nil {
			return doctor.Report{}, err
		}
	}
	s, err := ReadCluster(ctx, client)
	if err != nil {
		return doctor.Report{}, err
	}
	if len(cfg.Endpoints) == 0 {
		s.BackendsSkipped = cfg.NoEndpoints
		if s.BackendsSkipped == "" {
			s.BackendsSkipped = NoEndpointsGiven
		}
	} else if s.Backends, err = relist(ctx, backends, cfg.Endpoints); err != nil {
		return doctor.Report{}, err
	}
	if s.Provisioners, err = inspect.Presence(ctx, client, time.Now(), pendingProvisioners(s)...); err != nil {
		return doctor.Report{}, err
	}
	ages := cfg.Clock
	if ages == nil {
		ages = clock.RealClock{}
	}
	s.Now = ages.Now()
	r := doctor.Check(s, cfg.Thresholds)
	if cfg.Output == "json" {
		return r, r.JSON(w)
	}
	return r, r.Table(w)
}

// pendingProvisioners are the provisioners the Pending claims wait for.
func pendingProvisioners(s *doctor.Snapshot) []string {
	var names []string
	for _, c := range s.Claims {
		if c.Status.Phase == v1.ClaimPending {
			names = append(names, explain.ClaimProvisioners(c, s.Classes)...)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// relist lists the endpoints again and records, in each backend listed
// before, the volume IDs listed now.
func relist(ctx context.Context, before []doctor.Backend, endpoints []string) ([]doctor.Backend, error) {
	after, err := ReadBackends(ctx, endpoints)
	if err != nil {
		return nil, err
	}
	for i := range before {
		before[i].Relisted = map[string]bool{}
		for _, v := range after[i].Volumes {
			before[i].Relisted[v.ID] = true
		}
	}
	return before, nil
}
