package groupsnapshot

import (
	"os"
	"testing"

	"k8s.io/client-go/features"
)

// noWatchList turns client-go's WatchListClient off whatever registry the
// linked API server installed: the snapshot API's fake clientset sends no
// bookmark, so the informers would wait 10s for the watch-list stream
// before listing (the KUBE_FEATURE_WatchListClient variable is not read
// once the API server's feature gates replace client-go's own).
type noWatchList struct{ features.Gates }

func (g noWatchList) Enabled(f features.Feature) bool {
	return f != features.WatchListClient && g.Gates.Enabled(f)
}

// The control plane a counting test started (count_test.go) is stopped
// last.
func TestMain(m *testing.M) {
	_ = os.Setenv("KUBE_FEATURE_WatchListClient", "false")
	features.ReplaceFeatureGates(noWatchList{features.FeatureGates()})
	code := m.Run()
	if plane.stop != nil {
		plane.stop()
	}
	os.Exit(code)
}
