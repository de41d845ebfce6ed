package provisioning

import (
	"testing"
)

func TestGatedDoesOnlyWhatTheNodesTurnAllows(t *testing.T) {
	cases := []struct {
		action ClaimAction
		turn   Turn
		want   ClaimAction
	}{
		{ClaimProvision, Handle, ClaimProvision},
		{ClaimCleanup, Handle, ClaimCleanup},
		{ClaimFinish, Handle, ClaimFinish},
		{ClaimProvision, Race, ClaimRace},
		{ClaimPopulator, Race, ClaimRace},
		{ClaimCleanup, Race, ClaimNone},
		{ClaimFinish, Race, ClaimNone},
		{ClaimProvision, Leave, ClaimNone},
		{ClaimCleanup, Leave, ClaimNone},
	}
	for _, c := range cases {
		if got := Gated(c.action, c.turn); got != c.want {
			t.Errorf("Gated(%s, %s) = %s, want %s", c.action, c.turn, got, c.want)
		}
	}
}
