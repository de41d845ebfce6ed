// Package support serves every e2e suite under test/e2e: its TestMain
// (Main for a control plane alone, StackMain for everything `volplane up`
// runs), the bundled drivers a suite serves in its own process (Drivers),
// the invariant checks that end its tests (ReadState, Holds), which are
// internal/invariants' promises read through internal/checkup, and the
// snapshot suites' fixtures (snapshots.go: builders, bound claims, waits
// on snapshots, contents and events).
//
// Nouns: Setup (what a suite starts once its control plane is ready),
// Drivers (hostpath drivers served in one short temporary directory).
package support
