package explain

import (
	"strings"
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/explain"
	"github.com/volplane/volplane/internal/inspect"
	"github.com/volplane/volplane/internal/snapshotapi"
)

// `explain pvc` of a claim restoring from a VolumeSnapshot says what the
// provisioner decides: a request smaller than the snapshot is refused
// (and the claim's Why says so), a fitting one is restored and then Done.
func TestExplainClaimRestoringFromASnapshot(t *testing.T) {
	e := newEnv(t)
	api := snapclient.NewForConfigOrDie(stack.CP.RESTConfig).SnapshotV1()
	e.claim("src", "1Gi", bundle.NetworkClass)
	e.eventually("claim src Bound", e.claimPhase("src", corev1.ClaimBound))
	vs := &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "nightly"},
		Spec: snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To("src")}}}
	if _, err := api.VolumeSnapshots(e.ns).Create(e.ctx, vs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, c := range []string{"small", "restored"} {
			_ = e.client.CoreV1().PersistentVolumeClaims(e.ns).Delete(e.ctx, c, metav1.DeleteOptions{})
		}
		_ = api.VolumeSnapshots(e.ns).Delete(e.ctx, "nightly", metav1.DeleteOptions{})
		e.eventually("snapshot nightly gone", func() string {
			if _, err := api.VolumeSnapshots(e.ns).Get(e.ctx, "nightly", metav1.GetOptions{}); err == nil {
				return "still there"
			}
			return ""
		})
	})
	e.eventually("snapshot nightly ready", func() string {
		got, err := api.VolumeSnapshots(e.ns).Get(e.ctx, "nightly", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if got.Status == nil || got.Status.ReadyToUse == nil || !*got.Status.ReadyToUse || got.Status.RestoreSize == nil {
			return "not ready"
		}
		return ""
	})
	from := func(c *corev1.PersistentVolumeClaim) {
		c.Spec.DataSourceRef = &corev1.TypedObjectReference{APIGroup: ptr.To(snapshotapi.Group), Kind: snapshotapi.KindSnapshot, Name: "nightly"}
	}
	report := func(name string) explain.ClaimReport {
		t.Helper()
		e.explain("pvc", e.ns+"/"+name) // both formats, widths checked
		r, err := inspect.Report(e.ctx, e.client, "pvc", name, e.ns)
		if err != nil {
			t.Fatal(err)
		}
		return r.(explain.ClaimReport)
	}

	e.claim("small", "1Mi", bundle.NetworkClass, from)
	r := report("small")
	rs := r.RestoresFrom
	if rs == nil || rs.State != explain.RestoreRefused || !strings.Contains(rs.Summary, "requested volume size 1048576 is less than the size") ||
		rs.Ready == nil || !*rs.Ready || rs.ContentDriver != rs.ClassDriver || rs.Content == "" {
		t.Errorf("restores from %+v", rs)
	}
	if !strings.HasPrefix(r.Summary, "Restoring from volumesnapshot "+e.ns+"/nightly: the provisioner refuses it") {
		t.Errorf("summary %q", r.Summary)
	}
	table, _ := e.explain("pvc", e.ns+"/small")
	for _, want := range []string{"Restores from:\n", "  Source:      volumesnapshot NS/nightly\n", "  Verdict:     The provisioner refuses it: "} {
		if !strings.Contains(table, want) {
			t.Errorf("no %q in\n%s", want, table)
		}
	}

	e.claim("restored", "1Gi", bundle.NetworkClass, from)
	e.eventually("claim restored Bound", e.claimPhase("restored", corev1.ClaimBound))
	if rs := report("restored").RestoresFrom; rs == nil || rs.State != explain.RestoreDone {
		t.Errorf("restores from %+v", rs)
	}
}
