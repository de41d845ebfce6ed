package csi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// Pool holds the endpoints grouped by the driver name they report. Several
// endpoints may serve one driver (one instance per node of a node-local
// driver); every choice among them is a pure function of the request and the
// order the endpoints were given in, so a retry after a crash reaches the
// same endpoint. It is the controller side: an endpoint that serves a node
// service but no controller (Endpoint.NodeOnly) is held only to be closed,
// and no method returns it, so CreateVolume and DeleteVolume never go there.
type Pool struct {
	byDriver map[string][]*Endpoint
	// byPair: each driver's endpoints whose topology has a key with a
	// value, in the order given (firstContaining).
	byPair   map[topologyPair][]*Endpoint
	order    []string
	nodeOnly []*Endpoint
	// homes remembers which endpoint holds each snapshot (FindSnapshot).
	homes *snapshotHomes
}

// DialPool dials every address; on any failure it closes what it opened and
// returns the error, which names the address.
func DialPool(ctx context.Context, addresses []string, metrics *Metrics) (*Pool, error) {
	var eps []*Endpoint
	for _, a := range addresses {
		e, err := Dial(ctx, a, metrics)
		if err != nil {
			for _, e := range eps {
				_ = e.Close()
			}
			return nil, err
		}
		eps = append(eps, e)
	}
	return NewPool(eps...), nil
}

// NewPool groups already dialed endpoints.
func NewPool(eps ...*Endpoint) *Pool {
	p := &Pool{byDriver: map[string][]*Endpoint{}, byPair: map[topologyPair][]*Endpoint{}, homes: newSnapshotHomes()}
	for _, e := range eps {
		if e.NodeOnly() {
			p.nodeOnly = append(p.nodeOnly, e)
			continue
		}
		if _, ok := p.byDriver[e.Info.Driver]; !ok {
			p.order = append(p.order, e.Info.Driver)
		}
		p.byDriver[e.Info.Driver] = append(p.byDriver[e.Info.Driver], e)
		for k, v := range e.Info.Topology {
			pair := topologyPair{e.Info.Driver, k, v}
			p.byPair[pair] = append(p.byPair[pair], e)
		}
	}
	return p
}

// topologyPair is one key and value of a driver's endpoint's topology.
type topologyPair struct{ driver, key, value string }

// firstContaining is the first endpoint of the driver (in the order given)
// whose topology has every key and value of segment; nil for an empty
// segment. It scans only the endpoints that have segment's rarest pair
// (a node-local driver's node key: one), not every endpoint of the driver:
// the provisioner and the capacity loop ask per volume and per segment,
// and a driver on 1,000 nodes has 1,000. firstMatching with contains is
// the same rule over all of them.
func (p *Pool) firstContaining(driver string, segment map[string]string) *Endpoint {
	var fewest []*Endpoint
	for k, v := range segment {
		eps := p.byPair[topologyPair{driver, k, v}]
		if len(eps) == 0 {
			return nil
		}
		if fewest == nil || len(eps) < len(fewest) {
			fewest = eps
		}
	}
	for _, e := range fewest {
		if contains(e.Info.Topology, segment) {
			return e
		}
	}
	return nil
}

// Close closes every endpoint.
func (p *Pool) Close() error {
	var errs []error
	for _, e := range p.nodeOnly {
		errs = append(errs, e.Close())
	}
	for _, eps := range p.byDriver {
		for _, e := range eps {
			errs = append(errs, e.Close())
		}
	}
	return errors.Join(errs...)
}

// NodeOnly says whether the endpoint serves a node service and no
// controller: a node's socket of a driver whose controller is elsewhere.
func (e *Endpoint) NodeOnly() bool { return e.Info.Node && !e.Info.Controller }

// Drivers lists the driver names served, in the order first seen.
func (p *Pool) Drivers() []string { return slices.Clone(p.order) }

// Serves says whether some endpoint serves the driver.
func (p *Pool) Serves(driver string) bool { return len(p.byDriver[driver]) > 0 }

// Info is the first endpoint's probe result for the driver (capabilities
// are the driver's, the same on every instance); ok is false for a driver
// not served.
func (p *Pool) Info(driver string) (Info, bool) {
	eps := p.byDriver[driver]
	if len(eps) == 0 {
		return Info{}, false
	}
	return eps[0].Info, true
}

// TopologyKeys are the keys of every segment the driver's endpoints report,
// sorted.
func (p *Pool) TopologyKeys(driver string) []string {
	keys := map[string]bool{}
	for _, e := range p.byDriver[driver] {
		for k := range e.Info.Topology {
			keys[k] = true
		}
	}
	return slices.Sorted(maps.Keys(keys))
}

// ForCreate chooses the endpoint for a CreateVolume with these requirements:
// the first whose topology satisfies the first preferred segment, else the
// first whose topology is among the requisite segments, else the first.
func (p *Pool) ForCreate(driver string, req *csi.TopologyRequirement) *Endpoint {
	eps := p.byDriver[driver]
	if len(eps) == 0 {
		return nil
	}
	if pref := req.GetPreferred(); len(pref) > 0 {
		if e := p.firstContaining(driver, pref[0].GetSegments()); e != nil {
			return e
		}
	}
	for _, r := range req.GetRequisite() {
		if e := p.firstContaining(driver, r.GetSegments()); e != nil {
			return e
		}
	}
	return eps[0]
}

// ForSegment is the first endpoint of the driver whose topology has every
// key and value of segment; nil if none has.
func (p *Pool) ForSegment(driver string, segment map[string]string) *Endpoint {
	return p.firstContaining(driver, segment)
}

// ForDelete chooses the endpoint that holds a volume, or says why none can
// be told. accessible is the volume's node affinity as a test on segments
// (an endpoint's topology, taken as node labels); nil means the volume has
// none. See chooseForDelete for the rule.
func (p *Pool) ForDelete(driver string, accessible func(segment map[string]string) bool) (*Endpoint, error) {
	return chooseForDelete(driver, p.byDriver[driver], accessible)
}

// Reasons ForDelete gives for choosing no endpoint. Each means "wait": the
// volume may exist on a driver instance that is not served now, and asking
// another instance would hear NotFound (or OK) for an ID it never made,
// dropping the PV while the data stays.
var (
	ErrDriverNotServed = errors.New("no endpoint serves the driver")
	// ErrTopologyNotServed: the volume is accessible only from segments no
	// served endpoint reports (its node's driver is not served).
	ErrTopologyNotServed = errors.New("no served endpoint of the driver reports a topology the volume is accessible from")
	// ErrAmbiguous: several endpoints could hold the volume and nothing
	// tells which (no node affinity, or endpoints without topology).
	ErrAmbiguous = errors.New("several endpoints serve the driver and nothing tells which one holds the volume")
	// ErrAffinityNotOnDriverKeys: the volume's node affinity has a term on
	// none of the topology keys the driver reports (kubernetes.io/hostname
	// only, say), so it cannot tell the driver's endpoints apart.
	ErrAffinityNotOnDriverKeys = errors.New("the volume's node affinity names none of the topology keys the driver reports, so nothing tells which endpoint holds the volume")
)

// chooseForDelete is ForDelete's rule, pure:
//   - an endpoint whose topology the volume is accessible from, the first
//     in the order given;
//   - else, with a single endpoint: that one, only if it reports no topology
//     (a central driver serves every node) or the volume has no node
//     affinity (accessible from everywhere);
//   - else no endpoint, with the reason.
func chooseForDelete(driver string, eps []*Endpoint, accessible func(map[string]string) bool) (*Endpoint, error) {
	if len(eps) == 0 {
		return nil, fmt.Errorf("%w %q", ErrDriverNotServed, driver)
	}
	if accessible != nil {
		if e := firstMatching(eps, accessible); e != nil {
			return e, nil
		}
	}
	if len(eps) == 1 && (accessible == nil || len(eps[0].Info.Topology) == 0) {
		return eps[0], nil
	}
	if accessible != nil && slices.ContainsFunc(eps, func(e *Endpoint) bool { return len(e.Info.Topology) > 0 }) {
		return nil, fmt.Errorf("%w (driver %q)", ErrTopologyNotServed, driver)
	}
	return nil, fmt.Errorf("%w (driver %q, %d endpoints)", ErrAmbiguous, driver, len(eps))
}

// firstMatching skips endpoints without topology: they are only ever the
// fallback.
func firstMatching(eps []*Endpoint, ok func(map[string]string) bool) *Endpoint {
	for _, e := range eps {
		if len(e.Info.Topology) > 0 && ok(e.Info.Topology) {
			return e
		}
	}
	return nil
}

// contains says whether every key of want has the same value in have.
func contains(have, want map[string]string) bool {
	if len(want) == 0 {
		return false
	}
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// Endpoints are the driver's endpoints in the order given.
func (p *Pool) Endpoints(driver string) []*Endpoint { return slices.Clone(p.byDriver[driver]) }
