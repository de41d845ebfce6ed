// Package fuzzing turns the bytes of a native Go fuzz input into the
// objects a fuzz target decides about, for the fuzz targets of the pure
// packages (binding, index, protection, mounting, explain, ...).
//
// Nouns: an Input is the fuzz bytes read front to back; every read takes
// what it needs and, once the bytes run out, reads zero, so any input (the
// empty one included) decodes to some object and the fuzzer's mutations of
// one byte change one choice. Word picks from a small vocabulary seven times
// in eight and otherwise takes raw bytes, so that names collide often enough for
// matching to happen while any string a user can write still turns up.
//
// Only tests import it; it has no effect on the binaries.
package fuzzing
