package hostpath

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
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
// holds 100,000 volumes.
func BenchmarkStoreLoad(b *testing.B) {
	dir := benchDir(b, "fsync")
	benchStore(b, dir, 100_000)
	b.ResetTimer()
	for range b.N {
		if _, _, err := loadStore(filepath.Join(dir, "state.json")); err != nil {
			b.Fatal(err)
		}
	}
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
	b.Helper()
	s, _, err := loadStore(filepath.Join(dir, "state.json"))
	if err != nil {
		b.Fatal(err)
	}
	err = s.update(func(st *state) error {
		for i := range n {
			v := benchVolume(fmt.Sprintf("vol-%08d", i))
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
