package provisioning

import (
	"errors"
	"fmt"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// CleanupEndpoint is the endpoint an earlier attempt asked: the pinned
// node's. A claim is pinned whenever the endpoint asked has a node ID, so
// an unpinned one went to an endpoint without, which ForCreate only
// chooses as the first; a single endpoint is the only one it can have
// asked. Otherwise which one was asked cannot be told: wait and report.
// The answer is the index of the endpoint in eps.
func CleanupEndpoint(eps []Endpoint, pin string) (int, error) {
	switch {
	case len(eps) == 0:
		return -1, errors.New("no CSI endpoint serves the driver; waiting for it")
	case pin != "":
		for i, e := range eps {
			if e.NodeID == pin {
				return i, nil
			}
		}
		return -1, fmt.Errorf("the endpoint of node %q, which the provisioning attempt asked, is not served now; waiting for it", pin)
	case eps[0].NodeID == "" || len(eps) == 1:
		return 0, nil
	}
	return -1, fmt.Errorf("the claim does not record which of the driver's %d endpoints was asked, so which one may hold its volume cannot be told", len(eps))
}

// ClaimOnlyRequest is the request for the claim's volume built without its
// class: name, size, access modes and volume mode; no parameters, clone
// source or topology.
func ClaimOnlyRequest(claim *v1.PersistentVolumeClaim, info Driver) (*csipb.CreateVolumeRequest, error) {
	return BuildRequest(RequestFacts{Claim: claim, Class: &storagev1.StorageClass{}, Driver: info})
}
