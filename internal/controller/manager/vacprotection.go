package manager

import "github.com/volplane/volplane/internal/controller/protection"

// VACProtection is kube-controller-manager's
// volumeattributesclass-protection-controller: the finalizer
// kubernetes.io/vac-protection on VolumeAttributesClasses in use.
const VACProtection = "vac-protection"

// newClassProtection builds the vac-protection loop.
func newClassProtection(w wiring) ([]Runnable, error) {
	l, err := protection.NewClassLoop(protectionConfig(w))
	if err != nil {
		return nil, err
	}
	return []Runnable{l}, nil
}
