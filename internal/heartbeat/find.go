package heartbeat

import (
	"fmt"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// Slack is added to a Lease's duration before it counts as stale: the
// reader's clock may run ahead of the writer's, and a renewal may be a
// little late under load.
const Slack = 5 * time.Second

// Presence is whether a role's process (a provisioner, a snapshotter)
// serving a driver is running, as its Leases say.
type Presence struct {
	// Serving: some Lease of the role and driver was renewed within its
	// leaseDurationSeconds (plus Slack) by a holder.
	Serving bool
	// Leases are every Lease of the role and driver found, fresh or not,
	// "namespace/name", sorted.
	Leases []string
	// Holders are the holderIdentity of the fresh Leases, sorted, once
	// each; Nodes the nodes of the fresh heartbeats of a node deployment.
	Holders []string
	Nodes   []string
	// RenewedAt is the latest renewal of any Lease found (zero if none).
	RenewedAt time.Time
	// Reason says it in a sentence for people.
	Reason string
}

// seen is one Lease of the role and driver as Find reads it.
type seen struct {
	lease     string // namespace/name
	holder    string
	node      string
	renewed   time.Time
	fresh     bool
	heartbeat bool // ours; else the upstream sidecar's leader election
}

// Find is Provisioner.Find: whether provisioner is served at now.
func Find(leases []coordinationv1.Lease, provisioner string, now time.Time) Presence {
	return Provisioner.Find(leases, provisioner, now)
}

// Find decides from leases (any Leases: those not about the role and
// driver are skipped) whether the role serves driver at now. A Lease is
// about them when it is a volplane heartbeat of the role (r.Label())
// whose r.Annotation() is driver, or when it is named
// r.SidecarLeaseName(driver) in any namespace (the upstream sidecar's
// leader election) and is no volplane heartbeat of any role. It is fresh
// when it has a holder and its renewTime (else acquireTime) is at most its
// leaseDurationSeconds (DefaultDuration if unset) plus Slack before now.
func (r Role) Find(leases []coordinationv1.Lease, driver string, now time.Time) Presence {
	r = r.normal()
	var all []seen
	for i := range leases {
		if s, ok := r.read(&leases[i], driver, now); ok {
			all = append(all, s)
		}
	}
	p := Presence{}
	for _, s := range all {
		p.Leases = append(p.Leases, s.lease)
		if s.renewed.After(p.RenewedAt) {
			p.RenewedAt = s.renewed
		}
		if !s.fresh {
			continue
		}
		p.Serving = true
		p.Holders = append(p.Holders, s.holder)
		if s.node != "" {
			p.Nodes = append(p.Nodes, s.node)
		}
	}
	for _, l := range []*[]string{&p.Leases, &p.Holders, &p.Nodes} {
		slices.Sort(*l)
		*l = slices.Compact(*l)
	}
	p.Reason = r.reason(driver, all, now)
	return p
}

// read is the Lease as Find sees it; false if it is not about the role
// and driver.
func (r Role) read(l *coordinationv1.Lease, driver string, now time.Time) (seen, bool) {
	_, labelled := l.Labels[r.Label()]
	heartbeat := labelled && l.Annotations[r.Annotation()] == driver
	if !heartbeat && (anyHeartbeat(l) || l.Name != r.SidecarLeaseName(driver)) {
		return seen{}, false
	}
	s := seen{lease: l.Namespace + "/" + l.Name, heartbeat: heartbeat, node: l.Annotations[AnnotationNode]}
	if l.Spec.HolderIdentity != nil {
		s.holder = *l.Spec.HolderIdentity
	}
	switch {
	case l.Spec.RenewTime != nil:
		s.renewed = l.Spec.RenewTime.Time
	case l.Spec.AcquireTime != nil:
		s.renewed = l.Spec.AcquireTime.Time
	}
	valid := DefaultDuration
	if l.Spec.LeaseDurationSeconds != nil {
		valid = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	s.fresh = s.holder != "" && !s.renewed.IsZero() && now.Sub(s.renewed) <= valid+Slack
	if !heartbeat {
		s.node = ""
	}
	return s, true
}

// anyHeartbeat says the Lease is a volplane heartbeat of some role: never
// an upstream sidecar's, whatever its name.
func anyHeartbeat(l *coordinationv1.Lease) bool {
	for _, r := range Roles {
		if _, ok := l.Labels[r.Label()]; ok {
			return true
		}
	}
	return false
}

// reason is Presence.Reason: who serves, or why no one does, with the
// Lease that says so.
func (r Role) reason(driver string, all []seen, now time.Time) string {
	if len(all) == 0 {
		return fmt.Sprintf("no %s is serving %s: no heartbeat or leader election Lease of it was found", r, driver)
	}
	var fresh []seen
	for _, s := range all {
		if s.fresh {
			fresh = append(fresh, s)
		}
	}
	if len(fresh) == 0 {
		last := latest(all)
		if last.holder == "" {
			return fmt.Sprintf("no %s is serving %s: its last leader released Lease %s %s",
				r, driver, last.lease, ago(last.renewed, now))
		}
		if !last.heartbeat {
			return fmt.Sprintf("no %s is serving %s: its leader %s last renewed Lease %s %s",
				r, driver, last.holder, last.lease, ago(last.renewed, now))
		}
		return fmt.Sprintf("no %s is serving %s: the last heartbeat was %s, from %s (Lease %s)",
			r, driver, ago(last.renewed, now), who(last), last.lease)
	}
	last := latest(fresh)
	if len(fresh) == 1 && !last.heartbeat {
		return fmt.Sprintf("%s is served by the %s leader %s (Lease %s renewed %s)",
			driver, r.Sidecar(), last.holder, last.lease, ago(last.renewed, now))
	}
	if len(fresh) == 1 {
		return fmt.Sprintf("%s is served by %s (Lease %s renewed %s)", driver, who(last), last.lease, ago(last.renewed, now))
	}
	names := make([]string, 0, len(fresh))
	for _, s := range fresh {
		names = append(names, who(s))
	}
	slices.Sort(names)
	return fmt.Sprintf("%s is served by %d %ss (%s), the last heartbeat %s",
		driver, len(fresh), r, list(names), ago(last.renewed, now))
}

// latest is the Lease renewed last (the first by name among equals).
func latest(all []seen) seen {
	best := all[0]
	for _, s := range all[1:] {
		if s.renewed.After(best.renewed) || (s.renewed.Equal(best.renewed) && s.lease < best.lease) {
			best = s
		}
	}
	return best
}

// who names the holder of a Lease, with its node in node deployment.
func who(s seen) string {
	if s.node != "" {
		return s.holder + " on node " + s.node
	}
	return s.holder
}

// list joins names, at most three of them, then how many more.
func list(names []string) string {
	const most = 3
	if len(names) <= most {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:most], ", "), len(names)-most)
}

// ago is "3m ago" in kubectl's AGE style, "just now" for a renewal ahead of
// the reader's clock, "at an unknown time" when the Lease has none.
func ago(t, now time.Time) string {
	switch {
	case t.IsZero():
		return "at an unknown time"
	case !t.Before(now):
		return "just now"
	}
	return duration.HumanDuration(now.Sub(t)) + " ago"
}
