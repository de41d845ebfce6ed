package nodeagent

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/informerindex"
	"github.com/volplane/volplane/internal/mounting"
	"github.com/volplane/volplane/internal/protection"
)

// register sets up the informers, through informerindex for the indexed
// ones (pods by claim and by node, attachments by node), and the handlers.
func (a *Agent) register() ([]cache.InformerSynced, error) {
	podInf, err := informerindex.Pods(a.factory)
	if err != nil {
		return nil, err
	}
	vaInf, err := informerindex.VolumeAttachments(a.factory)
	if err != nil {
		return nil, err
	}
	a.pods, a.podIndex = a.factory.Core().V1().Pods().Lister(), podInf.GetIndexer()
	a.vaIndex = vaInf.GetIndexer()
	pvIndexed, err := informerindex.PersistentVolumes(a.factory)
	if err != nil {
		return nil, err
	}
	a.pvIndex = pvIndexed.GetIndexer()
	claimInf := a.factory.Core().V1().PersistentVolumeClaims()
	pvInf := a.factory.Core().V1().PersistentVolumes()
	nodeInf := a.factory.Core().V1().Nodes()
	driverInf := a.factory.Storage().V1().CSIDrivers()
	a.claims, a.volumes, a.nodeList = claimInf.Lister(), pvInf.Lister(), nodeInf.Lister()
	a.drivers = driverInf.Lister()
	return loop.Register(
		loop.Handler{Informer: podInf, Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc: a.onPodAdded, UpdateFunc: loop.Updated(a.onPod), DeleteFunc: a.onPodDeleted}},
		loop.Handler{Informer: nodeInf.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc: a.onNode, UpdateFunc: a.onNodeUpdate}},
		loop.Handler{Informer: claimInf.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc: a.onClaim, UpdateFunc: a.onClaimUpdate, DeleteFunc: a.onClaim}},
		loop.Handler{Informer: pvInf.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc: a.onVolume, UpdateFunc: a.onVolumeUpdate, DeleteFunc: a.onVolume}},
		loop.Handler{Informer: vaInf, Funcs: funcs(a.onAttachment)},
		loop.Handler{Informer: driverInf.Informer(), Funcs: funcs(func(any) { a.resync(context.Background()) })},
	)
}

func funcs(h func(any)) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{AddFunc: h, UpdateFunc: loop.Updated(h), DeleteFunc: h}
}

// onPod queues a pod of ours where mounting.PodWork sends it.
func (a *Agent) onPod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || a.nodes[pod.Spec.NodeName] == nil {
		return
	}
	switch mounting.PodWork(pod, a.claimsOf(pod)) {
	case mounting.TearDown:
		a.nodeQ.Add(pod.Spec.NodeName)
	case mounting.MountPod:
		a.podQ.Add(pod.Namespace + "/" + pod.Name)
	}
}

// onPodAdded: the agent's first sight of a pod (at its start it lists
// them all) syncs a live pod of ours, running or not, as the kubelet
// reconstructs its mounted volumes when it starts: a volume that grew
// while the agent was stopped, with no resize status left on its claim
// to say so (a ReadWriteMany volume another node finished), is expanded
// then, and nothing else would bring it.
func (a *Agent) onPodAdded(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || a.nodes[pod.Spec.NodeName] == nil {
		return
	}
	if mounting.PodWork(pod, a.claimsOf(pod)) == mounting.NoWork {
		a.podQ.Add(pod.Namespace + "/" + pod.Name)
		return
	}
	a.onPod(pod)
}

// claimsOf lists the pod's claims the informer holds.
func (a *Agent) claimsOf(pod *corev1.Pod) []*corev1.PersistentVolumeClaim {
	var out []*corev1.PersistentVolumeClaim
	for _, key := range protection.ClaimKeys(pod) {
		if claim, ok := a.claimByKey(key); ok {
			out = append(out, claim)
		}
	}
	return out
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

// onNodeUpdate queues the node's own sync (its teardown may finish) and
// wakes only the waiting pods the change concerns (mounting.ChangeOf): a
// node's status is written at every attach and heartbeat, and waking every
// waiting pod of the node each time made each attach cost a sync of every
// pod still waiting there.
func (a *Agent) onNodeUpdate(old, cur any) {
	o, okOld := old.(*corev1.Node)
	node, ok := cur.(*corev1.Node)
	if !ok || a.nodes[node.Name] == nil || (okOld && o.ResourceVersion == node.ResourceVersion) {
		return
	}
	a.nodeQ.Add(node.Name)
	if !okOld {
		o = nil
	}
	change := mounting.ChangeOf(o, node)
	if change.All {
		a.queueWaiting(node.Name)
		return
	}
	if len(change.Volumes) == 0 {
		return
	}
	pods, err := informerindex.PodsOn(a.podIndex, node.Name)
	if err != nil {
		utilruntime.HandleError(err)
	}
	for _, pod := range pods {
		if change.Concerns(pod, a.volumeOfClaim) {
			a.onPod(pod)
		}
	}
}

// volumeOfClaim is the PV the claim "namespace/name" is bound to, from the
// informers; nil if none.
func (a *Agent) volumeOfClaim(key string) *corev1.PersistentVolume {
	claim, ok := a.claimByKey(key)
	if !ok || claim.Spec.VolumeName == "" {
		return nil
	}
	pv, err := a.volumes.Get(claim.Spec.VolumeName)
	if err != nil {
		return nil
	}
	return pv
}

// onClaimUpdate wakes the claim's pods as onClaim does, and, when the
// claim's capacity changed (mounting.CapacityChanged), its live pods too.
func (a *Agent) onClaimUpdate(old, cur any) {
	o, okOld := old.(*corev1.PersistentVolumeClaim)
	c, okCur := cur.(*corev1.PersistentVolumeClaim)
	if !okOld || !okCur || o.ResourceVersion == c.ResourceVersion {
		return
	}
	if !mounting.CapacityChanged(o, c) {
		a.onClaim(c)
		return
	}
	a.queueLiveUsers(binding.ClaimKey(c))
}

// onVolumeUpdate wakes the PV's claim's pods as onVolume does, and, when
// the PV's capacity changed (mounting.VolumeCapacityChanged), its live pods
// too: the claim's change may have been seen first, while the informer
// still held the PV's old size.
func (a *Agent) onVolumeUpdate(old, cur any) {
	o, okOld := old.(*corev1.PersistentVolume)
	pv, okCur := cur.(*corev1.PersistentVolume)
	if !okOld || !okCur || o.ResourceVersion == pv.ResourceVersion {
		return
	}
	if pv.Spec.ClaimRef == nil || !mounting.VolumeCapacityChanged(o, pv) {
		a.onVolume(pv)
		return
	}
	a.queueLiveUsers(binding.ClaimRefKey(pv.Spec.ClaimRef))
}

// queueLiveUsers queues every live pod of ours using the claim, running or
// not: its size changed.
func (a *Agent) queueLiveUsers(claim string) {
	for _, pod := range a.podsUsing(claim) {
		if a.nodes[pod.Spec.NodeName] == nil {
			continue
		}
		if mounting.WantsMount(pod) {
			a.podQ.Add(pod.Namespace + "/" + pod.Name)
		} else {
			a.onPod(pod)
		}
	}
}

func (a *Agent) onClaim(obj any) {
	if c, ok := loop.As[*corev1.PersistentVolumeClaim](obj); ok {
		a.queueClaimUsers(binding.ClaimKey(c))
	}
}

func (a *Agent) onVolume(obj any) {
	if pv, ok := loop.As[*corev1.PersistentVolume](obj); ok && pv.Spec.ClaimRef != nil {
		a.queueClaimUsers(binding.ClaimRefKey(pv.Spec.ClaimRef))
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
			a.queueClaimUsers(binding.ClaimRefKey(pv.Spec.ClaimRef))
			return
		}
	}
	a.queueWaiting(va.Spec.NodeName)
}

func (a *Agent) queueClaimUsers(claim string) {
	for _, pod := range a.podsUsing(claim) {
		a.onPod(pod)
	}
}

// queueWaiting queues the node's pods that are not running yet.
func (a *Agent) queueWaiting(node string) {
	pods, err := informerindex.PodsOn(a.podIndex, node)
	if err != nil {
		utilruntime.HandleError(err)
	}
	for _, pod := range pods {
		a.onPod(pod)
	}
}

// podsUsing lists the pods using the claim "namespace/name". An error
// (the index is missing: the informer was not asked for through
// informerindex) is reported, and the pods are not woken.
func (a *Agent) podsUsing(claim string) []*corev1.Pod {
	pods, err := informerindex.PodsUsing(a.podIndex, claim)
	if err != nil {
		utilruntime.HandleError(err)
	}
	return pods
}

// resync revisits every node and every pod of ours not running yet.
func (a *Agent) resync(context.Context) {
	for name := range a.nodes {
		a.nodeQ.Add(name)
		a.queueWaiting(name)
	}
}
