package hostpath

import (
	"context"
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestMutableParametersAreChecked(t *testing.T) {
	for _, tc := range []struct {
		params map[string]string
		want   string // "" when accepted, else a part of the message
	}{
		{params: nil},
		{params: map[string]string{"iops": "1", "tier": "standard"}},
		{params: map[string]string{"iops": "100000", "tier": "premium"}},
		{params: map[string]string{"iops": "0"}, want: `mutable parameter "iops": value "0" is not a decimal integer from 1 to 100000`},
		{params: map[string]string{"iops": "100001"}, want: "from 1 to 100000"},
		{params: map[string]string{"iops": "3k"}, want: `value "3k"`},
		{params: map[string]string{"iops": " 30"}, want: `value " 30"`},
		{params: map[string]string{"tier": "gold"}, want: `mutable parameter "tier": value "gold" is not "standard" or "premium"`},
		{params: map[string]string{"XXX_FakeKey": "v"}, want: `mutable parameter "XXX_FakeKey": unknown to this driver, which accepts "iops" and "tier" only`},
		// Several mistakes: the first key in order is reported.
		{params: map[string]string{"tier": "gold", "a": "b"}, want: `"a": unknown`},
	} {
		err := CheckMutableParameters(tc.params)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v refused: %v", tc.params, err)
		case tc.want != "" && status.Code(err) != codes.InvalidArgument:
			t.Errorf("%v: got %v, want InvalidArgument", tc.params, err)
		case tc.want != "" && !strings.Contains(err.Error(), tc.want):
			t.Errorf("%v: message %q does not say %q", tc.params, err, tc.want)
		}
	}
}

// A modification names the parameters it changes; the others keep their
// values, and repeating it changes nothing.
func TestModifyVolumeChangesOnlyTheNamedParameters(t *testing.T) {
	for _, network := range []bool{false, true} {
		t.Run(map[bool]string{false: "node-local", true: "network"}[network], func(t *testing.T) {
			ctx := context.Background()
			dir := shortTempDir(t)
			cfg := testConfig(dir, NewFakeMounter())
			if network {
				cfg = testNetworkConfig(dir, NewFakeMounter(), testNode)
			}
			r := startDriver(t, cfg)
			req := createReq("fast")
			req.MutableParameters = map[string]string{ParamTier: TierPremium, ParamIOPS: "3000"}
			vol := must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(ctx, req)).Volume
			wantParams(t, cfg, vol.VolumeId, req.MutableParameters)

			modify := &csi.ControllerModifyVolumeRequest{VolumeId: vol.VolumeId, MutableParameters: map[string]string{ParamTier: TierStandard}}
			for range 2 {
				must[*csi.ControllerModifyVolumeResponse](t)(r.controller.ControllerModifyVolume(ctx, modify))
				wantParams(t, cfg, vol.VolumeId, map[string]string{ParamTier: TierStandard, ParamIOPS: "3000"})
			}

			modify.MutableParameters = map[string]string{ParamIOPS: "-1"}
			_, err := r.controller.ControllerModifyVolume(ctx, modify)
			wantCode(t, err, codes.InvalidArgument)
			wantParams(t, cfg, vol.VolumeId, map[string]string{ParamTier: TierStandard, ParamIOPS: "3000"})

			modify.VolumeId = volumeIDFor("missing")
			modify.MutableParameters = map[string]string{ParamIOPS: "5"}
			_, err = r.controller.ControllerModifyVolume(ctx, modify)
			wantCode(t, err, codes.NotFound)
		})
	}
}

func TestCreateVolumeRefusesBadMutableParameters(t *testing.T) {
	r := startDriver(t, testConfig(shortTempDir(t), NewFakeMounter()))
	req := createReq("bad")
	req.MutableParameters = map[string]string{ParamTier: "gold"}
	_, err := r.controller.CreateVolume(context.Background(), req)
	wantCode(t, err, codes.InvalidArgument)
	if vols := must[*csi.ListVolumesResponse](t)(r.controller.ListVolumes(context.Background(), &csi.ListVolumesRequest{})); len(vols.Entries) != 0 {
		t.Errorf("a refused creation left volumes: %v", vols.Entries)
	}
}

// The parameters and a modification of them survive a restart; a repeated
// CreateVolume with other mutable parameters is the same volume, given them.
func TestMutableParametersSurviveRestart(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(shortTempDir(t), NewFakeMounter())
	first := startDriver(t, cfg)
	req := createReq("kept")
	req.MutableParameters = map[string]string{ParamTier: TierStandard}
	vol := must[*csi.CreateVolumeResponse](t)(first.controller.CreateVolume(ctx, req)).Volume
	must[*csi.CreateVolumeResponse](t)(first.controller.CreateVolume(ctx, req))
	must[*csi.ControllerModifyVolumeResponse](t)(first.controller.ControllerModifyVolume(ctx,
		&csi.ControllerModifyVolumeRequest{VolumeId: vol.VolumeId, MutableParameters: map[string]string{ParamIOPS: "42"}}))
	first.stop(t)

	second := startDriver(t, cfg)
	wantParams(t, cfg, vol.VolumeId, map[string]string{ParamTier: TierStandard, ParamIOPS: "42"})
	req.MutableParameters = map[string]string{ParamTier: TierPremium}
	again := must[*csi.CreateVolumeResponse](t)(second.controller.CreateVolume(ctx, req)).Volume
	if again.VolumeId != vol.VolumeId {
		t.Errorf("the repeated creation made %s, want %s", again.VolumeId, vol.VolumeId)
	}
	wantParams(t, cfg, vol.VolumeId, map[string]string{ParamTier: TierPremium})
	req.MutableParameters[ParamTier] = "gold"
	_, err := second.controller.CreateVolume(ctx, req)
	wantCode(t, err, codes.InvalidArgument)
	wantParams(t, cfg, vol.VolumeId, map[string]string{ParamTier: TierPremium})
}

// wantParams reads the state file: what the driver has acknowledged.
func wantParams(t *testing.T, cfg Config, id string, want map[string]string) {
	t.Helper()
	st, _, err := readState(filepath.Join(cfg.DataDir, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	vol := st.Volumes.Get(id)
	if vol == nil {
		t.Fatalf("volume %s is not in the state file", id)
	}
	if !maps.Equal(vol.MutableParameters, want) {
		t.Errorf("volume %s holds mutable parameters %v, want %v", id, vol.MutableParameters, want)
	}
}
