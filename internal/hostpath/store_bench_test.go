package hostpath

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// BenchmarkStoreUpdate is one volume created and deleted (two updates of
// the store, each persisted) in a state that already holds n volumes. The
// fsync sub-benchmarks write to the test's temp dir; tmpfs ones to
// /dev/shm, where fsync costs nothing, to show what is left without it.
func BenchmarkStoreUpdate(b *testing.B) {
	for _, fs := range []string{"fsync", "tmpfs"} {
		for _, n := range []int{1_000, 10_000, 100_000} {
			b.Run(fmt.Sprintf("%s/volumes=%d", fs, n), func(b *testing.B) {
				s := benchStore(b, benchDir(b, fs), n)
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					v := benchVolume(fmt.Sprintf("vol-bench-%d", i))
					if err := s.update(func(st *state) error { st.Volumes.Put(v.ID, v); return nil }); err != nil {
						b.Fatal(err)
					}
					if err := s.update(func(st *state) error { st.Volumes.Delete(v.ID); return nil }); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkStoreLoad is a start of the driver's store on a data dir that
// holds 100,000 volumes: in a snapshot alone, and in a snapshot with a
// journal about to be compacted (half as long as the snapshot: the most a
// start replays). Built on tmpfs, to build fast; a start reads from the
// page cache either way.
func BenchmarkStoreLoad(b *testing.B) {
	for _, journal := range []bool{false, true} {
		b.Run(fmt.Sprintf("volumes=100000/journal=%v", journal), func(b *testing.B) {
			dir := benchDir(b, "tmpfs")
			s := benchStore(b, dir, 100_000)
			for i := 0; journal && s.journalSize < s.snapshotSize/2-4<<10; i++ {
				id := fmt.Sprintf("vol-%08d", i%100_000)
				if err := s.update(func(st *state) error { st.editVolume(id).Name = fmt.Sprint(i); return nil }); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(s.snapshotSize), "snapshot-bytes")
			b.ReportMetric(float64(s.journalSize), "journal-bytes")
			s.close()
			b.ResetTimer()
			for range b.N {
				s, _, err := loadStore(filepath.Join(dir, "state.json"))
				if err != nil {
					b.Fatal(err)
				}
				s.close()
			}
		})
	}
}

// BenchmarkStoreCompact is one update that writes a new snapshot of
// 100,000 volumes (the journal has outgrown the old one): its cost,
// divided by the updates a journal takes before it, is what compaction
// adds to each.
func BenchmarkStoreCompact(b *testing.B) {
	s := benchStore(b, benchDir(b, "fsync"), 100_000)
	defer s.close()
	v := benchVolume("vol-bench")
	b.ResetTimer()
	for range b.N {
		s.dropJournal()
		if err := s.update(func(st *state) error { st.Volumes.Put(v.ID, v); return nil }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(s.snapshotSize), "snapshot-bytes")
}

func benchDir(b *testing.B, fs string) string {
	if fs == "fsync" {
		return b.TempDir()
	}
	dir, err := os.MkdirTemp("/dev/shm", "statebench-")
	if err != nil {
		b.Skip("no /dev/shm:", err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// benchStore is a store in dir holding n volumes, each staged and
// published once, as a running driver's are.
func benchStore(b *testing.B, dir string, n int) *store {
	return benchStoreOf(b, dir, n, benchVolume)
}

func benchStoreOf(b *testing.B, dir string, n int, volumeOf func(id string) *volume) *store {
	b.Helper()
	s, _, err := loadStore(filepath.Join(dir, "state.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.close)
	err = s.update(func(st *state) error {
		for i := range n {
			v := volumeOf(fmt.Sprintf("vol-%08d", i))
			st.Volumes.Put(v.ID, v)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func benchVolume(id string) *volume {
	return &volume{ID: id, Name: "pvc-" + id, CapacityBytes: 1 << 30, AccessType: accessMount, NodeID: "node-1",
		CreatedAt:    time.Unix(1_700_000_000, 0).UTC(),
		Stagings:     map[string]staging{"node-1": {Path: "/var/lib/kubelet/plugins/staging/" + id}},
		Publications: map[string]publication{"/var/lib/kubelet/pods/p/volumes/" + id: {Node: "node-1", Mode: "SINGLE_NODE_WRITER"}},
	}
}

// BenchmarkCreateVolume is one CreateVolume and one DeleteVolume through
// the driver's socket, with n volumes recorded already: the whole call
// (request checks, data directory, state), not the store alone.
func BenchmarkCreateVolume(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("volumes=%d", n), func(b *testing.B) {
			ctx := context.Background()
			r := benchDriver(b, n)
			b.ResetTimer()
			for i := range b.N {
				vol, err := r.controller.CreateVolume(ctx, createReq(fmt.Sprintf("bench-%d", i)))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := r.controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: vol.Volume.VolumeId}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkListVolumes is a whole ListVolumes listing of n volumes through
// the driver's socket, 1,000 a page as volplane's client asks: its cost
// per volume listed should not grow with n.
func BenchmarkListVolumes(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("volumes=%d", n), func(b *testing.B) {
			ctx := context.Background()
			r := benchDriver(b, n)
			b.ResetTimer()
			for range b.N {
				listed, token := 0, ""
				for {
					resp, err := r.controller.ListVolumes(ctx, &csi.ListVolumesRequest{MaxEntries: 1000, StartingToken: token})
					if err != nil {
						b.Fatal(err)
					}
					listed += len(resp.Entries)
					if token = resp.NextToken; token == "" {
						break
					}
				}
				if listed != n {
					b.Fatalf("listed %d volumes, want %d", listed, n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/volume")
		})
	}
}

// benchDriver is a running driver whose state holds n volumes already,
// each with an ID the driver could have issued.
func benchDriver(b *testing.B, n int) *runningDriver {
	b.Helper()
	cfg := testConfig(shortTempDir(b), NewFakeMounter())
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		b.Fatal(err)
	}
	benchStoreOf(b, cfg.DataDir, n, func(id string) *volume {
		return &volume{ID: volumeIDFor(id), Name: "pvc-" + id, CapacityBytes: 1 << 20, AccessType: accessMount, NodeID: testNode,
			CreatedAt: time.Unix(1_700_000_000, 0).UTC()}
	}).close()
	return startDriver(b, cfg)
}
