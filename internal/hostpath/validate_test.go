package hostpath

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

func TestCheckName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"pvc-0b5e0f4e-8d6c-4b1e-9a57-2f3c5c6d7e8f", true},
		{"snapshot-1", true},
		{"naïve name with spaces", true},
		{"a.b", true},
		{strings.Repeat("a", maxNameBytes), true},
		{"", false},
		{strings.Repeat("a", maxNameBytes+1), false},
		{strings.Repeat("é", maxNameBytes/2+1), false}, // 130 bytes, 65 runes
		{"a/b", false},
		{"/abs", false},
		{`a\b`, false},
		{"..", false},
		{"a..b", false},
		{"../../etc/passwd", false},
		{"nul\x00byte", false},
		{"new\nline", false},
		{"tab\t", false},
		{"del\x7f", false},
		{"\xff\xfe", false},
	} {
		err := checkName("volume name", tc.name)
		if tc.ok && err != nil {
			t.Errorf("checkName(%q) = %v, want it accepted", tc.name, err)
		}
		if !tc.ok {
			wantCode(t, err, codes.InvalidArgument)
		}
	}
}

func TestCheckNodePath(t *testing.T) {
	const dataDir = "/var/lib/volplane/hostpath"
	for _, tc := range []struct {
		path, want string
		ok         bool
	}{
		{"/var/lib/kubelet/pods/x/volumes/kubernetes.io~csi/pv/mount", "/var/lib/kubelet/pods/x/volumes/kubernetes.io~csi/pv/mount", true},
		{"/tmp/a/../b/", "/tmp/b", true},
		{"/var/lib/volplane/hostpath-other/x", "/var/lib/volplane/hostpath-other/x", true},
		{"", "", false},
		{"relative/path", "", false},
		{"/tmp/nul\x00", "", false},
		{dataDir, "", false},
		{dataDir + "/volumes/vol-1", "", false},
		{"/tmp/../var/lib/volplane/hostpath/state.json", "", false},
		{"/var/lib", "", false}, // mounting over a parent would hide the data dir
		{"/" + strings.Repeat("a", maxPathBytes), "", false},
	} {
		got, err := checkNodePath("target path", tc.path, dataDir)
		if !tc.ok {
			wantCode(t, err, codes.InvalidArgument)
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("checkNodePath(%q) = %q, %v, want %q", tc.path, got, err, tc.want)
		}
	}
}

func TestRequestedBytes(t *testing.T) {
	for _, tc := range []struct {
		r    *csi.CapacityRange
		want int64
		code codes.Code
	}{
		{nil, defaultVolumeBytes, codes.OK},
		{&csi.CapacityRange{}, defaultVolumeBytes, codes.OK},
		{&csi.CapacityRange{RequiredBytes: 5}, 5, codes.OK},
		{&csi.CapacityRange{RequiredBytes: 5, LimitBytes: 5}, 5, codes.OK},
		{&csi.CapacityRange{LimitBytes: 1 << 20}, 1 << 20, codes.OK},
		{&csi.CapacityRange{LimitBytes: 1 << 40}, defaultVolumeBytes, codes.OK},
		{&csi.CapacityRange{RequiredBytes: maxVolumeBytes}, maxVolumeBytes, codes.OK},
		{&csi.CapacityRange{RequiredBytes: -1}, 0, codes.InvalidArgument},
		{&csi.CapacityRange{LimitBytes: -1}, 0, codes.InvalidArgument},
		{&csi.CapacityRange{RequiredBytes: 10, LimitBytes: 5}, 0, codes.OutOfRange},
		{&csi.CapacityRange{RequiredBytes: maxVolumeBytes + 1}, 0, codes.OutOfRange},
		{&csi.CapacityRange{RequiredBytes: 1<<63 - 1}, 0, codes.OutOfRange},
	} {
		got, err := requestedBytes(tc.r)
		if tc.code != codes.OK {
			wantCode(t, err, tc.code)
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("requestedBytes(%v) = %d, %v, want %d", tc.r, got, err, tc.want)
		}
	}
}

func TestCheckCapabilities(t *testing.T) {
	multi := mountCap()
	multi.AccessMode.Mode = csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
	noType := mountCap()
	noType.AccessType = nil
	noMode := blockCap()
	noMode.AccessMode = nil
	for _, tc := range []struct {
		name string
		caps []*csi.VolumeCapability
		want accessType
	}{
		{"mount", []*csi.VolumeCapability{mountCap()}, accessMount},
		{"block", []*csi.VolumeCapability{blockCap(), blockCap()}, accessBlock},
		{"none", nil, ""},
		{"nil entry", []*csi.VolumeCapability{nil}, ""},
		{"both access types", []*csi.VolumeCapability{mountCap(), blockCap()}, ""},
		{"multi-node mode", []*csi.VolumeCapability{multi}, ""},
		{"no access type", []*csi.VolumeCapability{noType}, ""},
		{"no access mode", []*csi.VolumeCapability{noMode}, ""},
	} {
		got, err := checkCapabilities(tc.caps, false)
		if tc.want == "" {
			wantCode(t, err, codes.InvalidArgument)
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: got %q, %v, want %q", tc.name, got, err, tc.want)
		}
	}
}

func TestIssuedIDs(t *testing.T) {
	id := volumeIDFor("pvc-1")
	if id != volumeIDFor("pvc-1") {
		t.Fatal("volume IDs are not deterministic")
	}
	if !isIssuedID(volumeIDPrefix, id) || isIssuedID(snapshotIDPrefix, id) {
		t.Fatalf("%q is not recognized as a volume ID only", id)
	}
	for _, bad := range []string{"", "vol-", "vol-../../etc", id + "0", strings.ToUpper(id), "fake-vol-id", id[:len(id)-1] + "/"} {
		if isIssuedID(volumeIDPrefix, bad) {
			t.Errorf("%q is taken for an issued volume ID", bad)
		}
	}
}

func TestPageTokens(t *testing.T) {
	ids := []string{"vol-c", "vol-a", "vol-e", "vol-b", "vol-d"}
	var got []string
	token := ""
	for range 10 {
		pageIDs, next := page(slices.Values(ids), token, 2)
		got = append(got, pageIDs...)
		if next == "" {
			break
		}
		token = next
	}
	if want := []string{"vol-a", "vol-b", "vol-c", "vol-d", "vol-e"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("pages gave %v, want %v", got, want)
	}
	// A token whose entry was deleted meanwhile starts at the next one.
	if pageIDs, _ := page(slices.Values([]string{"vol-a", "vol-d"}), "vol-c", 0); strings.Join(pageIDs, ",") != "vol-d" {
		t.Errorf("page after a deleted token = %v, want [vol-d]", pageIDs)
	}
	wantCode(t, checkPageToken("invalid-token", volumeIDPrefix), codes.Aborted)
	wantCode(t, checkPageToken(snapshotIDFor("x"), volumeIDPrefix), codes.Aborted)
	if err := checkPageToken(volumeIDFor("x"), volumeIDPrefix); err != nil {
		t.Errorf("a volume ID is refused as a token: %v", err)
	}
}

// page agrees with sorting every ID and cutting at the token, for IDs in
// any order, any page size and tokens inside and outside the set.
func TestPageIsTheSortedCut(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for range 500 {
		n := r.IntN(40)
		set := map[string]bool{}
		for range n {
			set[fmt.Sprintf("vol-%03d", r.IntN(60))] = true
		}
		ids := slices.Collect(maps.Keys(set))
		r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		token := ""
		if r.IntN(4) > 0 {
			token = fmt.Sprintf("vol-%03d", r.IntN(62))
		}
		maxEntries := int32(r.IntN(n + 3))

		sorted := slices.Sorted(slices.Values(ids))
		start, _ := slices.BinarySearch(sorted, token)
		want, wantNext := sorted[start:], ""
		if maxEntries > 0 && len(want) > int(maxEntries) {
			want, wantNext = want[:maxEntries], want[maxEntries]
		}
		got, next := page(slices.Values(ids), token, maxEntries)
		if !slices.Equal(got, want) || next != wantNext {
			t.Fatalf("page(%v, %q, %d) = %v, %q; want %v, %q", ids, token, maxEntries, got, next, want, wantNext)
		}
	}
}

// A listing cut from the sorted IDs its first page saw gives, page by
// page, what page gives over the volumes as they are then, while they stay
// the same and after they change between pages.
func TestListingAcrossChangesIsThePageOfTheVolumesThen(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	var l listedIDs
	id := func() string { return fmt.Sprintf("vol-%03d", r.IntN(50)) }
	for range 300 {
		var vols table[volume]
		for range r.IntN(30) {
			v := id()
			vols.Put(v, &volume{ID: v})
		}
		maxEntries, token := int32(r.IntN(6)), ""
		for range 100 {
			if token != "" && r.IntN(3) == 0 {
				changed := vols
				if v := id(); r.IntN(2) == 0 {
					changed.Put(v, &volume{ID: v})
				} else {
					changed.Delete(v)
				}
				vols = changed
			}
			want, wantNext := page(vols.IDs(), token, maxEntries)
			got, next := l.page(&vols, token, maxEntries)
			if !slices.Equal(got, want) || next != wantNext {
				t.Fatalf("page from %q of %d: %v, %q; want %v, %q", token, maxEntries, got, next, want, wantNext)
			}
			if token = next; token == "" {
				break
			}
		}
	}
}
