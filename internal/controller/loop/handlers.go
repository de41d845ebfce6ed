package loop

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
)

// Handler is what a loop wants to hear from one informer.
type Handler struct {
	Informer cache.SharedIndexInformer
	Funcs    cache.ResourceEventHandlerFuncs
}

// Register adds every handler and returns what a Runner must wait for: each
// registration's HasSynced, so the workers start only once every handler
// has been given every object of its informer's first list.
func Register(handlers ...Handler) ([]cache.InformerSynced, error) {
	var synced []cache.InformerSynced
	for _, h := range handlers {
		reg, err := h.Informer.AddEventHandler(h.Funcs)
		if err != nil {
			return nil, fmt.Errorf("event handler: %w", err)
		}
		synced = append(synced, reg.HasSynced)
	}
	return synced, nil
}

// Updated adapts an add handler to updates, ignoring re-deliveries of an
// unchanged object (informer resyncs): the loops run their own, narrower
// resync.
func Updated(h func(any)) func(any, any) {
	return func(old, cur any) {
		o, okO := old.(interface{ GetResourceVersion() string })
		n, okN := cur.(interface{ GetResourceVersion() string })
		if okO && okN && o.GetResourceVersion() == n.GetResourceVersion() {
			return
		}
		h(cur)
	}
}

// UpdatedIf adapts an add handler to updates that changed something the
// loop reads, as changed tells from the old and the new object; an update
// of another type (never, from a typed informer) is handed on.
func UpdatedIf[T any](changed func(old, cur T) bool, h func(any)) func(any, any) {
	return func(old, cur any) {
		o, okO := old.(T)
		n, okN := cur.(T)
		if okO && okN && !changed(o, n) {
			return
		}
		h(cur)
	}
}

// As returns an informer's object as a T. A delete handler may be given a
// cache.DeletedFinalStateUnknown instead of the object (the watch missed the
// delete and a relist found the object gone): As looks inside it, so every
// handler treats both deliveries alike.
func As[T any](obj any) (T, bool) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	t, ok := obj.(T)
	return t, ok
}

// StripManagedFields is an informer transform that drops metadata.managedFields
// before an object enters the cache. No loop reads them, and they are often
// the largest part of a PV or claim: at 100,000 of each they were most of the
// cache's memory. Writes of cached copies stay correct: the API server keeps
// the live object's managedFields when a request carries none.
func StripManagedFields(obj any) (any, error) {
	if a, err := meta.Accessor(obj); err == nil {
		a.SetManagedFields(nil)
	}
	return obj, nil
}
