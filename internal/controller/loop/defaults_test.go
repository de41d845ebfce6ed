package loop

import (
	"testing"
	"time"
)

func TestSettingsWithDefaults(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in, out Settings
	}{
		{"zero takes every default", Settings{},
			Settings{Workers: DefaultWorkers, ResyncPeriod: DefaultResyncPeriod, RetryStart: DefaultRetryStart, RetryMax: DefaultRetryMax}},
		{"set values are kept", Settings{Workers: 3, ResyncPeriod: time.Second, RetryStart: time.Millisecond, RetryMax: 50 * time.Millisecond},
			Settings{Workers: 3, ResyncPeriod: time.Second, RetryStart: time.Millisecond, RetryMax: 50 * time.Millisecond}},
		{"negative is unset", Settings{Workers: -1, ResyncPeriod: -time.Second, RetryStart: -time.Second, RetryMax: -time.Second},
			Settings{Workers: DefaultWorkers, ResyncPeriod: DefaultResyncPeriod, RetryStart: DefaultRetryStart, RetryMax: DefaultRetryMax}},
		{"a max below the start is unset", Settings{RetryStart: 10 * time.Minute, RetryMax: time.Minute},
			Settings{Workers: DefaultWorkers, ResyncPeriod: DefaultResyncPeriod, RetryStart: 10 * time.Minute, RetryMax: 10 * time.Minute}},
		{"a start alone keeps the default max", Settings{RetryStart: time.Millisecond},
			Settings{Workers: DefaultWorkers, ResyncPeriod: DefaultResyncPeriod, RetryStart: time.Millisecond, RetryMax: DefaultRetryMax}},
	} {
		if got := tc.in.WithDefaults(); got != tc.out {
			t.Errorf("%s: %+v.WithDefaults() = %+v, want %+v", tc.name, tc.in, got, tc.out)
		}
	}
}
