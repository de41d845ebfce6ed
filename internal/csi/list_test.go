package csi

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// pagedController holds n volumes, snapshots and abnormal volumes and
// answers as a driver behind gRPC's message limit would: a request that
// names no page size, or one over tooMany, fails as an oversized message.
type pagedController struct {
	csi.ControllerClient
	n, tooMany int
	asked      []int32
}

func (c *pagedController) page(maxEntries int32, token string) (from, to int, next string, err error) {
	c.asked = append(c.asked, maxEntries)
	size := int(maxEntries)
	if size == 0 {
		size = c.n
	}
	if size > c.tooMany {
		return 0, 0, "", status.Errorf(codes.ResourceExhausted, "grpc: received message larger than max (%d entries)", size)
	}
	if token != "" {
		if from, err = strconv.Atoi(token); err != nil {
			return 0, 0, "", status.Error(codes.Aborted, "bad token")
		}
	}
	to = min(from+size, c.n)
	if to < c.n {
		next = strconv.Itoa(to)
	}
	return from, to, next, nil
}

func (c *pagedController) ListVolumes(_ context.Context, req *csi.ListVolumesRequest, _ ...grpc.CallOption) (*csi.ListVolumesResponse, error) {
	from, to, next, err := c.page(req.GetMaxEntries(), req.GetStartingToken())
	if err != nil {
		return nil, err
	}
	resp := &csi.ListVolumesResponse{NextToken: next}
	for i := from; i < to; i++ {
		resp.Entries = append(resp.Entries, &csi.ListVolumesResponse_Entry{Volume: &csi.Volume{VolumeId: fmt.Sprint("vol-", i)}})
	}
	return resp, nil
}

func (c *pagedController) ListSnapshots(_ context.Context, req *csi.ListSnapshotsRequest, _ ...grpc.CallOption) (*csi.ListSnapshotsResponse, error) {
	from, to, next, err := c.page(req.GetMaxEntries(), req.GetStartingToken())
	if err != nil {
		return nil, err
	}
	resp := &csi.ListSnapshotsResponse{NextToken: next}
	for i := from; i < to; i++ {
		resp.Entries = append(resp.Entries, &csi.ListSnapshotsResponse_Entry{Snapshot: &csi.Snapshot{SnapshotId: fmt.Sprint("snap-", i)}})
	}
	return resp, nil
}

func (c *pagedController) ControllerListVolumeHealth(_ context.Context, req *csi.ControllerListVolumeHealthRequest, _ ...grpc.CallOption) (*csi.ControllerListVolumeHealthResponse, error) {
	from, to, next, err := c.page(req.GetMaxEntries(), req.GetStartingToken())
	if err != nil {
		return nil, err
	}
	resp := &csi.ControllerListVolumeHealthResponse{NextToken: next}
	for i := from; i < to; i++ {
		resp.Entries = append(resp.Entries, &csi.VolumeHealth{VolumeId: fmt.Sprint("vol-", i)})
	}
	return resp, nil
}

// A driver holding more entries than one gRPC message carries is listed
// whole, a page of listPage at a time (the 1,000-node cluster run failed
// its invariant check on a 4.9 MB ListVolumes answer).
func TestListsAskForPagesAndFollowThemToTheEnd(t *testing.T) {
	const n = 2*listPage + 1
	ctx := context.Background()
	for _, list := range []struct {
		name, prefix string
		call         func(*Endpoint) ([]string, error)
	}{
		{"ListVolumes", "vol-", func(e *Endpoint) ([]string, error) {
			entries, err := e.ListVolumes(ctx)
			var ids []string
			for _, v := range entries {
				ids = append(ids, v.GetVolume().GetVolumeId())
			}
			return ids, err
		}},
		{"ListSnapshots", "snap-", func(e *Endpoint) ([]string, error) {
			snaps, err := e.ListSnapshots(ctx, &csi.ListSnapshotsRequest{StartingToken: "stale", MaxEntries: 5 * listPage})
			var ids []string
			for _, s := range snaps {
				ids = append(ids, s.GetSnapshotId())
			}
			return ids, err
		}},
		{"ControllerListVolumeHealth", "vol-", func(e *Endpoint) ([]string, error) {
			entries, err := e.ControllerListVolumeHealth(ctx)
			var ids []string
			for _, h := range entries {
				ids = append(ids, h.GetVolumeId())
			}
			return ids, err
		}},
	} {
		t.Run(list.name, func(t *testing.T) {
			c := &pagedController{n: n, tooMany: listPage + listPage/2}
			ids, err := list.call(&Endpoint{controller: c})
			if err != nil {
				t.Fatal(err)
			}
			if len(ids) != n {
				t.Fatalf("listed %d entries, want %d", len(ids), n)
			}
			for i, id := range ids {
				if id != fmt.Sprint(list.prefix, i) {
					t.Fatalf("entry %d is %s: pages out of order", i, id)
				}
			}
			if len(c.asked) != 3 {
				t.Errorf("%d calls, want 3 pages", len(c.asked))
			}
			for _, asked := range c.asked {
				if asked != listPage {
					t.Errorf("asked for pages of %d, want %d", asked, listPage)
				}
			}
		})
	}
}
