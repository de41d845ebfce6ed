// Package manager runs volplane's control loops against one cluster: the
// clients, the shared informers, the event recorder, leader election and the
// metrics/health endpoint that every loop shares.
//
// Nouns: Config (what `volplane controller` and `volplane up` pass in),
// Run (blocks until the context ends or leadership is lost). The loops
// (binder, provisioner, protection, attach, expander) share one informer
// factory; the CSI endpoints are dialed when the loops start, and /readyz
// answers ok only once every selected loop has synced its caches.
package manager
