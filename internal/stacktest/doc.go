// Package stacktest is the whole-stack test harness: it gives a test
// package one embedded control plane, started in TestMain and shared by its
// tests (Main, ControlPlane), a fresh namespace per test (Namespace) so
// that tests stay independent while paying the start-up once, and what
// `volplane up` runs on it with each part restartable (Stack: the bundled
// drivers, the node agent, the loops). It sits on top of everything it
// runs and only tests import it; test/e2e/support builds the e2e suites'
// TestMain on it.
//
// Nouns: Stack, StackConfig, Loops (manager.Run in the background),
// LoopRun and LoopDeps (one loop a test builds and runs), WriteLog (a
// client's API writes, with a crash point), conditions for Eventually and
// Holds, golden files with StableNames.
package stacktest
