package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/checkup"
	"github.com/volplane/volplane/internal/doctor"
	"github.com/volplane/volplane/internal/endpoint"
)

// exitFindings is doctor's exit code when it found problems (1 is any
// error, as for every command).
const exitFindings = 3

// exitError ends the process with code after printing err.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

// exitCode is the process's exit code for a command's error.
func exitCode(err error) int {
	var e *exitError
	if errors.As(err, &e) {
		return e.code
	}
	return 1
}

func newDoctorCommand() *cobra.Command {
	var f clusterFlags
	var endpoints []string
	var th doctor.Thresholds
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Find what is wrong with the cluster's volumes, with the command that fixes each",
		Long: `Doctor scans the cluster and reports, each with the command that fixes it:
claims Pending longer than --pending-for (with the binder's verdicts counted;
a claim no node can hold by the capacity its driver publishes, node by node,
with how to ask for less or make room; a pod put on a node by spec.nodeName,
with how to let the scheduler place it);
backend volumes no PV refers to and PVs whose backend volume is gone (read
through CSI ListVolumes of each --csi-endpoint, before and after the cluster);
VolumeAttachments, older than --attachment-grace, to deleted nodes or of
volumes no pod on their node uses and the node no longer reports in use;
claims, volumes and VolumeAttachments stuck deleting longer than
--deleting-for, with what holds each finalizer; and any broken binding
invariant. For information it lists Released Retain volumes whose claim is gone
(kept as their policy says; ` + "`volplane release pv NAME --to NS/CLAIM`" + ` gives one
to a claim).

Snapshots: backend snapshots no VolumeSnapshotContent names (through CSI
ListSnapshots of the same endpoints, before and after; offered for adoption as a
pre-provisioned content of policy Retain, never deleted); contents whose
VolumeSnapshot is gone (information under Retain; under Delete nothing deletes
them); contents ready to use whose backend snapshot no listing of their driver
holds any more (every restore from them fails: the advice is to see who
restores from it and take the snapshot again, never to delete a content a
snapshot is bound to); VolumeSnapshots and contents stuck deleting, with what
holds each finalizer. A finalizer is offered for removal only when what it protects is gone
(no Pending claim restores from the snapshot, its content is gone). On a cluster
without the snapshot API a note says "snapshot API not installed".

Every fix is safe to paste later, or says its risk first: a finalizer is removed
by a JSON patch that tests the object's resourceVersion and the finalizer's
index, so it fails once the object changed; a deletion that may lose data
carries a "Risk:" line naming what. A volume is reported missing only when
every endpoint that could hold it was listed (a node-local driver: every node
its CSINode and the PV's node affinity allow); otherwise a note says it was not
checked. A backend volume that may be a claim's being provisioned is not
offered for adoption.

With the kubeconfig of ` + "`volplane up`" + `, the CSI endpoints default to up's driver
sockets; with none, the backend checks are skipped and the report says so.

Exit codes: 0 no problems (information findings do not count), 3 problems
found, 1 doctor could not check.
-o json prints {"findings": [{"kind", "severity" ("problem" or "info"),
"object": {"kind", "namespace", "name", "driver", "node"}, "problem",
"fixes": [{"says", "risk", "command"}]}], "notes": [...]}, findings sorted by
kind then object.`,
		Example: `  volplane doctor
  volplane doctor -o json --pending-for 1m
  volplane doctor --kubeconfig k --csi-endpoint unix:///run/csi/controller.sock`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.checkOutput(); err != nil {
				return err
			}
			clients, err := f.clients()
			if err != nil {
				return err
			}
			client := clients.Kube
			cfg := checkup.DoctorConfig{Endpoints: endpoints, Thresholds: th, Output: f.output, Snapshots: clients.Snapshots}
			if !cmd.Flags().Changed("csi-endpoint") {
				cfg.Endpoints, cfg.NoEndpoints = upEndpoints(kubeconfigPath(f.kubeconfig))
			}
			r, err := checkup.Doctor(cmd.Context(), client, cfg, cmd.OutOrStdout())
			if err != nil {
				return err
			}
			if n := r.Problems(); n > 0 {
				return &exitError{code: exitFindings, err: fmt.Errorf("doctor found %d problem(s)", n)}
			}
			return nil
		},
	}
	f.addKubeconfig(cmd)
	f.addOutput(cmd)
	cmd.Flags().StringArrayVar(&endpoints, "csi-endpoint", nil,
		"CSI controller endpoint (unix:///path) whose volumes are compared with the PVs; repeat for each driver or node")
	cmd.Flags().DurationVar(&th.PendingFor, "pending-for", 5*time.Minute, "report claims Pending for longer than this")
	cmd.Flags().DurationVar(&th.DeletingFor, "deleting-for", 5*time.Minute, "report objects being deleted for longer than this")
	cmd.Flags().DurationVar(&th.AttachmentGrace, "attachment-grace", attachment.DefaultMaxWaitForUnmount,
		"report a VolumeAttachment no pod uses only once it is this old (and its node no longer reports the volume in use)")
	return cmd
}

// kubeconfigPath is the file the client reads its kubeconfig from ("" for
// in-cluster): userKubeconfig's, or the first of $KUBECONFIG.
func kubeconfigPath(flag string) string {
	if path := userKubeconfig(flag); path != "" {
		return path
	}
	if list := filepath.SplitList(os.Getenv("KUBECONFIG")); len(list) > 0 {
		return list[0]
	}
	return ""
}

// upEndpoints are the controller sockets of `volplane up` when kubeconfig
// is up's (DATA_DIR/kubeconfig beside DATA_DIR/csi/*.sock); otherwise none,
// and why.
func upEndpoints(kubeconfig string) ([]string, string) {
	const why = checkup.NoEndpointsGiven
	if kubeconfig == "" {
		return nil, why
	}
	socks, _ := filepath.Glob(filepath.Join(filepath.Dir(kubeconfig), "csi", "*.sock"))
	if len(socks) == 0 {
		return nil, why
	}
	out := make([]string, len(socks))
	for i, s := range socks {
		abs, err := filepath.Abs(s)
		if err != nil {
			return nil, why
		}
		out[i] = endpoint.Format(abs)
	}
	return out, ""
}
