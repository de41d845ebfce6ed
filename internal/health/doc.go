// Package health holds the pure half of volume health: the mapping of CSI
// 1.13's health answers to the API's health conditions (as the 1.37
// kubelet maps them, pkg/volume/csi/csi_client.go), the comparison that
// decides whether a field changes (pkg/volume/util
// VolumeHealthConditionSetsEqual), and the decisions of the health-monitor
// loop (a claim) and of the node agent (a pod's volume): which events to
// record, which status to write, or why nothing is done (Skip, a closed
// set).
package health
