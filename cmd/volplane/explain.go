package main

import (
	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/volplane/volplane/internal/inspect"
)

func newExplainCommand() *cobra.Command {
	var f clusterFlags
	var namespace string
	cmd := &cobra.Command{
		Use:   "explain (pvc NAMESPACE/NAME | pv NAME | volumesnapshot NAMESPACE/NAME | volumesnapshotcontent NAME | volumegroupsnapshot NAMESPACE/NAME | volumegroupsnapshotcontent NAME)",
		Short: "Explain why a claim, volume or snapshot is (not) bound or ready, and what happens next",
		Long: `Explain says what a PersistentVolumeClaim or PersistentVolume is waiting for, in
one sentence, and why: every volume considered for a claim with the binder's own
verdict, counted by reason; the class, its binding mode and whether anything
serves its provisioner; the pods a WaitForFirstConsumer claim waits for;
provisioning failures; once bound, the attach and mount state per node, a
pending expansion or modification; and what holds a deletion. For a claim with
a data source (a VolumeSnapshot to restore, a claim to clone): the provisioner's
own checks on it (bound both ways, same driver, ready, restore size against the
request, a volume mode change the content allows) and why the restore waits or
is refused; a source in another namespace is refused, never read. For a volume:
why it is Available, Released or Failed and what its reclaim policy does next.

For a VolumeSnapshot (vs): why it is not ready (its claim, its class or its
driver's default class, its content, the driver's error, the snapshotter it
waits for), its content, backend snapshot and restore size, its group, the
claims that restore from it, and every finalizer on it and on its content with
what it protects and who removes it. For a VolumeSnapshotContent (vsc): its
backend snapshot, its snapshot and what holds its deletion.

For a VolumeGroupSnapshot (vgs): why it is not ready, as the group snapshot
loop decides it (its class or its driver's default group class, the claims of
its own namespace its selector matches and what keeps each from being taken,
its content, the snapshotter it waits for), its members (snapshot, content,
ready or not), and what holds its deletion. For a VolumeGroupSnapshotContent
(vgsc): its backend group snapshot, its group, its members and what holds its
deletion.`,
		Example: `  volplane explain pvc default/data
  volplane explain pvc data -n default -o json
  volplane explain pv pvc-0b9c...
  volplane explain vs default/nightly
  volplane explain volumesnapshotcontent snapcontent-4f1e...
  volplane explain vgs default/db-group
  volplane explain vgsc groupsnapcontent-7a2d...`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.checkOutput(); err != nil {
				return err
			}
			clients, err := f.clients()
			if err != nil {
				return err
			}
			return inspect.ExplainWith(cmd.Context(), clients, args[0], args[1], namespace, f.output, cmd.OutOrStdout())
		},
	}
	f.addKubeconfig(cmd)
	f.addOutput(cmd)
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "default", "namespace of a claim or snapshot given without one")
	return cmd
}

// clients connects to the cluster the flags name, with the core and the
// snapshot clientsets made from the same rest.Config.
func (f *clusterFlags) clients() (inspect.Clients, error) {
	rc, err := loadRESTConfig(userKubeconfig(f.kubeconfig))
	if err != nil {
		return inspect.Clients{}, err
	}
	rc.UserAgent = "volplane-cli"
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return inspect.Clients{}, err
	}
	snaps, err := snapclient.NewForConfig(rc)
	if err != nil {
		return inspect.Clients{}, err
	}
	return inspect.Clients{Kube: kube, Snapshots: snaps}, nil
}
