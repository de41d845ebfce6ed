package support

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/volplane/volplane/internal/stacktest"
)

// Events are the events on the object namespace/name whose reason is one
// of reasons, as "Reason: message".
func Events(t testing.TB, client kubernetes.Interface, namespace, name string, reasons ...string) []string {
	t.Helper()
	list, err := client.CoreV1().Events(namespace).List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.name", name).String()})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if slices.Contains(reasons, e.Reason) {
			out = append(out, e.Reason+": "+e.Message)
		}
	}
	return out
}

// MetricLines are the lines of the /metrics page served at addr (host:port;
// "" is an error: the server is not up yet).
func MetricLines(addr string) ([]string, error) {
	if addr == "" {
		return nil, errors.New("no metrics address yet")
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return strings.Split(string(body), "\n"), nil
}

// VictimAndThief sets up the health suites' scenario: claim ns/data of
// class on its own volume, used by pod ns/app running on node, and a
// claim other/thief naming the victim's volume in its spec.volumeName
// (what a hostile tenant can write). It returns the victim's volume
// handle.
func VictimAndThief(t testing.TB, client kubernetes.Interface, alive func() error, ns, other, node, class string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, Claim(ns, "data", class, "1Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, Pod(ns, "app", node, "data"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stacktest.Eventually(t, "pod app Running", stacktest.PodRunning(ctx, client, ns, "app"), alive)
	claim, err := client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	thief := Claim(other, "thief", class, "1Gi")
	thief.Spec.VolumeName = claim.Spec.VolumeName
	if _, err := client.CoreV1().PersistentVolumeClaims(other).Create(ctx, thief, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return VolumeHandle(t, client, ns, "data")
}
