// Package protection runs the pvc-protection, pv-protection and
// vac-protection loops, the roles of kube-controller-manager's
// persistentvolumeclaim-protection, persistentvolume-protection and
// volumeattributesclass-protection controllers (v1.37): they add the
// protection finalizer to claims, volumes and VolumeAttributesClasses that
// lack it, and remove it from a claim being deleted once no pod uses it
// (ClaimLoop), from a volume being deleted once it is no longer Bound
// (VolumeLoop), and from a VolumeAttributesClass being deleted once no PV
// or claim names it (ClassLoop). With Config.TrackUnused (gate
// PersistentVolumeClaimUnusedSinceTime) ClaimLoop also keeps the claim
// condition Unused of Bound claims: True (NoPodsUsingPVC) while no pod
// that has not terminated references the claim, False (PodUsingPVC)
// while one does, lastTransitionTime at each change, written with a full
// status update as the reference does. What to do is decided by
// internal/protection; this package reads, asks it, and writes.
//
// ClassLoop looks at a class when it is added or updated, and when a PV or
// a claim that named it stops naming it or is deleted; it asks the caches
// first (informerindex.ClassUsers) and, beyond the reference, confirms an
// unused class against a live list of PVs and claims before its finalizer
// goes. Its finalizer is written with a full Update, as the reference
// does.
//
// Nouns: Config (what the loops need), ClaimLoop, VolumeLoop and ClassLoop
// (the loops, each selectable on its own), pending (the claims queued per
// namespace), batch (one namespace's claims processed together, sharing at
// most one live pod list).
//
// Claims are processed per namespace, as the reference does since v1.31:
// everything queued for a namespace is taken at once, the informer cache is
// asked first (pods by claim, informerindex.PodsUsing, the index every loop
// of the process shares), and claims no cached pod uses are confirmed against one live
// LIST of the namespace's pods, made at most once per batch. The writes of a
// batch then go out in parallel (the reference makes them one by one).
//
// Writes: one per object, none when nothing changes. A claim's finalizer is
// added or removed with a strategic-merge patch that carries the claim's UID
// (a claim deleted and re-created under the same name rejects it, UID being
// immutable) and no resourceVersion: the decision rests only on the pods
// and on the claim's identity, so a concurrent write by another loop (the
// provisioner dropping its own finalizer, the binder annotating) must not
// turn ours into a conflict and a retry. A volume's finalizer is written
// with a full Update, as the reference does: its removal rests on the
// volume's phase, and the resourceVersion makes the API server refuse the
// write if the phase changed since we read it.
package protection
