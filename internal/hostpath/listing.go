package hostpath

import (
	"container/heap"
	"context"
	"iter"
	"maps"
	"os"
	"slices"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// page returns one page of ids (in any order) in sorted order and the token
// of the next page. A token is the ID of the first entry to return; if that
// entry was deleted meanwhile, the page starts at the next ID, so nothing is
// listed twice. With maxEntries it keeps only the smallest maxEntries+1 IDs
// from the token on, in a heap: a listing of n IDs in pages of m costs
// O(n log m) a page, not a sort of all n (100,000 volumes listed 1,000 at a
// time sorted 100,000 IDs a hundred times).
func page(ids iter.Seq[string], token string, maxEntries int32) (pageIDs []string, next string) {
	if maxEntries <= 0 {
		return cut(slices.Sorted(ids), token, 0)
	}
	limit := int(maxEntries) + 1
	h := make(largestFirst, 0, min(limit, 1024))
	for id := range ids {
		switch {
		case id < token:
		case len(h) < limit:
			if h = append(h, id); len(h) == limit {
				heap.Init(&h)
			}
		case id < h[0]:
			h[0] = id
			heap.Fix(&h, 0)
		}
	}
	slices.Sort(h)
	return cut(h, token, maxEntries)
}

// cut is the page of sorted IDs from token on: at most maxEntries (0:
// all) and the ID after them, "" at the end.
func cut(sorted []string, token string, maxEntries int32) (pageIDs []string, next string) {
	start, _ := slices.BinarySearch(sorted, token)
	sorted = sorted[start:]
	if maxEntries > 0 && len(sorted) > int(maxEntries) {
		return sorted[:maxEntries], sorted[maxEntries]
	}
	return sorted, ""
}

// listedIDs is the sorted IDs of the volume table a listing was last
// started on (its first page), kept while the volumes stay that table: the
// pages of a listing nothing changes under are cut from one sort, binary
// searched, and a page after a change is selected by page.
type listedIDs struct {
	mu   sync.Mutex
	root *tnode[volume]
	ids  []string
}

func (l *listedIDs) page(t *table[volume], token string, maxEntries int32) (pageIDs []string, next string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if token == "" {
		l.root, l.ids = t.root, slices.Sorted(t.IDs())
	}
	if l.root != t.root {
		return page(t.IDs(), token, maxEntries)
	}
	pageIDs, next = cut(l.ids, token, maxEntries)
	return slices.Clone(pageIDs), next
}

// largestFirst is a heap of IDs whose root is the largest; page fills it
// by append and heap.Init, so Push and Pop are never called.
type largestFirst []string

func (h largestFirst) Len() int           { return len(h) }
func (h largestFirst) Less(i, j int) bool { return h[i] > h[j] }
func (h largestFirst) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *largestFirst) Push(x any)        { *h = append(*h, x.(string)) }
func (h *largestFirst) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// volumePage is one page of a volume listing (ListVolumes,
// ControllerListVolumeHealth): its max_entries and starting_token checked,
// the volume IDs of the page, the next token, and the state they are
// read from.
func (d *Driver) volumePage(maxEntries int32, token string) (st *state, ids []string, next string, err error) {
	if err := checkMaxEntries(maxEntries); err != nil {
		return nil, nil, "", err
	}
	if err := checkPageToken(token, volumeIDPrefix); err != nil {
		return nil, nil, "", err
	}
	st = d.store.current()
	ids, next = d.listed.page(&st.Volumes, token, maxEntries)
	return st, ids, next, nil
}

func (s *controllerServer) ListVolumes(_ context.Context, req *csi.ListVolumesRequest) (*csi.ListVolumesResponse, error) {
	st, ids, next, err := s.d.volumePage(req.GetMaxEntries(), req.GetStartingToken())
	if err != nil {
		return nil, err
	}
	resp := &csi.ListVolumesResponse{NextToken: next}
	for _, id := range ids {
		v := st.Volumes.Get(id)
		resp.Entries = append(resp.Entries, &csi.ListVolumesResponse_Entry{
			Volume: s.d.csiVolume(v),
			Status: &csi.ListVolumesResponse_VolumeStatus{PublishedNodeIds: s.d.publishedNodes(v)},
		})
	}
	return resp, nil
}

func (s *controllerServer) ControllerGetVolume(_ context.Context, req *csi.ControllerGetVolumeRequest) (*csi.ControllerGetVolumeResponse, error) {
	if err := checkName("volume ID", req.GetVolumeId()); err != nil {
		return nil, err
	}
	v := s.d.store.current().Volumes.Get(req.GetVolumeId())
	if v == nil {
		return nil, status.Errorf(codes.NotFound, "volume %q does not exist", req.GetVolumeId())
	}
	return &csi.ControllerGetVolumeResponse{
		Volume: s.d.csiVolume(v),
		Status: &csi.ControllerGetVolumeResponse_VolumeStatus{PublishedNodeIds: s.d.publishedNodes(v)},
	}, nil
}

// publishedNodes is the nodes a volume is attached to, when attaching is on.
func (d *Driver) publishedNodes(v *volume) []string {
	if !d.cfg.AttachRequired {
		return nil
	}
	return slices.Sorted(maps.Keys(v.Attachments))
}

// condition is a volume's health as the driver sees it: Abnormal with its
// CSI status and CamelCase reason (health.go's closed set), or normal with
// what was checked.
type condition struct {
	Abnormal bool
	Status   csi.VolumeHealthErrorType
	Reason   string
	Message  string
}

func (d *Driver) dataCondition(v *volume) condition {
	path, err := d.disk.volumePath(v.ID, v.AccessType)
	if err == nil {
		_, err = os.Stat(path)
	}
	if err != nil {
		return condition{Abnormal: true, Status: csi.VolumeHealthErrorType_INACCESSIBLE, Reason: ReasonDataMissing,
			Message: "the volume's data is missing: " + err.Error()}
	}
	return condition{Message: "the volume's data is in place"}
}

// GetCapacity reports the free part of Config.Capacity, or 0 for
// capabilities or a topology this driver cannot serve.
func (s *controllerServer) GetCapacity(_ context.Context, req *csi.GetCapacityRequest) (*csi.GetCapacityResponse, error) {
	for _, c := range req.GetVolumeCapabilities() {
		if _, err := accessTypeOf(c); err != nil {
			return nil, err
		}
		if capabilityProblem(c, s.d.cfg.Network) != "" {
			return &csi.GetCapacityResponse{}, nil
		}
	}
	if t := req.GetAccessibleTopology(); t != nil && !s.d.cfg.Network && !s.d.isThisNode(t) {
		return &csi.GetCapacityResponse{}, nil
	}
	free := s.d.store.free(s.d.cfg.Capacity)
	return &csi.GetCapacityResponse{
		AvailableCapacity: free,
		MaximumVolumeSize: wrapperspb.Int64(min(free, maxVolumeBytes)),
	}, nil
}
