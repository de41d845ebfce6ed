package expansion

import (
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// StatusPatch is the strategic merge patch from old to want, a claim a
// pure step returned (this package's, or internal/modification's), for the
// status subresource; the resizer, the modifier and the node agent all
// write claims with it: only what changed,
// other conditions left alone. With rvCheck it carries old's
// resourceVersion, so that it fails with a conflict on a claim changed
// meanwhile (the reference checks every write but the failure marks).
func StatusPatch(old, want *v1.PersistentVolumeClaim, rvCheck bool) ([]byte, error) {
	o, err := json.Marshal(old)
	if err != nil {
		return nil, fmt.Errorf("marshal claim: %w", err)
	}
	n, err := json.Marshal(want)
	if err != nil {
		return nil, fmt.Errorf("marshal claim: %w", err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(o, n, &v1.PersistentVolumeClaim{})
	if err != nil || !rvCheck {
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
