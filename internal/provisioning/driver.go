package provisioning

// Driver is what the provisioner's decisions need to know of a driver it
// serves: its name and the capabilities its endpoints reported (the loop
// reads them from its CSI endpoints; nothing here talks to a driver).
type Driver struct {
	Name string
	// Accessibility: VOLUME_ACCESSIBILITY_CONSTRAINTS, so CreateVolume
	// takes topology requirements.
	Accessibility bool
	// Clone: CLONE_VOLUME, so a volume may be made from another.
	Clone bool
	// Snapshot: CREATE_DELETE_SNAPSHOT, so a volume may be restored from
	// a snapshot.
	Snapshot bool
	// Modify: MODIFY_VOLUME, so a volume takes mutable parameters
	// (VolumeAttributesClasses).
	Modify bool
	// Publish: PUBLISH_UNPUBLISH_VOLUME, so volumes are attached to nodes
	// (VolumeAttachments) before use.
	Publish bool
}

// Endpoint is one endpoint of a driver as the decisions see it: where it
// runs. A node-local endpoint has a NodeID (its node service's) and the
// segment its node reported; a central one has no NodeID.
type Endpoint struct {
	Driver   string
	NodeID   string
	Topology map[string]string
}
