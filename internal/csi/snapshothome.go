package csi

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// ErrSnapshotNotFound: every endpoint of the driver answered that it holds
// no snapshot of that ID.
var ErrSnapshotNotFound = errors.New("no endpoint of the driver holds the snapshot")

// snapshotHomes remembers, per driver and snapshot ID, the endpoint that
// holds the snapshot: the one CreateSnapshot answered on, or the one a
// FindSnapshot scan found it on. A node-local driver runs one endpoint per
// node and answers DeleteSnapshot with OK for an ID it never made, so a
// delete sent to the wrong node would drop the content and leak the data.
type snapshotHomes struct {
	mu sync.Mutex
	m  map[string]*Endpoint
}

func newSnapshotHomes() *snapshotHomes { return &snapshotHomes{m: map[string]*Endpoint{}} }

func homeKey(driver, id string) string { return driver + "\x00" + id }

func (h *snapshotHomes) get(driver, id string) *Endpoint {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.m[homeKey(driver, id)]
}

func (h *snapshotHomes) set(driver, id string, e *Endpoint) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e == nil {
		delete(h.m, homeKey(driver, id))
		return
	}
	h.m[homeKey(driver, id)] = e
}

// RememberSnapshot records that e holds the driver's snapshot id (e
// answered the CreateSnapshot that made it); nil forgets it (deleted).
func (p *Pool) RememberSnapshot(driver, id string, e *Endpoint) { p.homes.set(driver, id, e) }

// FindSnapshot is the endpoint of driver that holds snapshot id, and the
// snapshot as it lists it (nil when the driver cannot list snapshots, or
// with one endpoint that does not list it: that endpoint's answer is then
// the caller's to judge). With several endpoints it is the remembered one,
// else the only one whose ListSnapshots(snapshot_id) returns it; the
// answer is remembered. Errors: ErrDriverNotServed; ErrAmbiguous when
// several endpoints serve a driver that cannot list snapshots;
// ErrSnapshotNotFound when every endpoint answered without it; else the
// first endpoint's error that kept the scan from being sure.
func (p *Pool) FindSnapshot(ctx context.Context, driver, id string, secrets map[string]string) (*Endpoint, *csi.Snapshot, error) {
	eps := p.byDriver[driver]
	if len(eps) == 0 {
		return nil, nil, fmt.Errorf("%w %q", ErrDriverNotServed, driver)
	}
	canList := eps[0].Info.ListSnapshots
	if e := p.homes.get(driver, id); e != nil {
		if !canList {
			return e, nil, nil
		}
		snap, err := listOne(ctx, e, id, secrets)
		if err != nil {
			return nil, nil, err
		}
		if snap != nil {
			return e, snap, nil
		}
		p.homes.set(driver, id, nil)
	}
	if len(eps) == 1 {
		if !canList {
			return eps[0], nil, nil
		}
		snap, err := listOne(ctx, eps[0], id, secrets)
		if err != nil {
			return nil, nil, err
		}
		return eps[0], snap, nil
	}
	if !canList {
		return nil, nil, fmt.Errorf("%w (driver %q, %d endpoints, none lists snapshots)", ErrAmbiguous, driver, len(eps))
	}
	var firstErr error
	for _, e := range eps {
		snap, err := listOne(ctx, e, id, secrets)
		switch {
		case err != nil:
			if firstErr == nil {
				firstErr = fmt.Errorf("list snapshot %s on %s: %w", id, e.Address, err)
			}
		case snap != nil:
			p.homes.set(driver, id, e)
			return e, snap, nil
		}
	}
	if firstErr != nil {
		return nil, nil, firstErr
	}
	return nil, nil, fmt.Errorf("%w: %s (driver %q)", ErrSnapshotNotFound, id, driver)
}

// listOne is the snapshot of that ID the endpoint lists, nil if none.
func listOne(ctx context.Context, e *Endpoint, id string, secrets map[string]string) (*csi.Snapshot, error) {
	snaps, err := e.ListSnapshots(ctx, &csi.ListSnapshotsRequest{SnapshotId: id, Secrets: secrets})
	if err != nil {
		return nil, err
	}
	for _, s := range snaps {
		if s.GetSnapshotId() == id {
			return s, nil
		}
	}
	return nil, nil
}
