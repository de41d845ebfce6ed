// Package bundle is what `volplane up` serves besides the control plane:
// the bundled CSI drivers of the simulated nodes and the API objects that
// describe them. Tests and benchmarks start the same set.
//
// Its nouns:
//
//   - Drivers: a node-local hostpath driver per node (its volumes live on
//     that node, no attaching, like local storage) and one network driver
//     (its volumes reachable from every node, attached to the node that
//     uses them, so a volume can follow its pod), with the endpoints the
//     loops and the node agent dial.
//   - Objects: the CSIDriver of each driver and the StorageClasses
//     volplane-hostpath (default, Immediate), volplane-hostpath-wffc
//     (WaitForFirstConsumer) and volplane-network (Immediate).
//   - AttributeClasses: the VolumeAttributesClasses of the node-local driver,
//     volplane-standard {tier: standard} and volplane-fast {tier: premium,
//     iops: "3000"}; a claim names one in spec.volumeAttributesClassName at
//     creation or later, and the driver records the parameters.
package bundle
