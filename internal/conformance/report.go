package conformance

import (
	"time"
)

// Status is a scenario's outcome.
type Status string

const (
	Pass Status = "pass"
	Fail Status = "fail"
	Skip Status = "skip"
)

// Report is the outcome of a conformance run: one Result per scenario of
// the registry, in its order.
type Report struct {
	Driver  string   `json:"driver"`
	Results []Result `json:"results"`
}

// Result is one scenario's outcome. Reason is why it was skipped, or the
// one-line failure; Failure holds the details of a failure.
type Result struct {
	Name     string        `json:"name"`
	Status   Status        `json:"status"`
	Reason   string        `json:"reason,omitempty"`
	Duration time.Duration `json:"-"`
	Seconds  float64       `json:"seconds"`
	Failure  *Failure      `json:"failure,omitempty"`
}

// Failure is what a failed scenario tells its reader: the step that
// failed and its error; when the step waited on an object, that object and
// the newest Warning event about it (where the loops put the CSI call's
// error: the call, its reason and message); what `volplane explain` says
// of the claim the step was about; and the invariants broken once the
// scenario was cleaned up.
type Failure struct {
	Step       string   `json:"step"`
	Error      string   `json:"error"`
	Object     string   `json:"object,omitempty"`
	CSICall    string   `json:"csiCall,omitempty"`
	Event      string   `json:"event,omitempty"`
	Explain    string   `json:"explain,omitempty"`
	Invariants []string `json:"invariants,omitempty"`
}

// Passed says whether no scenario failed.
func (r Report) Passed() bool {
	for _, res := range r.Results {
		if res.Status == Fail {
			return false
		}
	}
	return true
}

// Count is how many results have status s.
func (r Report) Count(s Status) int {
	n := 0
	for _, res := range r.Results {
		if res.Status == s {
			n++
		}
	}
	return n
}
