// Package support serves every e2e suite under test/e2e: its TestMain
// (Main for a control plane alone, StackMain for everything `volplane up`
// runs), the bundled drivers a suite serves in its own process (Drivers),
// and the invariant checks that end its tests (ReadState, Holds), which
// are internal/invariants' promises read through internal/checkup.
//
// Nouns: Setup (what a suite starts once its control plane is ready),
// Drivers (hostpath drivers served in one short temporary directory).
package support
