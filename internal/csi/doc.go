// Package csi is volplane's thin client for CSI drivers: it dials a driver's
// unix socket, probes what the driver is and can do, wraps the controller
// calls the control loops need with per-call timeouts and a latency
// histogram, and is the one place that classifies CSI errors.
//
// Nouns: Endpoint (one dialed socket and what its probe learned), Info (the
// probe's result), Pool (the endpoints grouped by driver name, choosing one
// per call deterministically), Class (Transient or Final, of an error).
package csi
