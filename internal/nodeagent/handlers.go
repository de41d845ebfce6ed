package nodeagent

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-helpers/storage/ephemeral"

	"github.com/volplane/volplane/internal/controller/loop"
)

// register sets up the informers, their indexes and handlers.
func (a *Agent) register() ([]cache.InformerSynced, error) {
	podInf := a.factory.Core().V1().Pods()
	if err := podInf.Informer().AddIndexers(cache.Indexers{byNode: podNode, byClaim: podClaims}); err != nil {
		return nil, err
	}
	a.pods, a.podIndex = podInf.Lister(), podInf.Informer().GetIndexer()
	claimInf := a.factory.Core().V1().PersistentVolumeClaims()
	pvInf := a.factory.Core().V1().PersistentVolumes()
	nodeInf := a.factory.Core().V1().Nodes()
	driverInf := a.factory.Storage().V1().CSIDrivers()
	vaInf := a.factory.Storage().V1().VolumeAttachments()
	a.claims, a.volumes, a.nodeList = claimInf.Lister(), pvInf.Lister(), nodeInf.Lister()
	a.drivers, a.vas = driverInf.Lister(), vaInf.Lister()
	return loop.Register(
		loop.Handler{Informer: podInf.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc: a.onPod, UpdateFunc: loop.Updated(a.onPod), DeleteFunc: a.onPodDeleted}},
		loop.Handler{Informer: nodeInf.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc: a.onNode, UpdateFunc: loop.Updated(a.onNode)}},
		loop.Handler{Informer: claimInf.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc: a.onClaim, UpdateFunc: a.onClaimUpdate, DeleteFunc: a.onClaim}},
		loop.Handler{Informer: pvInf.Informer(), Funcs: funcs(a.onVolume)},
		loop.Handler{Informer: vaInf.Informer(), Funcs: funcs(a.onAttachment)},
		loop.Handler{Informer: driverInf.Informer(), Funcs: funcs(func(any) { a.resync(context.Background()) })},
	)
}

func funcs(h func(any)) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{AddFunc: h, UpdateFunc: loop.Updated(h), DeleteFunc: h}
}

func podNode(obj any) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName == "" {
		return nil, nil
	}
	return []string{pod.Spec.NodeName}, nil
}

func podClaims(obj any) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	var out []string
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		switch {
		case v.PersistentVolumeClaim != nil:
			out = append(out, pod.Namespace+"/"+v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			out = append(out, pod.Namespace+"/"+ephemeral.VolumeClaimName(pod, v))
		}
	}
	return out, nil
}

// onPod queues a pod of ours: a live one to mount, one being deleted or
// terminated for its node's teardown.
func (a *Agent) onPod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || a.nodes[pod.Spec.NodeName] == nil {
		return
	}
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		a.nodeQ.Add(pod.Spec.NodeName)
		return
	}
	if !runningAndReady(pod) || a.awaitsNodeExpansion(pod) {
		a.podQ.Add(pod.Namespace + "/" + pod.Name)
	}
}

// awaitsNodeExpansion says whether a claim of the pod waits for a node to
// expand its volume (NodeResizePending, or NodeResizeInProgress left by a
// node that stopped): a running pod is then synced for an online expansion.
// The claim's events (its status, its PV's capacity) come here through
// queueClaimUsers, and so does a restarted agent's first sight of its pods.
func (a *Agent) awaitsNodeExpansion(pod *corev1.Pod) bool {
	claims, _ := podClaims(pod)
	for _, key := range claims {
		claim, ok, _ := a.claimByKey(key)
		if !ok {
			continue
		}
		switch claim.Status.AllocatedResourceStatuses[corev1.ResourceStorage] {
		case corev1.PersistentVolumeClaimNodeResizePending, corev1.PersistentVolumeClaimNodeResizeInProgress:
			return true
		}
	}
	return false
}

func (a *Agent) onPodDeleted(obj any) {
	if pod, ok := loop.As[*corev1.Pod](obj); ok && a.nodes[pod.Spec.NodeName] != nil {
		a.nodeQ.Add(pod.Spec.NodeName)
	}
}

// onNode: its status changed (volumesAttached, volumesInUse): the node's
// waiting pods may go on, and its teardown may finish.
func (a *Agent) onNode(obj any) {
	if node, ok := obj.(*corev1.Node); ok && a.nodes[node.Name] != nil {
		a.nodeQ.Add(node.Name)
		a.queueWaiting(node.Name)
	}
}

// onClaimUpdate wakes the claim's pods as onClaim does, and, when the
// claim's capacity changed, its running pods too: a ReadWriteMany volume
// that another node finished expanding is expanded on this node as well,
// with no resize status left on the claim to say so.
func (a *Agent) onClaimUpdate(old, cur any) {
	o, okOld := old.(*corev1.PersistentVolumeClaim)
	c, okCur := cur.(*corev1.PersistentVolumeClaim)
	if !okOld || !okCur || o.ResourceVersion == c.ResourceVersion {
		return
	}
	if o.Status.Capacity.Storage().Equal(*c.Status.Capacity.Storage()) {
		a.onClaim(c)
		return
	}
	objs, _ := a.podIndex.ByIndex(byClaim, c.Namespace+"/"+c.Name)
	for _, obj := range objs {
		if pod, ok := obj.(*corev1.Pod); ok && a.nodes[pod.Spec.NodeName] != nil && pod.DeletionTimestamp == nil {
			a.podQ.Add(pod.Namespace + "/" + pod.Name)
		}
	}
}

func (a *Agent) onClaim(obj any) {
	if c, ok := loop.As[*corev1.PersistentVolumeClaim](obj); ok {
		a.queueClaimUsers(c.Namespace + "/" + c.Name)
	}
}

func (a *Agent) onVolume(obj any) {
	if pv, ok := loop.As[*corev1.PersistentVolume](obj); ok && pv.Spec.ClaimRef != nil {
		a.queueClaimUsers(pv.Spec.ClaimRef.Namespace + "/" + pv.Spec.ClaimRef.Name)
	}
}

// onAttachment wakes the pods of the node that use the attachment's
// volume: only they wait for it (waking every waiting pod of the node made
// each attach cost a sync per pod on the node). An attachment whose PV is
// not known (yet) wakes them all.
func (a *Agent) onAttachment(obj any) {
	va, ok := loop.As[*storagev1.VolumeAttachment](obj)
	if !ok || a.nodes[va.Spec.NodeName] == nil {
		return
	}
	if name := va.Spec.Source.PersistentVolumeName; name != nil {
		if pv, err := a.volumes.Get(*name); err == nil && pv.Spec.ClaimRef != nil {
			a.queueClaimUsers(pv.Spec.ClaimRef.Namespace + "/" + pv.Spec.ClaimRef.Name)
			return
		}
	}
	a.queueWaiting(va.Spec.NodeName)
}

func (a *Agent) queueClaimUsers(claim string) {
	objs, _ := a.podIndex.ByIndex(byClaim, claim)
	for _, obj := range objs {
		a.onPod(obj)
	}
}

// queueWaiting queues the node's pods that are not running yet.
func (a *Agent) queueWaiting(node string) {
	objs, _ := a.podIndex.ByIndex(byNode, node)
	for _, obj := range objs {
		a.onPod(obj)
	}
}

// resync revisits every node and every pod of ours not running yet.
func (a *Agent) resync(context.Context) {
	for name := range a.nodes {
		a.nodeQ.Add(name)
		a.queueWaiting(name)
	}
}

// podsOf lists the pods bound to a node.
func (a *Agent) podsOf(node string) []*corev1.Pod {
	objs, _ := a.podIndex.ByIndex(byNode, node)
	out := make([]*corev1.Pod, 0, len(objs))
	for _, obj := range objs {
		if pod, ok := obj.(*corev1.Pod); ok {
			out = append(out, pod)
		}
	}
	return out
}
