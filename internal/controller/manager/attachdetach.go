package manager

import (
	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/controller/attachdetach"
)

// newAttachDetach builds the attachdetach loop: kube-controller-manager's
// attach/detach controller, with its 6-minute unmount wait.
func newAttachDetach(w wiring) ([]Runnable, error) {
	c, err := attachdetach.New(attachdetach.Config{
		Client: w.Client, Informers: w.Informers, Recorder: w.Recorder(attachment.EventComponent), Metrics: w.Metrics,
		Workers: w.Config.Workers, ResyncPeriod: w.Config.ResyncPeriod, MaxWaitForUnmount: w.Config.MaxWaitForUnmount,
	})
	if err != nil {
		return nil, err
	}
	return []Runnable{c}, nil
}
