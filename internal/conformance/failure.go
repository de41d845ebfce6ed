package conformance

import (
	"bytes"
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/volplane/volplane/internal/inspect"
)

// csiCalls name the CSI call behind a loop's Warning reason: the loops
// write the driver's error into these events.
var csiCalls = map[string]string{
	"ProvisioningFailed":          "CreateVolume",
	"ProvisioningCleanupFailed":   "DeleteVolume",
	"VolumeFailedDelete":          "DeleteVolume",
	"FailedAttachVolume":          "ControllerPublishVolume",
	"FailedDetachVolume":          "ControllerUnpublishVolume",
	"FailedMount":                 "NodeStageVolume/NodePublishVolume",
	"FailedMapVolume":             "NodeStageVolume/NodePublishVolume",
	"FailedUnMount":               "NodeUnpublishVolume/NodeUnstageVolume",
	"VolumeResizeFailed":          "ControllerExpandVolume",
	"FileSystemResizeFailed":      "NodeExpandVolume",
	"VolumeModifyFailed":          "ControllerModifyVolume",
	"SnapshotCreationFailed":      "CreateSnapshot",
	"CreateSnapshotContentFailed": "CreateSnapshot",
	"SnapshotDeletePending":       "DeleteSnapshot",
	"GroupSnapshotCreationFailed": "CreateVolumeGroupSnapshot",
}

// csiCall is the call behind reason, or "" when the reason is not one of a
// CSI call's failures.
func csiCall(reason string) string { return csiCalls[reason] }

// warning is the newest Warning event about the object the wait was on;
// failing that, about the session's claim, then about the claim's PV.
func (s *Session) warning(ctx context.Context, w *WaitError) *corev1.Event {
	type obj struct{ kind, namespace, name string }
	var objs []obj
	if w != nil {
		objs = append(objs, obj{w.Kind, w.Namespace, w.Name})
	}
	if s.claim != "" {
		objs = append(objs, obj{"PersistentVolumeClaim", s.Namespace, s.claim})
		c, err := s.Lab.Client.CoreV1().PersistentVolumeClaims(s.Namespace).Get(ctx, s.claim, metav1.GetOptions{})
		if err == nil && c.Spec.VolumeName != "" {
			objs = append(objs, obj{"PersistentVolume", "", c.Spec.VolumeName})
		}
	}
	for _, o := range objs {
		if ev := newestWarning(ctx, s.Lab, o.kind, o.namespace, o.name); ev != nil {
			return ev
		}
	}
	return nil
}

// newestWarning is the newest Warning event about kind namespace/name, in
// any namespace (a cluster-scoped object's events are in default).
func newestWarning(ctx context.Context, lab *Lab, kind, namespace, name string) *corev1.Event {
	sel := fields.Set{"involvedObject.kind": kind, "involvedObject.name": name, "type": corev1.EventTypeWarning}
	if namespace != "" {
		sel["involvedObject.namespace"] = namespace
	}
	list, err := lab.Client.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: sel.AsSelector().String()})
	if err != nil || len(list.Items) == 0 {
		return nil
	}
	newest := &list.Items[0]
	for i := range list.Items {
		if eventTime(&list.Items[i]).After(eventTime(newest).Time) {
			newest = &list.Items[i]
		}
	}
	return newest
}

func eventTime(e *corev1.Event) metav1.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp
	case !e.EventTime.IsZero():
		return metav1.Time{Time: e.EventTime.Time}
	}
	return e.CreationTimestamp
}

// explain is what `volplane explain pvc` says of the claim, or why it
// could not say.
func (s *Session) explain(ctx context.Context, claim string) string {
	report, err := inspect.ReportWith(ctx, inspect.Clients{Kube: s.Lab.Client, Snapshots: s.Lab.Snapshots}, "pvc", claim, s.Namespace)
	if err != nil {
		return "explain failed: " + err.Error()
	}
	var b bytes.Buffer
	if err := report.Table(&b); err != nil {
		return "explain failed: " + err.Error()
	}
	return b.String()
}

// trimSlash drops the "/" of a cluster-scoped object's empty namespace.
func trimSlash(s string) string { return strings.Replace(s, " /", " ", 1) }
