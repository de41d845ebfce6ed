package userdriver

import (
	"context"
	"fmt"

	"github.com/volplane/volplane/internal/csi"
)

// Probe dials a driver's controller endpoint and one of its node
// endpoints and returns what each reported, refusing a driver that answers
// to another name or serves no controller or node service there.
func Probe(ctx context.Context, name, controller, node string) (ctrl, nodeInfo csi.Info, err error) {
	ctrl, err = probeOne(ctx, name, controller)
	if err == nil && !ctrl.Controller {
		err = fmt.Errorf("driver %s at %s serves no controller service (no CONTROLLER_SERVICE in GetPluginCapabilities)", name, controller)
	}
	if err != nil {
		return ctrl, nodeInfo, err
	}
	nodeInfo, err = probeOne(ctx, name, node)
	if err == nil && !nodeInfo.Node {
		err = fmt.Errorf("driver %s at %s serves no node service (NodeGetInfo failed)", name, node)
	}
	return ctrl, nodeInfo, err
}

func probeOne(ctx context.Context, name, address string) (csi.Info, error) {
	e, err := csi.Dial(ctx, address, nil)
	if err != nil {
		return csi.Info{}, fmt.Errorf("driver %s: %w", name, err)
	}
	defer func() { _ = e.Close() }()
	if e.Info.Driver != name {
		return e.Info, fmt.Errorf("driver at %s answers GetPluginInfo with %q, not %q: name it so in --driver or --driver-endpoint", address, e.Info.Driver, name)
	}
	return e.Info, nil
}
