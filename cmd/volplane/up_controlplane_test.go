package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/volplane/volplane/internal/heartbeat"
)

// Flags that configure a part --control-plane-only leaves out, and an
// advertise address that is no unicast IP, are refused before anything
// starts (no data dir made, nothing printed).
func TestUpControlPlaneOnlyRefusesContradictoryFlagsBeforeStarting(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--control-plane-only", "--nodes", "2"}, "--control-plane-only runs no simulated node, bundled driver or volplane loop: drop --nodes"},
		{[]string{"--control-plane-only", "--nodes", "0"}, "drop --nodes"},
		{[]string{"--control-plane-only", "--hostpath-capacity", "1Gi", "--metrics-bind-address", ""}, "drop --hostpath-capacity, --metrics-bind-address"},
		{[]string{"--control-plane-only", "--without-loops"}, "drop --without-loops"},
		{[]string{"--control-plane-only", "--fake-mounts"}, "drop --fake-mounts"},
		{[]string{"--control-plane-only", "--profiling"}, "drop --profiling"},
		{[]string{"--control-plane-only", "--advertise-address", "0.0.0.0"}, `--advertise-address "0.0.0.0": want one unicast IP address`},
		{[]string{"--advertise-address", "node-1"}, `--advertise-address "node-1": want one unicast IP address`},
	}
	for _, c := range cases {
		dir := filepath.Join(t.TempDir(), "never")
		root := newRootCommand()
		root.SetArgs(append([]string{"up", "--data-dir", dir}, c.args...))
		var out strings.Builder
		root.SetOut(&out)
		root.SetErr(io.Discard)
		err := root.Execute()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("up %v: error %v, want it to say %q", c.args, err, c.want)
		}
		if _, statErr := os.Stat(dir); !os.IsNotExist(statErr) {
			t.Errorf("up %v created %s before refusing", c.args, dir)
		}
		if out.Len() != 0 {
			t.Errorf("up %v printed %q before refusing", c.args, out.String())
		}
	}
}

// `up --control-plane-only --advertise-address IP` is what a real node joins
// (tools/realnode): the `kubernetes` Service's endpoint is IP, the serving
// certificate is valid for IP, and up made no Node, CSIDriver,
// StorageClass, node Lease or volplane heartbeat Lease and serves no loop
// metrics. kube-controller-manager still runs (the default ServiceAccount).
func TestUpControlPlaneOnlyAdvertisesTheGivenAddressAndRunsNoVolplane(t *testing.T) {
	const advertise = "10.250.0.1"
	dir := t.TempDir()
	ctx := context.Background()
	up := startUp(t, dir, "--control-plane-only", "--advertise-address", advertise)
	client := clientFor(t, dir)

	var got []string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		slices, err := client.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=kubernetes"})
		if err != nil {
			return false, nil
		}
		got = nil
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				got = append(got, e.Addresses...)
			}
		}
		return len(got) == 1 && got[0] == advertise, nil
	})
	if err != nil {
		t.Fatalf("the kubernetes Service's endpoints are %v, want [%s]", got, advertise)
	}

	// The API server listens on 127.0.0.1 but its certificate is valid for
	// the advertised address, as a client that dialled it there checks.
	rc, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	conn, err := tls.Dial("tcp", strings.TrimPrefix(rc.Host, "https://"), &tls.Config{RootCAs: pool, ServerName: advertise})
	if err != nil {
		t.Fatalf("TLS to the API server as %s: %v", advertise, err)
	}
	_ = conn.Close()

	if _, err := client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Errorf("no default ServiceAccount (kube-controller-manager): %v", err)
	}
	assertNone(t, "Node", func() (int, error) {
		l, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		return lenOr(l, err, func() int { return len(l.Items) })
	})
	assertNone(t, "CSIDriver", func() (int, error) {
		l, err := client.StorageV1().CSIDrivers().List(ctx, metav1.ListOptions{})
		return lenOr(l, err, func() int { return len(l.Items) })
	})
	assertNone(t, "StorageClass", func() (int, error) {
		l, err := client.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
		return lenOr(l, err, func() int { return len(l.Items) })
	})
	assertNone(t, "node Lease", func() (int, error) {
		l, err := client.CoordinationV1().Leases("kube-node-lease").List(ctx, metav1.ListOptions{})
		return lenOr(l, err, func() int { return len(l.Items) })
	})
	for _, role := range heartbeat.Roles {
		assertNone(t, string(role)+" heartbeat Lease", func() (int, error) {
			l, err := client.CoordinationV1().Leases("").List(ctx, metav1.ListOptions{LabelSelector: role.Label()})
			return lenOr(l, err, func() int { return len(l.Items) })
		})
	}
	up.stop(t)
	if strings.Contains(up.output.String(), "Metrics: ") {
		t.Errorf("up --control-plane-only served loop metrics:\n%s", up.output)
	}
}

func lenOr[T any](list *T, err error, n func() int) (int, error) {
	if err != nil || list == nil {
		return 0, err
	}
	return n(), nil
}

func assertNone(t *testing.T, kind string, count func() (int, error)) {
	t.Helper()
	n, err := count()
	if err != nil {
		t.Errorf("list %s: %v", kind, err)
	} else if n != 0 {
		t.Errorf("up --control-plane-only made %d %s object(s), want none", n, kind)
	}
}
