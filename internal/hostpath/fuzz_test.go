package hostpath

import (
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The fuzz targets of this file feed the driver's checks of what a request
// carries (from a CO, so from whatever a namespace user wrote into a claim,
// a VolumeAttributesClass parameter or a pod) with arbitrary values. Their
// seed corpora under testdata/fuzz run as ordinary tests.

// wantInvalidArgument fails unless err is nil or an InvalidArgument status:
// a request's mistake is never the driver's Internal error.
func wantInvalidArgument(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil && status.Code(err) != codes.InvalidArgument {
		t.Fatalf("%s: %v, want InvalidArgument", what, err)
	}
}

// isStrictlyBelow reports whether the clean path p is root or below it,
// by the bytes of the paths, not by filepath.Rel.
func isStrictlyBelow(root, p string) bool {
	return p == root || strings.HasPrefix(p, strings.TrimSuffix(root, "/")+"/")
}

// FuzzValidateNames checks, for any string, that validation never panics,
// that what it accepts has the documented properties, and that no accepted
// name, no ID and no node path resolves to a place it must not: an
// accepted name joined under a directory is an entry of it, only IDs of
// the shape the driver issues become paths (each its own entry of the
// volumes or snapshots directory), and a node path is neither inside the
// data dir nor contains it, judged by the paths' bytes rather than by the
// driver's own within.
func FuzzValidateNames(f *testing.F) {
	for _, seed := range []string{
		"pvc-1234", "", ".", "..", "../etc", "a/b", `a\b`, "\x00", "a\x00b", "\n", "\xff", "naïve",
		strings.Repeat("a", 128), strings.Repeat("a", 129), volumeIDFor("x"), snapshotIDFor("x") + ".img",
		"vol-../../../etc", "vol-0123456789ABCDEF0123456789abcdef",
		"/var/lib/kubelet/pods/x/mount", "/data/hp/volumes", "/data/hp/../hp/state.json", "/data/hp2", "/", "//data//hp//",
	} {
		f.Add(seed)
	}
	disk := layout{root: "/data/hp"}
	f.Fuzz(func(t *testing.T, s string) {
		err := checkName("name", s)
		wantInvalidArgument(t, "checkName", err)
		if err == nil {
			assertAcceptableName(t, s)
			if p := filepath.Join(disk.root, s); p != disk.root && filepath.Dir(p) != disk.root {
				t.Fatalf("accepted %q, which joined under %s is %s", s, disk.root, p)
			}
			for _, tp := range []accessType{accessMount, accessBlock} {
				assertDataPath(t, disk.volumesDir(), volumeIDFor(s), tp, disk.volumePath)
				assertDataPath(t, disk.snapshotsDir(), snapshotIDFor(s), tp, disk.snapshotPath)
			}
		}
		// Any string used as an ID either is refused or is its own entry.
		for _, tp := range []accessType{accessMount, accessBlock} {
			want := s
			if tp == accessBlock {
				want += blockSuffix
			}
			if p, err := disk.volumePath(s, tp); err == nil && (p != filepath.Join(disk.volumesDir(), want) || nameProblem(s) != "") {
				t.Fatalf("ID %q resolves to %q, not its own entry of %s", s, p, disk.volumesDir())
			}
			if p, err := disk.snapshotPath(s, tp); err == nil && (p != filepath.Join(disk.snapshotsDir(), want) || nameProblem(s) != "") {
				t.Fatalf("ID %q resolves to %q, not its own entry of %s", s, p, disk.snapshotsDir())
			}
		}
		p, err := checkNodePath("target path", s, disk.root)
		wantInvalidArgument(t, "checkNodePath", err)
		if err != nil {
			return
		}
		switch {
		case !filepath.IsAbs(p) || p != filepath.Clean(s):
			t.Fatalf("node path %q comes back as %q, want it absolute and clean", s, p)
		case isStrictlyBelow(disk.root, p) || isStrictlyBelow(p, disk.root):
			t.Fatalf("node path %q accepted as %q, which touches the data dir %s", s, p, disk.root)
		}
	})
}

func assertAcceptableName(t *testing.T, s string) {
	t.Helper()
	switch {
	case s == "" || len(s) > maxNameBytes:
		t.Fatalf("accepted %q of %d bytes", s, len(s))
	case !utf8.ValidString(s):
		t.Fatalf("accepted invalid UTF-8 %q", s)
	case strings.ContainsAny(s, `/\`) || strings.Contains(s, ".."):
		t.Fatalf("accepted %q, which could walk a path", s)
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		t.Fatalf("accepted %q with a control character", s)
	}
}

func assertDataPath(t *testing.T, dir, id string, tp accessType, resolve func(string, accessType) (string, error)) {
	t.Helper()
	p, err := resolve(id, tp)
	if err != nil {
		t.Fatalf("issued ID %q does not resolve: %v", id, err)
	}
	if filepath.Dir(p) != dir || !within(dir, p) || p == dir {
		t.Fatalf("issued ID %q resolves to %q, outside %s", id, p, dir)
	}
}

// A capacity range is refused with a reason or gives a size that fits it
// and the largest volume served.
func FuzzRequestedBytes(f *testing.F) {
	f.Add(int64(0), int64(0))
	f.Add(int64(1<<30), int64(0))
	f.Add(int64(0), int64(1))
	f.Add(int64(-1), int64(1))
	f.Add(maxVolumeBytes+1, int64(0))
	f.Add(int64(5), int64(4))
	f.Fuzz(func(t *testing.T, required, limit int64) {
		r := &csi.CapacityRange{RequiredBytes: required, LimitBytes: limit}
		size, err := requestedBytes(r)
		if err != nil {
			if c := status.Code(err); c != codes.InvalidArgument && c != codes.OutOfRange {
				t.Fatalf("range %v: %v, want InvalidArgument or OutOfRange", r, err)
			}
			return
		}
		if size <= 0 || size > maxVolumeBytes || !fitsRange(size, r) {
			t.Fatalf("range %v gives %d bytes, outside it or outside (0, %d]", r, size, maxVolumeBytes)
		}
	})
}

// Mutable parameters (a VolumeAttributesClass's, which a namespace user
// names on a claim) are accepted only as documented, and laying them over
// a volume's keeps every other key and changes nothing when nothing differs.
func FuzzMutableParameters(f *testing.F) {
	f.Add(ParamIOPS, "100", ParamTier, TierStandard)
	f.Add(ParamIOPS, " 5", ParamTier, "gold")
	f.Add(ParamIOPS, "+100", ParamIOPS, "0")
	f.Add("other", "x", ParamTier, TierPremium)
	f.Fuzz(func(t *testing.T, key, value, curKey, curValue string) {
		params := map[string]string{key: value}
		err := CheckMutableParameters(params)
		wantInvalidArgument(t, "CheckMutableParameters", err)
		if err == nil {
			switch key {
			case ParamIOPS:
				n, perr := strconv.Atoi(value)
				if perr != nil || n < MinIOPS || n > MaxIOPS || strings.TrimSpace(value) != value {
					t.Fatalf("accepted iops %q", value)
				}
			case ParamTier:
				if value != TierStandard && value != TierPremium {
					t.Fatalf("accepted tier %q", value)
				}
			default:
				t.Fatalf("accepted unknown key %q", key)
			}
		}
		current := map[string]string{curKey: curValue}
		before := maps.Clone(current)
		next := withMutableParameters(current, params)
		if !maps.Equal(current, before) {
			t.Fatalf("laying %v over %v changed the current map", params, before)
		}
		if next == nil {
			if v, ok := current[key]; !ok || v != value {
				t.Fatalf("laying %v over %v: nothing changes, want %s=%q", params, current, key, value)
			}
			return
		}
		if next[key] != value || (curKey != key && next[curKey] != curValue) || len(next) > 2 {
			t.Fatalf("laying %v over %v gives %v", params, current, next)
		}
	})
}

// A node path is resolved before it is used: whatever the symlinks on its
// way, the place the driver would act on is neither inside the data dir nor
// contains it, and a path to mount onto is never itself a symlink.
func FuzzNodePath(f *testing.F) {
	base, err := filepath.EvalSymlinks(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	dataDir := filepath.Join(base, "data")
	for _, dir := range []string{dataDir, filepath.Join(dataDir, "volumes"), filepath.Join(base, "pods", "p1")} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			f.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"pods/to-data": dataDir, "pods/to-volumes": "../data/volumes", "pods/up": "..", "pods/self": ".",
		"pods/dangling": "nowhere", "pods/p1/to-base": base, "pods/loop": "loop",
	} {
		if err := os.Symlink(target, filepath.Join(base, link)); err != nil {
			f.Fatal(err)
		}
	}
	d := &Driver{cfg: Config{DataDir: dataDir}, realDataDir: dataDir}
	for _, rel := range []string{"pods/p1/mount", "pods/to-data/volumes/x", "pods/to-volumes", "pods/up/data/x", "pods/self/self/to-data",
		"pods/p1/to-base/data/volumes", "pods/dangling/x", "pods/loop/x", "pods/p1/../../data", "pods/up", "pods"} {
		f.Add(rel)
	}
	f.Fuzz(func(t *testing.T, rel string) {
		p := base + "/" + rel
		np, err := d.nodePath("target path", p)
		if err != nil {
			if c := status.Code(err); c != codes.InvalidArgument && c != codes.FailedPrecondition {
				t.Fatalf("path %q: %v, want InvalidArgument or FailedPrecondition", p, err)
			}
			return
		}
		if np.given != filepath.Clean(p) {
			t.Fatalf("path %q is given as %q, want it clean", p, np.given)
		}
		if isStrictlyBelow(dataDir, np.real) || isStrictlyBelow(np.real, dataDir) {
			t.Fatalf("path %q resolves to %q, inside the data dir %s or containing it", p, np.real, dataDir)
		}
		if _, err := d.newNodePath("target path", p); err == nil {
			if fi, err := os.Lstat(np.given); err == nil && fi.Mode()&os.ModeSymlink != 0 {
				t.Fatalf("path %q is a symlink, yet accepted to mount onto", p)
			}
		}
	})
}
