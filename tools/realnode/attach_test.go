package realnode

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/tools/realnode/harness"
)

// attachDetach is issue 26's network-class scenario: deploy/ re-applied
// with its attach component (deploy/attach: the bundled driver requires
// attachment, the node's volplane-node pod runs the attacher for its own
// node), then a claim of the default class; pod 1 writes a file, its
// VolumeAttachment is attached and the Node lists the volume attached;
// pod 1 deleted, the VolumeAttachment is deleted (detached) and the
// kubelet's volumesInUse drops it; pod 2 gets a new VolumeAttachment and
// reads the file; the claim deleted, the PV and the driver's volume are
// reclaimed. A poller records the order in which the API shows each change.
func attachDetach(t *testing.T, n *harness.Node) {
	ctx := context.Background()
	applyAttach(t, n)

	const claim = "realnode-attach"
	began := time.Now()
	makeClaim(t, n, claim, "32Mi")
	var pvName, handle string
	err := harness.WaitFor(3*time.Minute, func() error {
		c, err := n.Client.CoreV1().PersistentVolumeClaims("default").Get(ctx, claim, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if c.Status.Phase != corev1.ClaimBound {
			return fmt.Errorf("claim %s", c.Status.Phase)
		}
		pv, err := n.Client.CoreV1().PersistentVolumes().Get(ctx, c.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pvName, handle = pv.Name, pv.Spec.CSI.VolumeHandle
		return nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, events(t, n))
	}
	t.Logf("claim bound to %s (handle %s) in %s", pvName, handle, time.Since(began).Round(10*time.Millisecond))
	tl := track(n, pvName, handle)
	defer func() { t.Logf("what the API showed, in order (time since the claim was bound):\n%s", tl.stop()) }()

	// Pod 1 writes and stays, so that the attachment is seen while in use.
	began = time.Now()
	startPod(t, n, "realnode-attach-writer", "echo written-before-the-detach > /data/hello && sync && echo done && sleep 600", claim)
	waitLog(t, n, "realnode-attach-writer", "done")
	va1 := waitAttached(t, n, pvName, handle)
	t.Logf("pod 1 wrote through the attached volume %s after it was created; VolumeAttachment %s (uid %s) attached, publish context %v",
		time.Since(began).Round(10*time.Millisecond), va1.Name, va1.UID, va1.Status.AttachmentMetadata)

	// Pod 1 deleted: the volume is unmounted, then detached.
	began = time.Now()
	if err := n.Client.CoreV1().Pods("default").Delete(ctx, "realnode-attach-writer", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = harness.WaitFor(3*time.Minute, func() error {
		if _, err := n.Client.StorageV1().VolumeAttachments().Get(ctx, va1.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("VolumeAttachment %s still there (%v)", va1.Name, err)
		}
		node, err := n.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if inUse(node, handle) || attached(node, handle) {
			return fmt.Errorf("node still lists the volume: inUse %v attached %v", node.Status.VolumesInUse, node.Status.VolumesAttached)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, tl.stop(), events(t, n))
	}
	t.Logf("pod 1 deleted: detached (VolumeAttachment gone, node lists the volume neither in use nor attached) in %s",
		time.Since(began).Round(10*time.Millisecond))

	// Pod 2: a new attachment, and the file is there.
	began = time.Now()
	startPod(t, n, "realnode-attach-reader", "cat /data/hello && sleep 600", claim)
	waitLog(t, n, "realnode-attach-reader", "written-before-the-detach")
	va2 := waitAttached(t, n, pvName, handle)
	if va2.UID == va1.UID {
		t.Fatalf("VolumeAttachment %s kept its uid %s: not attached again", va2.Name, va2.UID)
	}
	t.Logf("pod 2 read the file through VolumeAttachment %s (uid %s, new) after %s", va2.Name, va2.UID, time.Since(began).Round(10*time.Millisecond))

	// Reclaim: pod 2 and the claim deleted; the volume is detached, its PV
	// and the driver's directory are gone.
	began = time.Now()
	if err := n.Client.CoreV1().Pods("default").Delete(ctx, "realnode-attach-reader", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := n.Client.CoreV1().PersistentVolumeClaims("default").Delete(ctx, claim, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(n.DriverData, "hostpath", "volumes", handle)
	err = harness.WaitFor(3*time.Minute, func() error {
		if _, err := n.Client.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("PV %s still there (%v)", pvName, err)
		}
		if _, err := n.Client.StorageV1().VolumeAttachments().Get(ctx, va2.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("VolumeAttachment %s still there (%v)", va2.Name, err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			return fmt.Errorf("the driver's volume %s still there (%v)", dir, err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, tl.stop(), events(t, n))
	}
	t.Logf("pod 2 and the claim deleted: detached, PV %s and the driver's volume reclaimed in %s", pvName, time.Since(began).Round(10*time.Millisecond))
	t.Logf("events:\n%s", events(t, n))
	t.Logf("the kubelet on the volume:\n%s", kubeletLines(n, pvName, handle))
}

// applyAttach re-applies deploy/ with the attach component. CSIDriver.spec.attachRequired is immutable, so the
// CSIDriver is deleted first; then the DaemonSet rolls out its new pod
// (the driver with --attach-required, the provisioner container with the
// attacher). The component's own objects go at cleanup.
func applyAttach(t *testing.T, n *harness.Node) {
	t.Helper()
	ctx := context.Background()
	dir := filepath.Join(n.Work, "overlay-attach")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// deploy/ as README applied it, and the component, from the repo by
	// relative paths (kustomize refuses absolute ones).
	base, err := filepath.Rel(dir, filepath.Join(repoRoot(t), "deploy"))
	if err != nil {
		t.Fatal(err)
	}
	component := filepath.Join(base, "attach")
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [" + base + "]\ncomponents: [" + component + "]\n"
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	kubectl(t, n, "delete", "csidriver", "hostpath.csi.volplane.io", "--wait=true")
	kubectl(t, n, "apply", "--server-side", "-k", dir)
	t.Cleanup(func() {
		_, _ = exec.Command(n.Bin.Volplane, "kubectl", "--kubeconfig", n.Admin, "delete", "--ignore-not-found",
			"clusterrolebinding/volplane-node-attacher", "clusterrole/volplane-node-attacher",
			"validatingadmissionpolicybinding/volplane-node-attachments", "validatingadmissionpolicy/volplane-node-attachments").CombinedOutput()
	})
	err = harness.WaitFor(3*time.Minute, func() error {
		ds, err := n.Client.AppsV1().DaemonSets("volplane").Get(ctx, "volplane-node", metav1.GetOptions{})
		if err != nil {
			return err
		}
		s := ds.Status
		if s.ObservedGeneration != ds.Generation || s.UpdatedNumberScheduled != s.DesiredNumberScheduled || s.NumberReady != s.DesiredNumberScheduled || s.NumberUnavailable != 0 {
			return fmt.Errorf("DaemonSet rollout: generation %d observed %d, %d updated, %d ready of %d", ds.Generation, s.ObservedGeneration,
				s.UpdatedNumberScheduled, s.NumberReady, s.DesiredNumberScheduled)
		}
		d, err := n.Client.StorageV1().CSIDrivers().Get(ctx, "hostpath.csi.volplane.io", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Spec.AttachRequired == nil || !*d.Spec.AttachRequired {
			return fmt.Errorf("CSIDriver attachRequired %v", d.Spec.AttachRequired)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("deploy/ with the attach component not rolled out: %v\n%s\n%s", err, kubectl(t, n, "get", "pods", "-A", "-o", "wide"), containerLogs(t, n, "volplane"))
	}
	t.Logf("deploy/ + deploy/attach applied (CSIDriver recreated, DaemonSet rolled out) in %s", time.Since(began).Round(10*time.Millisecond))
}

// waitAttached waits for the volume's VolumeAttachment to the node to be
// attached and the Node to list it in volumesAttached (the attachdetach
// loop's write, which the kubelet waits for before staging).
func waitAttached(t *testing.T, n *harness.Node, pvName, handle string) *storagev1.VolumeAttachment {
	t.Helper()
	ctx := context.Background()
	var va *storagev1.VolumeAttachment
	err := harness.WaitFor(2*time.Minute, func() error {
		var err error
		if va, err = attachmentOf(n, pvName); err != nil {
			return err
		}
		if !va.Status.Attached {
			return fmt.Errorf("VolumeAttachment %s not attached: %+v", va.Name, va.Status)
		}
		node, err := n.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !attached(node, handle) || !inUse(node, handle) {
			return fmt.Errorf("node volumesAttached %v volumesInUse %v", node.Status.VolumesAttached, node.Status.VolumesInUse)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, events(t, n))
	}
	return va
}

// attachmentOf is the one VolumeAttachment of the PV to the node.
func attachmentOf(n *harness.Node, pvName string) (*storagev1.VolumeAttachment, error) {
	vas, err := n.Client.StorageV1().VolumeAttachments().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i, va := range vas.Items {
		if p := va.Spec.Source.PersistentVolumeName; p != nil && *p == pvName && va.Spec.NodeName == n.Name {
			return &vas.Items[i], nil
		}
	}
	return nil, fmt.Errorf("no VolumeAttachment of %s to %s", pvName, n.Name)
}

// The unique name the kubelet and the attach/detach controller give a CSI
// volume ends in ^<handle>.
func inUse(node *corev1.Node, handle string) bool {
	for _, v := range node.Status.VolumesInUse {
		if strings.HasSuffix(string(v), "^"+handle) {
			return true
		}
	}
	return false
}

func attached(node *corev1.Node, handle string) bool {
	for _, v := range node.Status.VolumesAttached {
		if strings.HasSuffix(string(v.Name), "^"+handle) {
			return true
		}
	}
	return false
}

// waitLog waits for the pod's log to contain want.
func waitLog(t *testing.T, n *harness.Node, pod, want string) {
	t.Helper()
	err := harness.WaitFor(3*time.Minute, func() error {
		if log := n.PodLog("default", pod, "c"); !strings.Contains(log, want) {
			p, err := n.Client.CoreV1().Pods("default").Get(context.Background(), pod, metav1.GetOptions{})
			return fmt.Errorf("pod %s log %q; %s", pod, log, describe(p, err))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, events(t, n))
	}
}

func events(t *testing.T, n *harness.Node) string {
	return kubectl(t, n, "get", "events", "-A", "--sort-by=.metadata.creationTimestamp",
		"-o", "custom-columns=TIME:.metadata.creationTimestamp,OBJECT:.involvedObject.name,REASON:.reason,FROM:.source.component,MESSAGE:.message")
}

// kubeletLines are the kubelet's log lines on the volume (its attach,
// mount and detach steps), for the report.
func kubeletLines(n *harness.Node, pvName, handle string) string {
	f, err := os.Open(filepath.Join(n.Work, "kubelet.log"))
	if err != nil {
		return err.Error()
	}
	defer func() { _ = f.Close() }()
	var out []string
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		if l := s.Text(); strings.Contains(l, pvName) || strings.Contains(l, handle) {
			out = append(out, l)
		}
	}
	if len(out) > 60 {
		out = append(out[:30], append([]string{"..."}, out[len(out)-30:]...)...)
	}
	return strings.Join(out, "\n")
}

// timeline polls the volume's VolumeAttachment and the Node every 100 ms
// and records each change it sees, with the time since it began and the
// wall clock (UTC, as the kubelet's log).
type timeline struct {
	mu    sync.Mutex
	lines []string
	done  chan struct{}
	once  sync.Once
}

func track(n *harness.Node, pvName, handle string) *timeline {
	tl := &timeline{done: make(chan struct{})}
	began := time.Now()
	go func() {
		last := map[string]string{}
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			now := map[string]string{"VolumeAttachment": "none"}
			if va, err := attachmentOf(n, pvName); err == nil {
				s := fmt.Sprintf("%s uid %s attached=%t finalizers=%v", va.Name, va.UID, va.Status.Attached, va.Finalizers)
				if va.DeletionTimestamp != nil {
					s += " deleting"
				}
				if va.Status.DetachError != nil {
					s += " detachError=" + va.Status.DetachError.Message
				}
				if va.Status.AttachError != nil {
					s += " attachError=" + va.Status.AttachError.Message
				}
				now["VolumeAttachment"] = s
			}
			if node, err := n.Client.CoreV1().Nodes().Get(context.Background(), n.Name, metav1.GetOptions{}); err == nil {
				now["node volumesInUse"] = fmt.Sprint(inUse(node, handle))
				now["node volumesAttached"] = fmt.Sprint(attached(node, handle))
			}
			if pods, err := n.Client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{}); err == nil {
				var ps []string
				for _, p := range pods.Items {
					if strings.HasPrefix(p.Name, "realnode-attach-") {
						s := p.Name + " " + string(p.Status.Phase)
						if p.DeletionTimestamp != nil {
							s += " deleting"
						}
						ps = append(ps, s)
					}
				}
				now["pods"] = strings.Join(ps, ", ")
			}
			tl.mu.Lock()
			for _, k := range []string{"pods", "VolumeAttachment", "node volumesInUse", "node volumesAttached"} {
				if v, ok := now[k]; ok && v != last[k] {
					tl.lines = append(tl.lines, fmt.Sprintf("%8s %s %s: %s", time.Since(began).Round(10*time.Millisecond),
						time.Now().UTC().Format("15:04:05.000"), k, v))
					last[k] = v
				}
			}
			tl.mu.Unlock()
			select {
			case <-tl.done:
				return
			case <-tick.C:
			}
		}
	}()
	return tl
}

// stop ends the polling (once) and returns what it recorded so far.
func (tl *timeline) stop() string {
	tl.once.Do(func() { close(tl.done) })
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return strings.Join(tl.lines, "\n")
}
