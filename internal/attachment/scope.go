package attachment

import (
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// scope is a decision about some of the node's volumes (Facts.Scope); a
// nil *scope is the whole node, and every method says so.
type scope struct {
	volumes map[v1.UniqueVolumeName]bool
	// keys are what the node's memory is kept under for those volumes:
	// the name of each one's attachment here (a name hashes handle,
	// driver and node), and the unique names (an in-tree volume's timer).
	keys map[string]bool
}

func newScope(f Facts) *scope {
	if f.Scope == nil {
		return nil
	}
	s := &scope{volumes: f.Scope, keys: make(map[string]bool, 2*len(f.Scope))}
	for u := range f.Scope {
		s.keys[string(u)] = true
		if driver, handle, ok := SplitUnique(u); ok {
			s.keys[Name(handle, driver, f.Node.Name)] = true
		}
	}
	return s
}

// has says whether the volume is decided on.
func (s *scope) has(u v1.UniqueVolumeName) bool { return s == nil || s.volumes[u] }

// holds says whether the node's attachment is of a volume decided on: by
// its name, or by the volume it names.
func (s *scope) holds(f Facts, va *storagev1.VolumeAttachment) bool {
	if s == nil || s.keys[va.Name] {
		return true
	}
	u, ok := attachmentVolume(f, va)
	return ok && s.volumes[u]
}

// keep puts into the plan what the node holds for the volumes not decided
// on: their volumesAttached entries and their unmount timers, unchanged.
func (s *scope) keep(f Facts, here map[string]*storagev1.VolumeAttachment, p *Plan) {
	if s == nil {
		return
	}
	for _, a := range f.Node.VolumesAttached {
		if !s.volumes[a.Name] {
			p.VolumesAttached = append(p.VolumesAttached, a)
		}
	}
	for key, since := range f.UndesiredSince {
		if _, decided := here[key]; !decided && !s.keys[key] {
			p.UndesiredSince[key] = since
		}
	}
}
