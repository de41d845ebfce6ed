package explain

// GroupReport explains one VolumeGroupSnapshot (work in progress).
type GroupReport struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}
