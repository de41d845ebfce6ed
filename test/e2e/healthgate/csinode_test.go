package healthgate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/stacktest"
)

// The driver's data directory made unreadable (moved away) on one node:
// NodeGetStorageHealth says STORAGE_UNREACHABLE, and with the gate on the
// node's CSINode status.storageHealth holds the driver's entry
// (StorageUnreachable/DataDirUnreachable, as the kubelet's
// UpdateCSINodeStorageHealth writes it) and csi_node_storage_health_status
// reports it; put back, the entry and the series go. The other node's
// CSINode keeps no entry throughout. Runs before any volume exists (its
// file sorts first), so moving the directory harms none.
func TestStorageHealthIsWrittenToTheCSINodeAndCleared(t *testing.T) {
	sick, well := stack.CP.Nodes[1], stack.CP.Nodes[0]
	dir := filepath.Join(stack.DataDir(), "hostpath", sick, "volumes")
	if err := os.Rename(dir, dir+".away"); err != nil {
		t.Fatal(err)
	}
	restored := false
	restore := func() {
		if !restored {
			restored = true
			if err := os.Rename(dir+".away", dir); err != nil {
				t.Fatal(err)
			}
		}
	}
	defer restore()
	const want = string(storagev1.StorageUnreachable) + "/" + hostpath.ReasonDataDirUnreachable
	waitStorageHealth(t, sick, want)
	waitMetric(t, "csi_node_storage_health_status", true, `node="`+sick+`"`, `driver_name="`+hostpath.DriverName+`"`,
		`reason="`+hostpath.ReasonDataDirUnreachable+`"`, `status="`+string(storagev1.StorageUnreachable)+`"`)
	if got, err := storageHealth(well); got != "" || err != nil {
		t.Errorf("CSINode %s storageHealth %q (%v), want none: its driver's data directory is in place", well, got, err)
	}

	restore()
	waitStorageHealth(t, sick, "")
	waitMetric(t, "csi_node_storage_health_status", false, `node="`+sick+`"`)
}

// storageHealth is the bundled driver's entry of the node's CSINode
// status.storageHealth, as "Status/Reason" of each condition, "" for none.
func storageHealth(node string) (string, error) {
	n, err := stack.CP.Client.StorageV1().CSINodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	got := ""
	for _, h := range n.Status.StorageHealth {
		if h.Name != hostpath.DriverName {
			continue
		}
		for _, c := range h.HealthConditions {
			got += string(c.Status) + "/" + c.Reason
		}
	}
	return got, nil
}

// waitStorageHealth waits until the node's CSINode exists (the node agent
// registers it) and its storageHealth entry says want.
func waitStorageHealth(t *testing.T, node, want string) {
	t.Helper()
	stacktest.Eventually(t, fmt.Sprintf("CSINode %s storageHealth %q", node, want), func() string {
		got, err := storageHealth(node)
		if err != nil {
			return err.Error()
		}
		if got != want {
			return fmt.Sprintf("storageHealth %q", got)
		}
		return ""
	}, stack.EndedEarly)
}
