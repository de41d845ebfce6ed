// Package csi is volplane's thin client for CSI drivers: it dials a driver's
// unix socket (its address parsed by internal/endpoint), probes what the
// driver is and can do, and wraps the controller calls the control loops
// need with per-call timeouts and a latency histogram. It speaks gRPC only:
// what a CSI error means is internal/csierror's, and the Secrets a call
// carries are read by the loops (internal/controller/secrets).
//
// Nouns: Endpoint (one dialed socket and what its probe learned), Info (the
// probe's result), Pool (the endpoints grouped by driver name, choosing one
// per call deterministically, by a PV's node affinity for node-local
// drivers).
package csi
