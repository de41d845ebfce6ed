package snapshotting

import (
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/snapshotapi"
)

func class(params map[string]string) *snapv1.VolumeSnapshotClass {
	return &snapv1.VolumeSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: "class"}, Driver: "d", Parameters: params}
}

func TestBuildCreate(t *testing.T) {
	req, err := BuildCreate(content(), class(map[string]string{
		"speed": "fast", snapshotapi.SecretNameParameter: "s", snapshotapi.SecretNamespaceParameter: "ns",
		snapshotapi.ListSecretNameParameter: "l", snapshotapi.ListSecretNamespaceParameter: "ns"}))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"speed": "fast", snapshotapi.SnapshotNameKey: "snap", snapshotapi.SnapshotNamespaceKey: "ns",
		snapshotapi.ContentNameKey: "snapcontent-u1"}
	if req.Name != "snapshot-u1" || req.SourceVolumeID != "vol-1" || !maps.Equal(req.Parameters, want) {
		t.Fatalf("BuildCreate = %+v", req)
	}
	for name, tc := range map[string]struct {
		c     *snapv1.VolumeSnapshotContent
		class *snapv1.VolumeSnapshotClass
		want  string
	}{
		"no class":         {content(), nil, "without a snapshot class"},
		"unknown reserved": {content(), class(map[string]string{"csi.storage.k8s.io/fstype": "x"}), "unknown parameter key"},
		"unbound":          {content(unbound), class(nil), "not bound to a snapshot"},
		"no volume handle": {content(preProvisioned), class(nil), "Volume handle not found"},
	} {
		if _, err := BuildCreate(tc.c, tc.class); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", name, err, tc.want)
		}
	}
}

func TestCallSecret(t *testing.T) {
	c := content()
	if r, err := CallSecret(c); err != nil || !r.None() {
		t.Fatalf("no annotations: %v %v", r, err)
	}
	c.Annotations = map[string]string{snapshotapi.DeletionSecretName: "s", snapshotapi.DeletionSecretNamespace: "ns"}
	if r, err := CallSecret(c); err != nil || r != (SecretRef{Namespace: "ns", Name: "s"}) {
		t.Fatalf("annotations: %v %v", r, err)
	}
	c.Annotations[snapshotapi.DeletionSecretName] = ""
	if _, err := CallSecret(c); err == nil {
		t.Fatal("empty name accepted")
	}
}

func TestSecretTemplates(t *testing.T) {
	p := map[string]string{snapshotapi.ListSecretNameParameter: "list-${volumesnapshotcontent.name}", snapshotapi.ListSecretNamespaceParameter: "creds"}
	if r, err := ListSecret(p, "snapcontent-u1"); err != nil || r != (SecretRef{Namespace: "creds", Name: "list-snapcontent-u1"}) {
		t.Fatalf("ListSecret = %v %v", r, err)
	}
	p[snapshotapi.ListSecretNameParameter] = "${volumesnapshot.name}"
	if _, err := ListSecret(p, "c"); err == nil || !strings.Contains(err.Error(), "invalid tokens") {
		t.Fatalf("a snapshot token in a list secret: %v", err)
	}
	delete(p, snapshotapi.ListSecretNamespaceParameter)
	if _, err := ListSecret(p, "c"); err == nil {
		t.Fatal("name without namespace accepted")
	}
	c := map[string]string{snapshotapi.SecretNameParameter: "${volumesnapshot.name}-key", snapshotapi.SecretNamespaceParameter: "${volumesnapshot.namespace}"}
	if r, err := CreateSecretFromClass(c, "sc", "team", "db"); err != nil || r != (SecretRef{Namespace: "team", Name: "db-key"}) {
		t.Fatalf("CreateSecretFromClass = %v %v", r, err)
	}
	c[snapshotapi.SecretNamespaceParameter] = "${volumesnapshot.name}"
	if _, err := CreateSecretFromClass(c, "sc", "team", "db"); err == nil {
		t.Fatal("the snapshot's name resolved in the namespace")
	}
	c[snapshotapi.SecretNamespaceParameter] = "Bad_NS"
	if _, err := CreateSecretFromClass(c, "sc", "team", "db"); err == nil || !strings.Contains(err.Error(), "not a valid namespace name") {
		t.Fatalf("bad namespace: %v", err)
	}
}

func TestStatusFrom(t *testing.T) {
	now := time.Unix(100, 0)
	st, changed := StatusFrom(nil, Answer{ID: "id", SizeBytes: 5, Ready: true}, now)
	if !changed || *st.SnapshotHandle != "id" || *st.CreationTime != now.UnixNano() || *st.RestoreSize != 5 || !*st.ReadyToUse {
		t.Fatalf("StatusFrom(nil) = %+v", st)
	}
	if _, changed := StatusFrom(st, Answer{ID: "id", Created: time.Unix(5, 0), SizeBytes: 5, Ready: true}, now); changed {
		t.Fatal("same answer changed the status")
	}
	errSt, _ := ErrorStatus(nil, "boom", now)
	if _, changed := ErrorStatus(errSt, "boom", now); changed {
		t.Fatal("same error written twice")
	}
	st, changed = StatusFrom(errSt, Answer{ID: "id", Ready: true}, now)
	if !changed || st.Error != nil || *st.SnapshotHandle != "id" {
		t.Fatalf("ready answer after an error = %+v", st)
	}
	if st, _ := ErrorStatus(st, "again", now); *st.ReadyToUse || *st.Error.Message != "again" || *st.SnapshotHandle != "id" {
		t.Fatalf("error after ready = %+v", st)
	}
	_ = ptr.To(1)
}

func TestCreateFinal(t *testing.T) {
	for code, final := range map[codes.Code]bool{
		codes.Canceled: false, codes.DeadlineExceeded: false, codes.Unavailable: false, codes.ResourceExhausted: false,
		codes.Aborted: false, codes.InvalidArgument: true, codes.NotFound: true, codes.Internal: true, codes.AlreadyExists: true,
	} {
		if got := CreateFinal(status.Error(code, "x")); got != final {
			t.Errorf("CreateFinal(%s) = %v, want %v", code, got, final)
		}
	}
	if CreateFinal(errors.New("local timeout")) {
		t.Error("an error without a status is final")
	}
}
