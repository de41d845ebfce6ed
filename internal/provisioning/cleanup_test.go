package provisioning

import (
	"strings"
	"testing"
)

// The cleanup asks the endpoint the provisioning attempt asked, or waits.
func TestCleanupAsksTheEndpointTheAttemptAsked(t *testing.T) {
	ep := func(node string) Endpoint { return Endpoint{NodeID: node} }
	// at names an endpoint by where it runs, as the loop's addresses do.
	at := func(eps []Endpoint, i int) string { return "at-" + eps[i].NodeID }
	for _, tc := range []struct {
		name    string
		eps     []Endpoint
		pin     string
		want    string
		wantErr string
	}{
		{"pinned", []Endpoint{ep("a"), ep("b")}, "b", "at-b", ""},
		{"pinned to a node not served: wait", []Endpoint{ep("a")}, "b", "", `the endpoint of node "b", which the provisioning attempt asked, is not served now`},
		{"unpinned, central endpoint first", []Endpoint{ep(""), ep("a")}, "", "at-", ""},
		{"unpinned, a single endpoint", []Endpoint{ep("a")}, "", "at-a", ""},
		{"unpinned among node endpoints: cannot tell", []Endpoint{ep("a"), ep("b")}, "", "", "does not record which of the driver's 2 endpoints"},
		{"nothing served", nil, "a", "", "no CSI endpoint serves the driver"},
	} {
		got, err := CleanupEndpoint(tc.eps, tc.pin)
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: %v, %v; want error %q", tc.name, got, err, tc.wantErr)
		case tc.wantErr == "" && (err != nil || at(tc.eps, got) != tc.want):
			t.Errorf("%s: %v, %v; want %s", tc.name, got, err, tc.want)
		}
	}
}
