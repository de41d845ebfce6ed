package explain

import (
	"strings"
	"testing"

	vgsv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/explain"
	"github.com/volplane/volplane/internal/inspect"
	"github.com/volplane/volplane/internal/snapshotapi"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// `explain vgs` and `explain vgsc` of a group the loops made ready: its
// class (its driver's default), the one claim of its own namespace its
// selector matches (a claim of another namespace with the same label is
// not listed), its member, its content; a group whose selector matches
// nothing says so, as the group loop does.
func TestExplainGroupSnapshotTheLoopsMade(t *testing.T) {
	e := newEnv(t)
	groups := snapclient.NewForConfigOrDie(stack.CP.RESTConfig).GroupsnapshotV1()
	db := func(c *corev1.PersistentVolumeClaim) { c.Labels = map[string]string{"app": "db"} }
	e.claim("db-0", "1Mi", bundle.ImmediateClass, db)
	e.claim("web", "1Mi", bundle.ImmediateClass)
	other := stacktest.Namespace(t)
	if _, err := e.client.CoreV1().PersistentVolumeClaims(other).Create(e.ctx, support.Claim(other, "db-0", bundle.ImmediateClass, "1Mi", db), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.client.CoreV1().PersistentVolumeClaims(other).Delete(e.ctx, "db-0", metav1.DeleteOptions{})
		e.eventually("the other namespace's volume gone", func() string {
			return e.volumesLeft(func(pv *corev1.PersistentVolume) bool {
				return pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.Namespace == other
			})
		})
	})
	e.eventually("claim db-0 Bound", e.claimPhase("db-0", corev1.ClaimBound))
	gone := func(name string) {
		_ = groups.VolumeGroupSnapshots(e.ns).Delete(e.ctx, name, metav1.DeleteOptions{})
		e.eventually("group "+name+" gone", func() string {
			if _, err := groups.VolumeGroupSnapshots(e.ns).Get(e.ctx, name, metav1.GetOptions{}); err == nil {
				return "still there"
			}
			return ""
		})
	}
	for _, name := range []string{"grp", "none"} {
		t.Cleanup(func() { gone(name) })
	}
	for name, labels := range map[string]map[string]string{"grp": {"app": "db"}, "none": {"app": "nothing"}} {
		g := &vgsv1.VolumeGroupSnapshot{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: vgsv1.VolumeGroupSnapshotSpec{Source: vgsv1.VolumeGroupSnapshotSource{Selector: &metav1.LabelSelector{MatchLabels: labels}},
				VolumeGroupSnapshotClassName: ptrTo(bundle.GroupSnapshotClass)}}
		if _, err := groups.VolumeGroupSnapshots(e.ns).Create(e.ctx, g, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	var r explain.GroupReport
	e.eventually("group grp ready, as explain says", func() string {
		rep, err := inspect.Report(e.ctx, e.client, "vgs", "grp", e.ns)
		if err != nil {
			return err.Error()
		}
		if r = rep.(explain.GroupReport); !r.Ready {
			return r.Summary
		}
		return ""
	})
	e.explain("vgs", e.ns+"/grp") // both formats, widths checked
	if !strings.HasPrefix(r.Summary, "Ready: group snapshot ") || r.Class == nil || r.Class.Name != bundle.GroupSnapshotClass ||
		len(r.Claims) != 1 || r.Claims[0].Name != "db-0" || r.Claims[0].Problem != "" ||
		len(r.Members) != 1 || !r.Members[0].Ready || r.Members[0].Claim != "db-0" || r.Content == nil || r.Content.GroupState != "Bound" {
		t.Errorf("report %+v", r)
	}
	table, _ := e.explain("vgsc", r.Content.Name)
	if !strings.Contains(table, "Ready: group snapshot") || !strings.Contains(table, snapshotapi.GroupContentFinalizer) {
		t.Errorf("content report:\n%s", table)
	}

	rep, err := inspect.Report(e.ctx, e.client, "volumegroupsnapshot", "none", e.ns)
	if err != nil {
		t.Fatal(err)
	}
	if none := rep.(explain.GroupReport); none.Ready || !strings.Contains(none.Summary, "not applied to any PVC") || len(none.Claims) != 0 {
		t.Errorf("report %+v", none)
	}
	if _, err := inspect.Report(e.ctx, e.client, "vgs", "nope", e.ns); err == nil || err.Error() != "volumegroupsnapshot "+e.ns+"/nope not found" {
		t.Errorf("a group that does not exist: %v", err)
	}
	gone("grp")
}

func ptrTo[T any](v T) *T { return &v }
