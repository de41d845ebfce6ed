package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	"github.com/spf13/pflag"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/userdriver"
)

// addUserDriverFlags registers the --driver* flags of `up` and
// `conformance`.
func addUserDriverFlags(f *pflag.FlagSet, u *userdriver.Flags) {
	f.StringArrayVar(&u.Drivers, "driver", nil, "NAME='CMD ARGS': run your CSI driver NAME instead of the bundled ones: CMD once as its controller service and once per simulated node as its node service, with {endpoint} (the unix:// socket to serve), {node} (the node's name, \"controller\" for the controller), {dir} (a private directory of that process) and {role} (controller or node) substituted; repeatable")
	f.StringArrayVar(&u.Endpoints, "driver-endpoint", nil, "NAME=controller=unix://PATH,node-1=unix://PATH,...: a CSI driver you run yourself, by its sockets (one for the controller service, one per simulated node; one socket may serve both); repeatable")
	f.StringArrayVar(&u.PerNode, "driver-per-node", nil, "NAME: start --driver NAME once per node only, each process serving the controller service too (a driver whose volumes live on the node that made them); repeatable")
	f.StringArrayVar(&u.Classes, "driver-class", nil, "NAME:KEY=VALUE: a parameter of driver NAME's StorageClasses; repeatable")
	f.StringArrayVar(&u.Attributes, "driver-attributes", nil, "NAME:KEY=VALUE: a mutable parameter of driver NAME's VolumeAttributesClass (made when the driver has MODIFY_VOLUME and this names a parameter); repeatable")
	f.StringArrayVar(&u.Secrets, "driver-secret", nil, "NAME:KIND=FILE: a secret of driver NAME's classes from a file of KEY=VALUE lines; KIND is provisioner, node-stage, node-publish or expand; repeatable")
	f.StringArrayVar(&u.PodInfoOnMount, "driver-pod-info-on-mount", nil, "NAME: driver NAME's CSIDriver has podInfoOnMount (CSI does not report it)")
	f.StringArrayVar(&u.StorageCapacity, "driver-storage-capacity", nil, "NAME: driver NAME's CSIDriver has storageCapacity (CSI does not report it)")
	f.StringArrayVar(&u.FSGroupPolicy, "driver-fs-group-policy", nil, "NAME=POLICY: driver NAME's CSIDriver fsGroupPolicy: ReadWriteOnceWithFSType (the default), File or None")
}

// nodeNames are the simulated nodes' names of a cluster of n nodes.
func nodeNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = cluster.NodeName(i + 1)
	}
	return out
}

// upDrivers are the CSI drivers `up` serves: the bundled ones, or the
// user's in their place.
type upDrivers struct {
	// Endpoints are the controller endpoints the loops dial, NodeEndpoints
	// the node services per node.
	Endpoints     []string
	NodeEndpoints map[string][]string
	// User are the user's drivers, with what each reported and the objects
	// registered for it, in the order named (none: the bundled drivers).
	User []userDriver
	// Processes are the user's driver processes volplane started (nil with
	// the bundled drivers).
	Processes *userdriver.Drivers
	// FakeMounts records the bundled drivers' mounts with --fake-mounts
	// (else nil).
	FakeMounts *hostpath.FakeMounter

	failed <-chan error
	stop   func()
}

// userDriver is one user driver as `up` runs it.
type userDriver struct {
	Spec             userdriver.Spec
	Controller, Node csi.Info
	Names            userdriver.Names
}

// Failed carries the error of a driver that stopped on its own.
func (d *upDrivers) Failed() <-chan error { return d.failed }

// Stop stops the drivers volplane started.
func (d *upDrivers) Stop() { d.stop() }

// startDrivers starts the bundled drivers, or the user's specs in their
// place, and registers their objects.
func startDrivers(ctx context.Context, cp *cluster.ControlPlane, dir string, flags upDriverFlags, specs []userdriver.Spec, faults hostpath.Faults) (*upDrivers, error) {
	if len(specs) == 0 {
		bcfg := bundle.Config{DataDir: dir, Nodes: cp.Nodes,
			Capacity: flags.capacity.Value(), NetworkMaxVolumesPerNode: flags.networkMaxVolumes, Faults: faults}
		var fake *hostpath.FakeMounter
		if flags.fakeMounts {
			fake = hostpath.NewFakeMounter()
			bcfg.Mounter = fake
		}
		b, err := bundle.Start(ctx, bcfg)
		if err != nil {
			return nil, err
		}
		d := &upDrivers{Endpoints: b.Endpoints, NodeEndpoints: b.NodeEndpoints, FakeMounts: fake, failed: b.Failed(), stop: b.Stop}
		if err := bundle.Register(ctx, cp.Client); err != nil {
			b.Stop()
			return nil, err
		}
		if err := bundle.RegisterSnapshots(ctx, cp.RESTConfig); err != nil {
			b.Stop()
			return nil, err
		}
		return d, nil
	}
	procs, err := userdriver.Start(userdriver.Config{DataDir: dir, Nodes: cp.Nodes, Specs: specs})
	if err != nil {
		return nil, err
	}
	d := &upDrivers{Endpoints: procs.Endpoints, NodeEndpoints: procs.NodeEndpoints, Processes: procs, failed: procs.Failed(), stop: procs.Stop}
	if err := d.register(ctx, cp, specs); err != nil {
		procs.Stop()
		return nil, err
	}
	return d, nil
}

// register probes each user driver and registers what it can do: its
// CSIDriver, classes, snapshot classes and secrets. The snapshot API is
// installed whatever the drivers can do, as with the bundled drivers.
func (d *upDrivers) register(ctx context.Context, cp *cluster.ControlPlane, specs []userdriver.Spec) error {
	if err := bundle.InstallSnapshotAPI(ctx, cp.RESTConfig); err != nil {
		return err
	}
	snaps, err := snapclient.NewForConfig(cp.RESTConfig)
	if err != nil {
		return err
	}
	var errs []error
	for i, s := range specs {
		ctrl, node, err := userdriver.Probe(ctx, s.Name, d.Processes.Controllers[s.Name][0], d.Processes.Nodes[s.Name][cp.Nodes[0]])
		if err != nil {
			return err
		}
		secrets, err := userdriver.ReadSecrets(s)
		if err != nil {
			return err
		}
		set, names := userdriver.Objects(s, ctrl, secrets, i == 0)
		errs = append(errs, bundle.RegisterObjects(ctx, cp.Client, snaps, set))
		d.User = append(d.User, userDriver{Spec: s, Controller: ctrl, Node: node, Names: names})
	}
	return errors.Join(errs...)
}

// describe tells what `up` serves once it is up.
func (d *upDrivers) describe(out io.Writer, nodes int) {
	if len(d.User) == 0 {
		fmt.Fprintf(out, "CSI driver %s on each of the %d simulated node(s), network CSI driver %s for all.\n", hostpath.DriverName, nodes, hostpath.NetworkDriverName)
		fmt.Fprintf(out, "StorageClasses: %s (default, Immediate), %s (WaitForFirstConsumer), %s (network, attached to the pod's node, Immediate).\n",
			bundle.ImmediateClass, bundle.WaitClass, bundle.NetworkClass)
		fmt.Fprintf(out, "VolumeSnapshotClasses: %s, %s (each its driver's default); VolumeGroupSnapshotClass: %s.\n",
			bundle.SnapshotClass, bundle.NetworkSnapshotClass, bundle.GroupSnapshotClass)
		return
	}
	for i, u := range d.User {
		how := "started by volplane"
		if !u.Spec.Started() {
			how = "served by you"
		}
		fmt.Fprintf(out, "CSI driver %s (%s): %s.\n", u.Spec.Name, how, capabilities(u.Controller, u.Node))
		classes := []string{u.Names.ImmediateClass + " (Immediate)", u.Names.WaitClass + " (WaitForFirstConsumer)"}
		if i == 0 {
			classes[0] = u.Names.ImmediateClass + " (default, Immediate)"
		}
		fmt.Fprintf(out, "  StorageClasses: %s", strings.Join(classes, ", "))
		for _, extra := range [][2]string{{"VolumeSnapshotClass", u.Names.SnapshotClass}, {"VolumeGroupSnapshotClass", u.Names.GroupClass}, {"VolumeAttributesClass", u.Names.AttributesClass}} {
			if extra[1] != "" {
				fmt.Fprintf(out, "; %s %s", extra[0], extra[1])
			}
		}
		fmt.Fprintln(out, ".")
	}
}

// capabilities says in words what a driver reported.
func capabilities(ctrl, node csi.Info) string {
	var can []string
	add := func(ok bool, what string) {
		if ok {
			can = append(can, what)
		}
	}
	add(ctrl.Publish, "attach")
	add(node.Stage, "stage")
	add(ctrl.ControllerExpand || node.Expand, "expand")
	add(ctrl.Modify, "modify")
	add(ctrl.Clone, "clone")
	add(ctrl.Snapshot, "snapshot")
	add(ctrl.GroupSnapshot, "group snapshot")
	add(ctrl.List, "list volumes")
	add(ctrl.Accessibility, "topology "+strings.Join(slices.Sorted(maps.Keys(node.Topology)), ","))
	if node.MaxVolumes > 0 {
		can = append(can, fmt.Sprintf("at most %d volumes per node", node.MaxVolumes))
	}
	if len(can) == 0 {
		return "provision only"
	}
	return strings.Join(can, ", ")
}
