// Package checkup is the I/O half of `volplane doctor`, of `volplane
// release pv` and of the invariant checks of tests: it reads the cluster
// (List calls) and the drivers' volumes (CSI ListVolumes, in one place:
// ListVolumes), asks internal/doctor what is wrong or whether a volume may
// be released, and prints the answer or writes the release; for the
// tests, it reads the State internal/invariants checks (ReadInvariants).
// It is kept out of package main so that tests drive it directly.
//
// Nouns: DoctorConfig, ReleaseConfig, Listing (one endpoint's volumes),
// RefusedError.
package checkup
