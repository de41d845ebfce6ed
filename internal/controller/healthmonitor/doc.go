// Package healthmonitor is the health-monitor loop, the
// external-health-monitor controller's role: every Interval it asks each
// CSI controller the health of its volumes (ControllerListVolumeHealth when
// the driver offers it, else ControllerGetVolumeHealth per volume, as the
// reference chooses between list and get), decides per bound claim with
// internal/health and records VolumeConditionAbnormal /
// VolumeConditionNormal events on the claim; with the CSIVolumeHealth gate
// on it also writes the claim's status.healthStatus (through
// internal/claimstatus), cleared when the volume returns to normal.
//
// Only a claim the volume's claimRef names, by UID, and whose
// spec.volumeName names the volume back is reported on (health.Owner).
//
// In node deployment (Config.NodeName, beside a node-local driver whose
// controller service runs on every node) each node's monitor reports on
// the volumes its node's driver holds only (provisioning.ForVolume), so
// no claim is reported on by two nodes.
package healthmonitor
