package capacity

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

func controlledBy(kind, name string) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, UID: types.UID(name + "-uid"), Controller: ptr.To(true)}}
}

func TestOwnerOfWalksTheControllersAsTheReference(t *testing.T) {
	meta := func(name string, owners []metav1.OwnerReference) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "volplane", Name: name, UID: types.UID(name + "-uid"), OwnerReferences: owners}
	}
	client := fake.NewClientset(
		&v1.Pod{ObjectMeta: meta("ctl-abc-1", controlledBy("ReplicaSet", "ctl-abc"))},
		&appsv1.ReplicaSet{ObjectMeta: meta("ctl-abc", controlledBy("Deployment", "ctl"))},
		&appsv1.Deployment{ObjectMeta: meta("ctl", nil)},
		&v1.Pod{ObjectMeta: meta("node-x", controlledBy("DaemonSet", "node"))},
		&v1.Pod{ObjectMeta: meta("bare", nil)},
	)
	ctx := context.Background()
	for _, tc := range []struct {
		pod     string
		levels  int
		want    string
		problem string
	}{
		{"ctl-abc-1", 0, "Pod ctl-abc-1", ""},
		{"ctl-abc-1", 1, "ReplicaSet ctl-abc", ""},
		{"ctl-abc-1", 2, "Deployment ctl", ""},
		{"ctl-abc-1", 3, "", "Deployment volplane/ctl has no controlling owner"},
		{"node-x", 1, "DaemonSet node", ""},
		{"bare", 1, "", "Pod volplane/bare has no controlling owner"},
		{"missing", 0, "", "not found"},
	} {
		got, err := OwnerOf(ctx, client, "volplane", tc.pod, tc.levels)
		switch {
		case tc.problem != "" && (err == nil || !strings.Contains(err.Error(), tc.problem)):
			t.Errorf("%s level %d: %v %v, want an error saying %q", tc.pod, tc.levels, got, err, tc.problem)
		case tc.problem == "" && err != nil:
			t.Errorf("%s level %d: %v", tc.pod, tc.levels, err)
		case tc.problem == "" && (got.Kind+" "+got.Name != tc.want || got.Controller == nil || !*got.Controller || got.UID != types.UID(got.Name+"-uid")):
			t.Errorf("%s level %d: %+v, want %s as controller", tc.pod, tc.levels, got, tc.want)
		}
	}
}
