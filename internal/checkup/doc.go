// Package checkup is the I/O half of `volplane doctor` and `volplane
// release pv`: it reads the cluster (List calls) and the drivers' volumes
// (CSI ListVolumes), asks internal/doctor what is wrong or whether a
// volume may be released, and prints the answer or writes the release.
// It is kept out of package main so that tests drive it directly.
package checkup
