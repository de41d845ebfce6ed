package expansion

import (
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

// changed is out, or nil when its annotations and status (the only parts
// the steps change) equal claim's. Semantic equality takes a nil and an
// empty list or map as equal, as the API server's JSON does.
func changed(claim, out *v1.PersistentVolumeClaim) *v1.PersistentVolumeClaim {
	if apiequality.Semantic.DeepEqual(claim.Annotations, out.Annotations) && apiequality.Semantic.DeepEqual(claim.Status, out.Status) {
		return nil
	}
	return out
}
