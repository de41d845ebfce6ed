package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	"google.golang.org/grpc/grpclog"
	corev1 "k8s.io/api/core/v1"

	"github.com/volplane/volplane/internal/checkup"
	"github.com/volplane/volplane/internal/invariants"
)

// The soak runs a short chaos phase by default (CI) and a long one on
// request: go test -run Soak ./cmd/volplane -soak=30m (or VOLPLANE_SOAK=30m),
// with -soak-seed (VOLPLANE_SOAK_SEED) to replay a run's choices.
var (
	soakFlag     = flag.Duration("soak", 0, "how long the fault soak's chaos phase runs (0: "+shortSoak.String()+", or $VOLPLANE_SOAK)")
	soakSeedFlag = flag.Int64("soak-seed", 0, "the fault soak's seed (0: $VOLPLANE_SOAK_SEED, else drawn from the clock)")
)

// shortSoak is the chaos phase of the CI run.
const shortSoak = 60 * time.Second

func soakDuration(t *testing.T) time.Duration {
	if *soakFlag > 0 {
		return *soakFlag
	}
	if env := os.Getenv("VOLPLANE_SOAK"); env != "" {
		d, err := time.ParseDuration(env)
		if err != nil {
			t.Fatalf("VOLPLANE_SOAK=%q: %v", env, err)
		}
		return d
	}
	return shortSoak
}

func soakSeed(t *testing.T) int64 {
	if *soakSeedFlag != 0 {
		return *soakSeedFlag
	}
	if env := os.Getenv("VOLPLANE_SOAK_SEED"); env != "" {
		seed, err := strconv.ParseInt(env, 10, 64)
		if err != nil {
			t.Fatalf("VOLPLANE_SOAK_SEED=%q: %v", env, err)
		}
		return seed
	}
	return time.Now().UnixNano() % 1_000_000
}

// While claims of every class and policy, pods, expansions, snapshots,
// restores and group snapshots come and go at random, every volplane process is SIGKILLed at random moments and
// restarted, the API server (with etcd, the drivers and the node agent) is
// SIGKILLed and restarted once, and the drivers fail, time out or delay
// controller calls; once the chaos stops and everything has been restarted
// cleanly and is quiescent, the volumes keep every promise of package
// invariants.
func TestSoak(t *testing.T) {
	chaos, seed := soakDuration(t), soakSeed(t)
	// The workload's own CSI calls fail while the drivers restart, by
	// design; gRPC's warnings about it would bury the test's output.
	grpclog.SetLoggerV2(grpclog.NewLoggerV2(io.Discard, io.Discard, io.Discard))
	fmt.Printf("soak: seed %d, chaos for %s (replay with -soak-seed=%d)\n", seed, chaos, seed)
	rates := "unavailable=0.1,timeout=0.1,delay=0.1,max-delay=1s"
	h := startHarness(t, fmt.Sprintf("seed=%d,%s", seed, rates))
	h.startReplicas(2)
	snaps, err := snapclient.NewForConfig(h.rest)
	if err != nil {
		t.Fatal(err)
	}
	if err := createSoakGroupClass(context.Background(), snaps); err != nil {
		t.Fatal(err)
	}
	w := newWorkload(h.client, "unix://"+filepath.Join(h.dir, "csi", "network.sock"), 30).withSnapshots(snaps)

	ctx, stop := context.WithTimeout(context.Background(), chaos)
	var wg sync.WaitGroup
	for i := range 2 {
		rng := rand.New(rand.NewPCG(uint64(seed), uint64(i)))
		wg.Go(func() {
			for ctx.Err() == nil {
				w.step(ctx, rng)
				sleepCtx(ctx, time.Duration(50+rng.IntN(350))*time.Millisecond)
			}
		})
	}
	apiRestarts := 0
	wg.Go(func() { apiRestarts = h.chaos(ctx, rand.New(rand.NewPCG(uint64(seed), 99)), chaos) })
	wg.Wait()
	stop()
	kills, exits := h.restarts()

	// Restart cleanly: fresh processes, so no backoff a fault earned
	// delays the end.
	h.stopReplicas()
	h.startReplicas(1)
	bg := context.Background()
	left := waitQuiescent(bg, h.client, w, 2*time.Minute)
	for _, u := range left {
		t.Errorf("not quiescent: %s", u)
	}
	state, err := checkup.ReadInvariants(bg, h.client, h.endpoints())
	if err != nil {
		t.Fatalf("reading the final state: %v", err)
	}
	violations := invariants.Check(state, w.expect())
	for _, v := range violations {
		t.Errorf("violation: %s", v)
	}
	summary := fmt.Sprintf("soak summary: seed %d, chaos %s; operations %s; controller restarts survived %d (SIGKILL) + %d (own exits); API server restarts %d; injected faults %d; at the end %s; unfinished %d; violations %d",
		seed, chaos, w.summary(), kills, exits, apiRestarts, h.injectedFaults(), describeState(state), len(left), len(violations))
	fmt.Println(summary)
	t.Log(summary)
	if err := deleteAllPods(bg, h.client, 2*time.Minute); err != nil {
		t.Error(err)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// chaos SIGKILLs a random controller process every few seconds and, once,
// at a random moment in the middle of the run, the cluster child; it
// returns the number of API server restarts.
func (h *soakHarness) chaos(ctx context.Context, rng *rand.Rand, length time.Duration) int {
	apiAt := time.Now().Add(time.Duration(float64(length) * (0.25 + 0.25*rng.Float64())))
	restarts := 0
	for {
		sleepCtx(ctx, time.Duration(1000+rng.IntN(4000))*time.Millisecond)
		if ctx.Err() != nil {
			return restarts
		}
		if restarts == 0 && time.Now().After(apiAt) {
			h.t.Logf("soak: SIGKILL the API server, etcd, the drivers and the node agent")
			h.killUp()
			if err := h.startUp(); err != nil {
				h.t.Errorf("restarting the cluster child: %v", err)
				return restarts
			}
			restarts++
			continue
		}
		h.replicas[rng.IntN(len(h.replicas))].kill()
	}
}

// describeState counts what the run left, for the summary.
func describeState(s invariants.State) string {
	bound, retained, volumes := 0, 0, 0
	for _, c := range s.Claims {
		if c.Status.Phase == corev1.ClaimBound {
			bound++
		}
	}
	for _, pv := range s.PVs {
		if pv.Status.Phase == corev1.VolumeReleased {
			retained++
		}
	}
	snapshots := 0
	for _, b := range s.Backends {
		volumes += len(b.VolumeIDs)
		snapshots += len(b.Snapshots)
	}
	return fmt.Sprintf("%d claims (%d Bound), %d PVs (%d Released), %d backend volumes, %d VolumeSnapshots, %d contents, %d backend snapshots",
		len(s.Claims), bound, len(s.PVs), retained, volumes, len(s.Snapshots), len(s.Contents), snapshots)
}
