// Package keyedmutex serializes work on one key (a PV name, a volume ID)
// while work on different keys runs in parallel.
//
// Nouns:
//   - Mutex: one lock per key in use, reference counted so that it holds
//     only the keys someone holds or waits for.
//   - PendingError: a Lock that gave up because its context ended while
//     another holder kept a key.
package keyedmutex
