package hostpath

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/volplane/volplane/internal/keyedmutex"
)

// TestConcurrentCreatesNeverOvercommit races more volume creations than the
// capacity holds: exactly as many as fit succeed, the rest are refused.
func TestConcurrentCreatesNeverOvercommit(t *testing.T) {
	cfg := testConfig(shortTempDir(t), NewFakeMounter())
	cfg.Capacity = 5 << 30
	r := startDriver(t, cfg)
	codesSeen := raceCalls(20, func(i int) error {
		_, err := r.controller.CreateVolume(context.Background(), createReq(fmt.Sprintf("pvc-%d", i)))
		return err
	})
	if codesSeen[codes.OK] != 5 || codesSeen[codes.ResourceExhausted] != 15 {
		t.Fatalf("outcomes %v, want 5 OK and 15 ResourceExhausted", codesSeen)
	}
}

// TestConcurrentAttachesKeepTheLimit races attachments of more volumes than
// the node may have.
func TestConcurrentAttachesKeepTheLimit(t *testing.T) {
	ctx := context.Background()
	r := startDriver(t, testConfig(shortTempDir(t), NewFakeMounter()))
	var ids []string
	for i := range 8 {
		vol := must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(ctx, createReq(fmt.Sprintf("pvc-%d", i)))).Volume
		ids = append(ids, vol.VolumeId)
	}
	codesSeen := raceCalls(len(ids), func(i int) error {
		_, err := r.controller.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{
			VolumeId: ids[i], NodeId: testNode, VolumeCapability: mountCap(),
		})
		return err
	})
	if limit := int(r.cfg.MaxVolumesPerNode); codesSeen[codes.OK] != limit || codesSeen[codes.ResourceExhausted] != len(ids)-limit {
		t.Fatalf("outcomes %v, want %d OK and the rest ResourceExhausted", codesSeen, limit)
	}
}

// TestRepeatedCreatesAgree races one CreateVolume request against itself:
// every call returns the same volume.
func TestRepeatedCreatesAgree(t *testing.T) {
	r := startDriver(t, testConfig(shortTempDir(t), NewFakeMounter()))
	var mu sync.Mutex
	ids := map[string]bool{}
	codesSeen := raceCalls(10, func(int) error {
		resp, err := r.controller.CreateVolume(context.Background(), createReq("same"))
		if err == nil {
			mu.Lock()
			ids[resp.Volume.VolumeId] = true
			mu.Unlock()
		}
		return err
	})
	if codesSeen[codes.OK] != 10 || len(ids) != 1 {
		t.Fatalf("outcomes %v with volume IDs %v, want 10 OK with one ID", codesSeen, ids)
	}
}

func raceCalls(n int, call func(i int) error) map[codes.Code]int {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seen = map[codes.Code]int{}
	)
	for i := range n {
		wg.Go(func() {
			code := status.Code(call(i))
			mu.Lock()
			seen[code]++
			mu.Unlock()
		})
	}
	wg.Wait()
	return seen
}

func TestKeyedMutexGivesUpWithTheContext(t *testing.T) {
	k := &Driver{locks: keyedmutex.New()}
	unlock, err := k.lock(context.Background(), "b", "a", "a", "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = k.lock(ctx, "c", "a")
	wantCode(t, err, codes.Aborted)

	// "c" was released when the call gave up, and "a" frees on unlock.
	unlockC, err := k.lock(context.Background(), "c")
	if err != nil {
		t.Fatal(err)
	}
	unlockC()
	unlock()
	unlockA, err := k.lock(context.Background(), "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	unlockA()
	if n := k.locks.Len(); n != 0 {
		t.Errorf("%d keys left behind", n)
	}
}
