package claimstatus

import (
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// Precondition is what a claim status patch asks of the server's copy.
type Precondition int

const (
	// IfUnchanged: the patch carries old's resourceVersion and fails with a
	// conflict on a claim changed meanwhile (the reference checks every
	// write of progress this way: a retry reads the claim again).
	IfUnchanged Precondition = iota
	// Always: the patch lands whatever changed (the reference's failure
	// marks and cancels, which must be recorded on a claim edited since).
	Always
)

func (p Precondition) String() string {
	if p == IfUnchanged {
		return "IfUnchanged"
	}
	return "Always"
}

// Patch is the strategic merge patch from old to want, a claim a pure step
// returned, for the status subresource: only what changed, other
// conditions left alone. Under IfUnchanged it carries old's
// resourceVersion.
func Patch(old, want *v1.PersistentVolumeClaim, pre Precondition) ([]byte, error) {
	o, err := json.Marshal(old)
	if err != nil {
		return nil, fmt.Errorf("marshal claim: %w", err)
	}
	n, err := json.Marshal(want)
	if err != nil {
		return nil, fmt.Errorf("marshal claim: %w", err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(o, n, &v1.PersistentVolumeClaim{})
	if err != nil || pre != IfUnchanged {
		return patch, err
	}
	var m map[string]any
	if err := json.Unmarshal(patch, &m); err != nil {
		return nil, fmt.Errorf("claim patch: %w", err)
	}
	meta, _ := m["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		m["metadata"] = meta
	}
	meta["resourceVersion"] = old.ResourceVersion
	return json.Marshal(m)
}
