package csi

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// Pool holds the endpoints grouped by the driver name they report. Several
// endpoints may serve one driver (one instance per node of a node-local
// driver); every choice among them is a pure function of the request and the
// order the endpoints were given in, so a retry after a crash reaches the
// same endpoint.
type Pool struct {
	byDriver map[string][]*Endpoint
	order    []string
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
	p := &Pool{byDriver: map[string][]*Endpoint{}}
	for _, e := range eps {
		if _, ok := p.byDriver[e.Info.Driver]; !ok {
			p.order = append(p.order, e.Info.Driver)
		}
		p.byDriver[e.Info.Driver] = append(p.byDriver[e.Info.Driver], e)
	}
	return p
}

// Close closes every endpoint.
func (p *Pool) Close() error {
	var errs []error
	for _, eps := range p.byDriver {
		for _, e := range eps {
			errs = append(errs, e.Close())
		}
	}
	return errors.Join(errs...)
}

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
		if e := firstMatching(eps, func(t map[string]string) bool { return contains(t, pref[0].GetSegments()) }); e != nil {
			return e
		}
	}
	for _, r := range req.GetRequisite() {
		if e := firstMatching(eps, func(t map[string]string) bool { return contains(t, r.GetSegments()) }); e != nil {
			return e
		}
	}
	return eps[0]
}

// ForSegment is the first endpoint of the driver whose topology has every
// key and value of segment; nil if none has.
func (p *Pool) ForSegment(driver string, segment map[string]string) *Endpoint {
	return firstMatching(p.byDriver[driver], func(t map[string]string) bool { return contains(t, segment) })
}

// ForDelete chooses the endpoint whose topology the volume is accessible
// from (accessible is usually the PV's node affinity), else the first.
func (p *Pool) ForDelete(driver string, accessible func(segment map[string]string) bool) *Endpoint {
	eps := p.byDriver[driver]
	if len(eps) == 0 {
		return nil
	}
	if e := firstMatching(eps, accessible); e != nil {
		return e
	}
	return eps[0]
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
