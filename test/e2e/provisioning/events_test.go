package provisioning

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
)

// Events.

func (e *env) events(kind, ns, name string) []corev1.Event {
	e.t.Helper()
	sel := fields.Set{"involvedObject.kind": kind, "involvedObject.name": name}.String()
	list, err := e.client.CoreV1().Events(ns).List(e.ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		e.t.Fatalf("list events: %v", err)
	}
	return list.Items
}

// waitClaimEvent waits for an event of the type and reason on the claim
// whose message starts with prefix, and returns it.
func (e *env) waitClaimEvent(claim, eventType, reason, prefix string) corev1.Event {
	e.t.Helper()
	var found corev1.Event
	e.eventually(fmt.Sprintf("%s %s event on claim %s", eventType, reason, claim), func() string {
		evs := e.events("PersistentVolumeClaim", e.ns, claim)
		i := slices.IndexFunc(evs, func(ev corev1.Event) bool {
			return ev.Type == eventType && ev.Reason == reason && strings.HasPrefix(ev.Message, prefix)
		})
		if i < 0 {
			return fmt.Sprintf("want %q…; have %s", prefix, describe(evs))
		}
		found = evs[i]
		return ""
	})
	return found
}

// noClaimEvent fails the test if the claim has an event with the reason,
// but for a class not found: a test creates its class a moment before the
// claim, and the provisioner, whose informer may not hold it yet, says so
// (ProvisioningFailed, as the external-provisioner does) and tries again.
func (e *env) noClaimEvent(claim, reason string) {
	e.t.Helper()
	for _, ev := range e.events("PersistentVolumeClaim", e.ns, claim) {
		if ev.Reason == reason && !classNotFound.MatchString(ev.Message) {
			e.t.Errorf("claim %s: unexpected %s event %q", claim, reason, ev.Message)
		}
	}
}

// classNotFound is the message of a claim's class missing from the
// provisioner's informer.
var classNotFound = regexp.MustCompile(`^storageclass\.storage\.k8s\.io "[^"]+" not found$`)

func describe(evs []corev1.Event) string {
	parts := make([]string, len(evs))
	for i, ev := range evs {
		parts[i] = fmt.Sprintf("[%s %s x%d from %s: %s]", ev.Type, ev.Reason, ev.Count, ev.Source.Component, ev.Message)
	}
	return strings.Join(parts, " ")
}

// watchSelectedNodeRemoved reports, once, the node of a selected-node
// annotation that was set on the claim and later removed. The scheduler
// sets it again soon after, so only a watch sees the removal reliably.
func (e *env) watchSelectedNodeRemoved(claim string) <-chan string {
	e.t.Helper()
	w, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Watch(e.ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", claim).String(),
	})
	if err != nil {
		e.t.Fatalf("watch claim %s: %v", claim, err)
	}
	e.t.Cleanup(w.Stop)
	removed := make(chan string, 1)
	go func() {
		last := ""
		for ev := range w.ResultChan() {
			c, ok := ev.Object.(*corev1.PersistentVolumeClaim)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			now := c.Annotations[annSelectedNode]
			if last != "" && now == "" {
				removed <- last
				return
			}
			last = now
		}
	}()
	return removed
}
