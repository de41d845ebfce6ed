package doctor

// KindMissingBackendSnapshot: a ready VolumeSnapshotContent whose backend
// snapshot its driver no longer has (work in progress).
const KindMissingBackendSnapshot Kind = "missing-backend-snapshot"
