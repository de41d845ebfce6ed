package index

// Reserve holds a PV for a claim (namespace/name) between choosing it and
// writing the bind: FindBest skips it for every other claim. It reports false
// when the PV is unknown or already held by another claim. Reserving again for
// the same claim is a no-op that reports true.
func (x *Index) Reserve(pvName, claimKey string) bool {
	e, ok := x.entries[pvName]
	if !ok {
		return false
	}
	if holder, held := x.reserved[pvName]; held {
		return holder == claimKey
	}
	x.reserved[pvName] = claimKey
	addTo(x.holds, claimKey, pvName)
	if e.free {
		x.untree(e)
	}
	return true
}

// Release ends a reservation (after the bind was written, or failed). A free
// PV goes back into its tree. Releasing an unreserved PV does nothing.
func (x *Index) Release(pvName string) {
	claimKey, held := x.reserved[pvName]
	if !held {
		return
	}
	delete(x.reserved, pvName)
	removeFrom(x.holds, claimKey, pvName)
	if e, ok := x.entries[pvName]; ok && e.free {
		x.tree(e.shape).ReplaceOrInsert(e.item)
	}
}

// ReservedBy returns the claim holding the PV, if any.
func (x *Index) ReservedBy(pvName string) (claimKey string, ok bool) {
	claimKey, ok = x.reserved[pvName]
	return claimKey, ok
}
