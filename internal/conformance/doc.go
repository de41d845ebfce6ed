// Package conformance is the scenario engine of `volplane conformance`: it
// runs, against one CSI driver on a lab cluster (Lab), the lifecycle
// scenarios the driver's capabilities call for, each in a fresh namespace
// with its own timeout, cleans up after each, checks the invariants
// (internal/invariants) against the driver's own listing, and reports.
//
// Nouns: Lab (the cluster and driver under test), Scenario (a named,
// capability-gated list of Steps; Scenarios is the registry in its fixed
// order, Select the pure choice of what applies and what is Skipped and
// why), Session (one scenario's run: its namespace, what it created and
// deleted; StepError and WaitError are how a step fails), Options, Report
// with one Result per scenario and, for a failure, its Failure (step,
// error, the object waited on, the CSI call and its Warning event,
// explain's account of the claim, broken invariants), rendered as a text
// table, JSON or JUnit XML; Reports are a run's reports, one per driver.
//
// The lab's hooks decide what can run: Restart (the kill scenarios, for a
// driver the lab started), Faults (the fault proxy's switch), NodeDown (a
// simulated node taken down, for the out-of-service taint); nil hooks skip
// their scenarios with the reason.
package conformance
