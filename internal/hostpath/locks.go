package hostpath

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// lock serializes the calls that touch one volume or snapshot while calls on
// different ones run in parallel (d.locks; a clone takes the new volume and
// its source at once). It takes every non-empty key or none. If ctx ends
// first, the call fails with Aborted, which the CSI spec reserves for "an
// operation is pending for this volume".
func (d *Driver) lock(ctx context.Context, keys ...string) (unlock func(), err error) {
	unlock, err = d.locks.Lock(ctx, keys...)
	if err != nil {
		return nil, status.Error(codes.Aborted, err.Error())
	}
	return unlock, nil
}

// lockedVolume locks the volume id and returns it with the unlock to call,
// or NotFound (and nothing locked) when the driver has no such volume.
func (d *Driver) lockedVolume(ctx context.Context, id string) (*volume, func(), error) {
	unlock, err := d.lock(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	vol := d.store.current().Volumes.Get(id)
	if vol == nil {
		unlock()
		return nil, nil, status.Errorf(codes.NotFound, "volume %q does not exist", id)
	}
	return vol, unlock, nil
}
