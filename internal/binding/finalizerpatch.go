package binding

import (
	"encoding/json"
	"slices"

	"k8s.io/apimachinery/pkg/types"
)

// FinalizerPatch is a strategic-merge patch that deletes (remove) or adds
// one finalizer f of the object with the given UID, leaving the others
// alone: finalizers is a merge list, so two writers changing different
// finalizers of one object never undo each other, and a removal needs no
// read first. An added finalizer goes after the object's existing ones
// (have), as kube-controller-manager appends it: a merge list puts the
// patch's items first unless $setElementOrder says otherwise; one another
// writer added meanwhile lands after ours, never lost.
//
// The UID is immutable, so the patch fails (Conflict) on an object
// re-created under the same name. A resourceVersion, if given, is the
// version the decision was made on: the API server refuses the patch
// (Conflict) if the object changed since, as it refuses a full update, but
// unlike a full update the patch writes back no field of the copy, so a
// field the informer's cache leaves out survives.
func FinalizerPatch(uid types.UID, resourceVersion string, have []string, f string, remove bool) []byte {
	meta := map[string]any{"uid": uid}
	if resourceVersion != "" {
		meta["resourceVersion"] = resourceVersion
	}
	if remove {
		meta["$deleteFromPrimitiveList/finalizers"] = []string{f}
	} else {
		meta["finalizers"] = []string{f}
		meta["$setElementOrder/finalizers"] = append(slices.Clone(have), f)
	}
	out, _ := json.Marshal(map[string]any{"metadata": meta}) // maps of strings always marshal
	return out
}
