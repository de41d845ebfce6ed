// Package manager runs volplane's control loops against one cluster: the
// clients, the shared informers, the event recorder, leader election and the
// metrics/health endpoint that every loop shares.
//
// Nouns: Config (what `volplane controller` and `volplane up` pass in),
// Run (blocks until the context ends or leadership is lost).
package manager
