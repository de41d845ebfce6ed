package groupsnapshot

import (
	"os"
	"testing"
)

// The snapshot API's fake clientset sends no bookmark: the informers would
// wait 10s for the watch-list stream before listing.
func TestMain(m *testing.M) {
	_ = os.Setenv("KUBE_FEATURE_WatchListClient", "false")
	code := m.Run()
	stopDriver() // count_test.go's
	os.Exit(code)
}
