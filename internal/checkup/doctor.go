package checkup

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	// Snapshots reads the snapshot API (default: inspect.SnapshotClient of the
	// client doctor is given; none for a fake, and the snapshot checks are
	// skipped).
	Snapshots snapclient.Interface
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
	snaps := cfg.Snapshots
	if snaps == nil {
		snaps = inspect.SnapshotClient(client)
	}
	if err := readDoctorSnapshots(ctx, snaps, s); err != nil {
		return doctor.Report{}, err
	}
	s.SnapshotsUnread = s.SnapshotsSkipped // what explain says of a claim restoring from a snapshot
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
		before[i].RelistedSnapshots = map[string]bool{}
		for _, snap := range after[i].Snapshots {
			before[i].RelistedSnapshots[snap.ID] = true
		}
	}
	return before, nil
}

// NoSnapshotClient is why the snapshot checks are skipped when doctor has
// no way to read the snapshot API.
const NoSnapshotClient = "no client of the snapshot API"

// readDoctorSnapshots reads the contents, then the VolumeSnapshots (a
// snapshot made meanwhile has its content made after it, so no content is
// taken for one whose snapshot is gone), into s; or says why not.
func readDoctorSnapshots(ctx context.Context, snaps snapclient.Interface, s *doctor.Snapshot) error {
	if snaps == nil {
		s.SnapshotsSkipped = NoSnapshotClient
		return nil
	}
	api := snaps.SnapshotV1()
	contents, err := api.VolumeSnapshotContents().List(ctx, metav1.ListOptions{})
	if inspect.NotInstalled(err) {
		s.SnapshotsSkipped = inspect.NoSnapshotAPI
		return nil
	}
	if err != nil {
		return fmt.Errorf("list volume snapshot contents: %w", err)
	}
	vs, err := api.VolumeSnapshots(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list volume snapshots: %w", err)
	}
	s.Contents, s.VolumeSnapshots = pointers(contents.Items), pointers(vs.Items)
	groups, err := readGroupContents(ctx, snaps)
	if err != nil {
		return err
	}
	s.GroupContents = pointers(groups)
	// A member's in-group finalizer is advised on only against the group
	// that owns it (name and UID), never a namesake.
	live, err := readGroupSnapshots(ctx, snaps)
	if err != nil {
		return err
	}
	s.GroupSnapshots = pointers(live)
	return nil
}

func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
