package mounting

// StopPlan is what a clean stop of `volplane up` undoes on a node: every
// publication, then every staging found on disk, through the drivers, so
// that nothing the simulated node mounted stays mounted on the host (a
// kubelet leaves its mounts in place: `up` differs there, its data dir
// must be removable once it stopped). Nothing else: no pod deletion is
// finished and node.status.volumesInUse is not written (the stop is the
// machine's, not a drain: the pods stay Running), and the records go with
// the mounts, so the next start finds the running pods' volumes neither
// staged nor published and mounts them again (Decide: Stage, Publish).
func StopPlan(w World) Plan {
	return Plan{Unpublish: append([]Published(nil), w.Published...), Unstage: append([]Staged(nil), w.Staged...)}
}
