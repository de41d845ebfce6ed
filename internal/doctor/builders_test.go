package doctor

import (
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/explain"
)

// now is the snapshot's time; ago(d) is a timestamp d before it.
var now = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }

const hostpathDriver = "hostpath.csi.volplane.io"

type claimOpt func(*v1.PersistentVolumeClaim)

// claim is a Bound claim "ns/name" of class "fast", 1Gi, RWO, an hour old.
func claim(name string, opts ...claimOpt) *v1.PersistentVolumeClaim {
	c := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), CreationTimestamp: ago(time.Hour),
			ResourceVersion: "7"},
		Spec: v1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("fast"),
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:   v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}}},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound},
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

func pending(age time.Duration) claimOpt {
	return func(c *v1.PersistentVolumeClaim) {
		c.Status.Phase, c.CreationTimestamp = v1.ClaimPending, ago(age)
	}
}
func boundTo(pv string) claimOpt {
	return func(c *v1.PersistentVolumeClaim) { c.Spec.VolumeName = pv }
}
func claimUID(uid string) claimOpt {
	return func(c *v1.PersistentVolumeClaim) { c.UID = types.UID(uid) }
}
func claimDeleting(age time.Duration, finalizers ...string) claimOpt {
	return func(c *v1.PersistentVolumeClaim) {
		c.DeletionTimestamp, c.Finalizers = ptr.To(ago(age)), finalizers
	}
}

type pvOpt func(*v1.PersistentVolume)

// pv is an Available CSI volume of hostpathDriver, handle = name, class
// "fast", 1Gi, RWO, Retain.
func pv(name string, opts ...pvOpt) *v1.PersistentVolume {
	p := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), ResourceVersion: "8"},
		Spec: v1.PersistentVolumeSpec{StorageClassName: "fast",
			Capacity:                      v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource: v1.PersistentVolumeSource{
				CSI: &v1.CSIPersistentVolumeSource{Driver: hostpathDriver, VolumeHandle: name}}},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeAvailable},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// claimRef binds the volume to claim ns/name with uid "uid-name".
func claimRef(name string) pvOpt {
	return func(p *v1.PersistentVolume) {
		p.Spec.ClaimRef = &v1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "ns", Name: name, UID: types.UID("uid-" + name)}
		p.Status.Phase = v1.VolumeBound
	}
}
func phase(ph v1.PersistentVolumePhase) pvOpt {
	return func(p *v1.PersistentVolume) { p.Status.Phase = ph }
}
func policy(r v1.PersistentVolumeReclaimPolicy) pvOpt {
	return func(p *v1.PersistentVolume) { p.Spec.PersistentVolumeReclaimPolicy = r }
}
func onNodeAffinity(key, node string) pvOpt {
	return func(p *v1.PersistentVolume) {
		p.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: key, Operator: v1.NodeSelectorOpIn, Values: []string{node}}}}}}}
	}
}
func pvDeleting(age time.Duration, finalizers ...string) pvOpt {
	return func(p *v1.PersistentVolume) {
		p.DeletionTimestamp, p.Finalizers = ptr.To(ago(age)), finalizers
	}
}

// va attaches volume pv to node, made an hour ago.
func va(name, pv, node string) *storagev1.VolumeAttachment {
	return &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "9", CreationTimestamp: ago(time.Hour)},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: "network.csi.volplane.io", NodeName: node,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To(pv)}},
		Status: storagev1.VolumeAttachmentStatus{Attached: true}}
}

// class is a StorageClass of provisioner, WaitForFirstConsumer when wait.
func class(name, provisioner string, wait bool) *storagev1.StorageClass {
	mode := storagev1.VolumeBindingImmediate
	if wait {
		mode = storagev1.VolumeBindingWaitForFirstConsumer
	}
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: provisioner, VolumeBindingMode: &mode}
}

// node is a node labelled with its hostname and hostpathDriver's topology
// key; inUse are the unique volume names its status.volumesInUse reports.
func node(name string, inUse ...v1.UniqueVolumeName) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelHostname: name, topoKey: name}},
		Status: v1.NodeStatus{VolumesInUse: inUse}}
}

// topoKey is hostpathDriver's topology key.
const topoKey = "topology.hostpath.csi.volplane.io/node"

// csiNode says node runs drivers, each with node ID = the node's name.
func csiNode(name string, drivers ...string) *storagev1.CSINode {
	n := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, d := range drivers {
		n.Spec.Drivers = append(n.Spec.Drivers, storagev1.CSINodeDriver{Name: d, NodeID: name, TopologyKeys: []string{topoKey}})
	}
	return n
}

// nodeBackend is hostpathDriver's endpoint on node, listing vols.
func nodeBackend(node string, vols ...BackendVolume) Backend {
	return Backend{Driver: hostpathDriver, Node: node, Topology: map[string]string{topoKey: node}, Volumes: vols}
}

// pod is a running pod on node using claim.
func pod(name, node, claim string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: v1.PodSpec{NodeName: node, Volumes: []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}},
		Status: v1.PodStatus{Phase: v1.PodRunning}}
}

// world is a snapshot of the lists given, backends not read.
type world struct{ s Snapshot }

func newWorld() *world {
	return &world{s: Snapshot{Facts: explain.Facts{Now: now, Nodes: []*v1.Node{node("n1")}}, BackendsSkipped: "no endpoint"}}
}
func (w *world) claims(cs ...*v1.PersistentVolumeClaim) *world {
	w.s.Claims = append(w.s.Claims, cs...)
	return w
}
func (w *world) classes(cs ...*storagev1.StorageClass) *world {
	w.s.Classes = append(w.s.Classes, cs...)
	return w
}
func (w *world) volumes(pvs ...*v1.PersistentVolume) *world {
	w.s.Volumes = append(w.s.Volumes, pvs...)
	return w
}
func (w *world) attachments(vas ...*storagev1.VolumeAttachment) *world {
	w.s.Attachments = append(w.s.Attachments, vas...)
	return w
}
func (w *world) pods(ps ...*v1.Pod) *world {
	w.s.Pods = append(w.s.Pods, ps...)
	return w
}

// backends are the endpoints listed; a backend without Relisted lists
// again, after the cluster was read, what it listed before.
func (w *world) backends(bs ...Backend) *world {
	w.s.Backends = append([]Backend{}, bs...)
	for i, b := range w.s.Backends {
		if b.Relisted == nil {
			w.s.Backends[i].Relisted = map[string]bool{}
			for _, v := range b.Volumes {
				w.s.Backends[i].Relisted[v.ID] = true
			}
		}
	}
	return w
}
func (w *world) nodes(ns ...*v1.Node) *world {
	w.s.Nodes = ns
	return w
}
func (w *world) csiNodes(ns ...*storagev1.CSINode) *world {
	w.s.CSINodes = append(w.s.CSINodes, ns...)
	return w
}
