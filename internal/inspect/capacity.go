package inspect

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/volplane/volplane/internal/explain"
)

// ReadCapacities reads the CSIStorageCapacity objects of every namespace,
// as the scheduler reads them, into facts. A reader not allowed to list
// them gets a report without them.
func ReadCapacities(ctx context.Context, client kubernetes.Interface, facts *explain.Facts) error {
	list, err := client.StorageV1().CSIStorageCapacities("").List(ctx, metav1.ListOptions{})
	if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list CSIStorageCapacities: %w", err)
	}
	facts.Capacities = pointers(list.Items)
	return nil
}
