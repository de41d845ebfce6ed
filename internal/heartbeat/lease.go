package heartbeat

import (
	"maps"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const (
	// DefaultPeriod is how often a process renews its heartbeat, as the
	// kubelet its node Lease.
	DefaultPeriod = 10 * time.Second
	// DefaultDuration is how long a heartbeat counts without a renewal:
	// four periods, so that a renewal or two may fail.
	DefaultDuration = 4 * DefaultPeriod
)

// Beat is what one heartbeat Lease must say: that the Role (the zero Role
// is the provisioner) serves Driver, on Node in node deployment.
type Beat struct {
	Role                              Role
	Namespace, Driver, Node, Identity string
	Duration                          time.Duration
}

// Name is the Lease's name.
func (b Beat) Name() string { return b.Role.LeaseName(b.Driver, b.Node) }

// Renewal is the Lease to write at now: a new one when current is nil,
// else a copy of current renewed by b's holder (acquireTime and
// leaseTransitions move on when the holder changes). current is not
// modified.
func Renewal(current *coordinationv1.Lease, b Beat, now time.Time) *coordinationv1.Lease {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: b.Namespace, Name: b.Name()}}
	if current != nil {
		l = current.DeepCopy()
	}
	l.Labels = with(l.Labels, b.Role.Label(), LabelValue(b.Driver))
	l.Annotations = with(l.Annotations, b.Role.Annotation(), b.Driver)
	if b.Node != "" {
		l.Annotations[AnnotationNode] = b.Node
	}
	stamp := metav1.NewMicroTime(now)
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != b.Identity {
		if l.Spec.HolderIdentity != nil {
			l.Spec.LeaseTransitions = ptr.To(ptr.Deref(l.Spec.LeaseTransitions, 0) + 1)
		}
		l.Spec.HolderIdentity = ptr.To(b.Identity)
		l.Spec.AcquireTime = &stamp
	}
	l.Spec.RenewTime = &stamp
	l.Spec.LeaseDurationSeconds = ptr.To(seconds(b.Duration))
	return l
}

// seconds rounds d up to whole seconds, at least one (the Lease's unit).
func seconds(d time.Duration) int32 {
	s := int32((d + time.Second - 1) / time.Second)
	return max(s, 1)
}

func with(m map[string]string, k, v string) map[string]string {
	m = maps.Clone(m)
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
}
