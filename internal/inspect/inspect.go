// Package inspect reads from the API server the snapshot that explain
// reports on, and writes the report: the I/O half of `volplane explain`,
// kept out of package main so that tests drive it directly.
package inspect

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/volplane/volplane/internal/explain"
	"github.com/volplane/volplane/internal/heartbeat"
)

// Clients are the clients explain reads with: the core API and the
// snapshot API (nil: snapshots cannot be explained).
type Clients struct {
	Kube      kubernetes.Interface
	Snapshots snapclient.Interface
}

// Explain explains one object of kind ("pvc", "pv", "volumesnapshot",
// "volumesnapshotcontent", "volumegroupsnapshot" or
// "volumegroupsnapshotcontent") in the output format ("table" or "json"). The
// snapshot API is read through SnapshotClient(client).
func Explain(ctx context.Context, client kubernetes.Interface, kind, name, namespace, output string, w io.Writer) error {
	return ExplainWith(ctx, Clients{Kube: client, Snapshots: SnapshotClient(client)}, kind, name, namespace, output, w)
}

// ExplainWith is Explain with the clients given.
func ExplainWith(ctx context.Context, c Clients, kind, name, namespace, output string, w io.Writer) error {
	report, err := ReportWith(ctx, c, kind, name, namespace)
	if err != nil {
		return err
	}
	if output == "json" {
		return explain.JSON(w, report)
	}
	return report.Table(w)
}

// Table is a report that prints itself for people.
type Table interface{ Table(io.Writer) error }

// Report makes the report on one object of kind ("pvc", "pv",
// "volumesnapshot", "volumesnapshotcontent", "volumegroupsnapshot" or
// "volumegroupsnapshotcontent", and their short names): an
// explain.ClaimReport, VolumeReport, SnapshotReport, ContentReport,
// GroupReport or GroupContentReport.
func Report(ctx context.Context, client kubernetes.Interface, kind, name, namespace string) (Table, error) {
	return ReportWith(ctx, Clients{Kube: client, Snapshots: SnapshotClient(client)}, kind, name, namespace)
}

// ReportWith is Report with the clients given.
func ReportWith(ctx context.Context, c Clients, kind, name, namespace string) (Table, error) {
	switch strings.ToLower(kind) {
	case "pvc", "pvcs", "persistentvolumeclaim", "persistentvolumeclaims":
		if ns, n, ok := strings.Cut(name, "/"); ok {
			namespace, name = ns, n
		}
		return explainClaim(ctx, c, namespace, name)
	case "pv", "pvs", "persistentvolume", "persistentvolumes":
		return explainVolume(ctx, c.Kube, name)
	case "vs", "volumesnapshot", "volumesnapshots":
		if ns, n, ok := strings.Cut(name, "/"); ok {
			namespace, name = ns, n
		}
		return explainSnapshot(ctx, c, namespace, name)
	case "vsc", "volumesnapshotcontent", "volumesnapshotcontents":
		return explainContent(ctx, c, name)
	case "vgs", "volumegroupsnapshot", "volumegroupsnapshots":
		if ns, n, ok := strings.Cut(name, "/"); ok {
			namespace, name = ns, n
		}
		return explainGroup(ctx, c, namespace, name)
	case "vgsc", "volumegroupsnapshotcontent", "volumegroupsnapshotcontents":
		return explainGroupContent(ctx, c, name)
	}
	return nil, fmt.Errorf("cannot explain %q: want pvc NAMESPACE/NAME, pv NAME, volumesnapshot NAMESPACE/NAME, volumesnapshotcontent NAME, volumegroupsnapshot NAMESPACE/NAME or volumegroupsnapshotcontent NAME", kind)
}

func explainClaim(ctx context.Context, c Clients, namespace, name string) (explain.ClaimReport, error) {
	client := c.Kube
	claim, err := client.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return explain.ClaimReport{}, fmt.Errorf("persistentvolumeclaim %s/%s not found", namespace, name)
	}
	if err != nil {
		return explain.ClaimReport{}, fmt.Errorf("read claim: %w", err)
	}
	facts, err := ReadFacts(ctx, client, namespace)
	if err != nil {
		return explain.ClaimReport{}, err
	}
	uids := []types.UID{claim.UID}
	if pv := facts.FindVolume(claim.Spec.VolumeName); claim.Spec.VolumeName != "" && pv != nil {
		uids = append(uids, pv.UID)
	}
	uids = append(uids, scheduledUIDs(facts.PodsNaming(claim.Namespace, claim.Name))...)
	if facts.Events, err = EventsAbout(ctx, client, uids...); err != nil {
		return explain.ClaimReport{}, err
	}
	if facts.Provisioners, err = Presence(ctx, client, facts.Now, explain.ClaimProvisioners(claim, facts.Classes)...); err != nil {
		return explain.ClaimReport{}, err
	}
	if err := readRestoreSource(ctx, c.Snapshots, claim, facts); err != nil {
		return explain.ClaimReport{}, err
	}
	if err := ReadCapacities(ctx, client, facts); err != nil {
		return explain.ClaimReport{}, err
	}
	return explain.Claim(claim, facts), nil
}

func explainVolume(ctx context.Context, client kubernetes.Interface, name string) (explain.VolumeReport, error) {
	pv, err := client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return explain.VolumeReport{}, fmt.Errorf("persistentvolume %s not found", name)
	}
	if err != nil {
		return explain.VolumeReport{}, fmt.Errorf("read volume: %w", err)
	}
	facts, err := ReadFacts(ctx, client, metav1.NamespaceAll)
	if err != nil {
		return explain.VolumeReport{}, err
	}
	uids := []types.UID{pv.UID}
	if ref := pv.Spec.ClaimRef; ref != nil {
		uids = append(uids, scheduledUIDs(facts.PodsNaming(ref.Namespace, ref.Name))...)
	}
	if facts.Events, err = EventsAbout(ctx, client, uids...); err != nil {
		return explain.VolumeReport{}, err
	}
	if name := explain.VolumeProvisioner(pv); name != "" {
		if facts.Provisioners, err = Presence(ctx, client, facts.Now, name); err != nil {
			return explain.VolumeReport{}, err
		}
	}
	return explain.Volume(pv, facts), nil
}

// scheduledUIDs are the UIDs of the pods that have a node: their mount
// failures are part of the report.
func scheduledUIDs(pods []*v1.Pod) []types.UID {
	var out []types.UID
	for _, pod := range pods {
		if pod.Spec.NodeName != "" {
			out = append(out, pod.UID)
		}
	}
	return out
}

// ReadFacts lists what a report is made from: every volume, class, node,
// attachment and driver, and the claims and pods of namespace (every
// namespace for metav1.NamespaceAll).
func ReadFacts(ctx context.Context, client kubernetes.Interface, namespace string) (*explain.Facts, error) {
	f := &explain.Facts{Now: time.Now()}
	core, storage := client.CoreV1(), client.StorageV1()
	pvs, err := core.PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list volumes: %w", err)
	}
	f.Volumes = pointers(pvs.Items)
	claims, err := core.PersistentVolumeClaims(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list claims: %w", err)
	}
	f.Claims = pointers(claims.Items)
	pods, err := core.Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	f.Pods = pointers(pods.Items)
	nodes, err := core.Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	f.Nodes = pointers(nodes.Items)
	classes, err := storage.StorageClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list storage classes: %w", err)
	}
	f.Classes = pointers(classes.Items)
	vas, err := storage.VolumeAttachments().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list volume attachments: %w", err)
	}
	f.Attachments = pointers(vas.Items)
	drivers, err := storage.CSIDrivers().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list CSI drivers: %w", err)
	}
	f.Drivers = pointers(drivers.Items)
	return f, nil
}

// EventsAbout lists the events recorded on the objects with these UIDs.
func EventsAbout(ctx context.Context, client kubernetes.Interface, uids ...types.UID) ([]*v1.Event, error) {
	var out []*v1.Event
	for _, uid := range uids {
		sel := fields.OneTermEqualSelector("involvedObject.uid", string(uid)).String()
		list, err := client.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			return nil, fmt.Errorf("list events: %w", err)
		}
		out = append(out, pointers(list.Items)...)
	}
	return out, nil
}

// pointers turns a List's items into pointers to them.
func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// Presence reads whether each provisioner is served, from its heartbeat
// Leases (and the external-provisioner's leader election Lease).
func Presence(ctx context.Context, client kubernetes.Interface, now time.Time, provisioners ...string) (map[string]explain.Provisioner, error) {
	out := map[string]explain.Provisioner{}
	for _, name := range provisioners {
		leases, err := HeartbeatLeases(ctx, client.CoordinationV1(), name)
		if err != nil {
			return nil, err
		}
		p := heartbeat.Find(leases, name, now)
		out[name] = explain.Provisioner{Serving: p.Serving, Note: p.Reason, Nodes: p.Nodes}
	}
	return out, nil
}
