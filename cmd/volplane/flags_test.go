package main

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/controller/manager"
)

// client-go reads QPS 0 as its default of 5 requests a second; the help of
// --kube-api-qps promises "0 or less: no client-side limit", so the clients
// built from the flags must carry no rate limiter at all then.
func TestKubeAPIQPSZeroOrLessMeansNoClientSideLimit(t *testing.T) {
	base := &rest.Config{Host: "https://127.0.0.1:1"}
	cases := []struct {
		qps     float32
		burst   int
		wantQPS float32 // 0: no limiter
	}{
		{qps: 20, burst: 30, wantQPS: 20},
		{qps: 0, burst: 30},
		{qps: -1, burst: 0},
	}
	for _, c := range cases {
		f := controllerFlags{qps: c.qps, burst: c.burst}
		rc := f.limit(base)
		client, err := kubernetes.NewForConfig(rc)
		if err != nil {
			t.Fatalf("--kube-api-qps %v --kube-api-burst %d: %v", c.qps, c.burst, err)
		}
		limiter := client.CoreV1().RESTClient().GetRateLimiter()
		switch {
		case c.wantQPS == 0 && limiter != nil:
			t.Errorf("--kube-api-qps %v: client limited to %v/s, want no client-side limit", c.qps, limiter.QPS())
		case c.wantQPS != 0 && (limiter == nil || limiter.QPS() != c.wantQPS):
			t.Errorf("--kube-api-qps %v: limiter %v, want %v/s", c.qps, limiter, c.wantQPS)
		}
		if rc.UserAgent != "volplane-controller" {
			t.Errorf("user agent %q", rc.UserAgent)
		}
		if !rc.DisableCompression {
			t.Error("the controller asks for gzipped responses; kube-controller-manager does not")
		}
	}
	if base.QPS != 0 || base.UserAgent != "" || base.DisableCompression {
		t.Error("limit changed the config it was given")
	}
}

// With no simulated node there is nowhere to run the bundled driver or a
// pod: `up --nodes 0` is refused before anything starts (no data dir made).
func TestUpRejectsZeroNodesBeforeStartingAnything(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "never")
	root := newRootCommand()
	root.SetArgs([]string{"up", "--nodes", "0", "--data-dir", dir})
	var out strings.Builder
	root.SetOut(&out)
	root.SetErr(io.Discard)
	err := root.Execute()
	if err == nil || !strings.Contains(err.Error(), "--nodes 0: want at least 1") {
		t.Fatalf("up --nodes 0: error %v, want it to say --nodes 0: want at least 1", err)
	}
	if _, statErr := os.Stat(dir); !os.IsNotExist(statErr) {
		t.Errorf("up --nodes 0 created %s before refusing", dir)
	}
	if out.Len() != 0 {
		t.Errorf("up --nodes 0 printed %q before refusing", out.String())
	}
}

// The flags of `volplane controller` default to manager.DefaultConfig, the
// one place the loops' defaults are written.
func TestControllerFlagsDefaultToTheManagersDefaultConfig(t *testing.T) {
	d := manager.DefaultConfig()
	want := map[string]string{
		"controllers":                 "[" + strings.Join(d.Controllers, ",") + "]",
		"workers":                     strconv.Itoa(d.Workers),
		"resync-period":               d.ResyncPeriod.String(),
		"recycle-timeout":             d.RecycleTimeout.String(),
		"leader-elect":                strconv.FormatBool(d.LeaderElect),
		"leader-elect-namespace":      d.LeaderElectNamespace,
		"leader-elect-name":           d.LeaderElectName,
		"leader-elect-lease-duration": d.LeaderElection.LeaseDuration.String(),
		"leader-elect-renew-deadline": d.LeaderElection.RenewDeadline.String(),
		"leader-elect-retry-period":   d.LeaderElection.RetryPeriod.String(),
		"metrics-bind-address":        d.MetricsAddr,
	}
	fl := newControllerCommand().Flags()
	for name, v := range want {
		f := fl.Lookup(name)
		if f == nil {
			t.Errorf("no flag --%s", name)
			continue
		}
		if f.DefValue != v {
			t.Errorf("--%s defaults to %q, want %q (manager.DefaultConfig)", name, f.DefValue, v)
		}
	}
	if !d.LeaderElect || d.Workers != 16 || d.ResyncPeriod.Seconds() != 15 {
		t.Errorf("DefaultConfig %+v: want leader election on, 16 workers, a 15s resync", d)
	}
}

// `volplane controller` and `up` take Kubernetes' --feature-gates, parsed by
// component-base: a gate volplane does not know, or a locked one turned off,
// is refused.
func TestControllerAndUpTakeFeatureGates(t *testing.T) {
	for _, cmd := range []*cobra.Command{newControllerCommand(), newUpCommand()} {
		fl := cmd.Flags()
		if fl.Lookup("feature-gates") == nil {
			t.Errorf("%s: no --feature-gates", cmd.Name())
			continue
		}
		if err := fl.Parse([]string{"--feature-gates=CSIVolumeHealth=true,PersistentVolumeClaimUnusedSinceTime=false"}); err != nil {
			t.Errorf("%s: %v", cmd.Name(), err)
		}
		for _, bad := range []string{"--feature-gates=NoSuchGate=true", "--feature-gates=VolumeAttributesClass=false"} {
			if err := cmd.Flags().Parse([]string{bad}); err == nil {
				t.Errorf("%s %s: accepted", cmd.Name(), bad)
			}
		}
	}
}

func TestUpRejectsANegativeNetworkAttachLimit(t *testing.T) {
	err := checkUp(cluster.Config{Nodes: 1}, upDriverFlags{capacity: resource.MustParse("1Gi"), networkMaxVolumes: -1}, nil, upTestFlags{})
	if err == nil || !strings.Contains(err.Error(), "--network-max-volumes-per-node must be 0 (no limit) or positive") {
		t.Fatalf("checkUp: %v, want the flag named", err)
	}
}
