// Package architecture holds no code: its tests enforce the shape that
// docs/architecture.md describes, so that the document cannot drift from
// the tree unnoticed.
//
// Nouns:
//   - a floor: where a package sits in the import picture (leaf, pure core,
//     I/O half, loop machinery, loop, manager, driver, control plane,
//     harness, command, test). Every package of the module has exactly one,
//     named in floors (floors_test.go); an arrow goes down or sideways,
//     never up.
//   - a rule: an arrow that must never be drawn, on a package's direct
//     imports as `go list` reports them (not its dependencies: an allowed
//     library such as component-helpers may pull in client-go), with the
//     reason a reader needs when it fires (rules in imports_test.go).
//   - a purity finding: what go/ast sees in a pure package's non-test files
//     that a decision must not do: read the clock, touch the host (os),
//     start a goroutine, keep state in a package-level var
//     (purity_test.go); and, in every package, the two calls that have one
//     home only: a queue's AddAfter/AddRateLimited (the loop runner owns
//     retry) and an informer's AddIndexers (informerindex is the one
//     registry).
//   - pending: the one table of violations known today, each with who is
//     expected to remove it. A violation not in it fails; an entry that no
//     longer happens fails too, so the table only shrinks.
//
// A package-level var in a pure package is allowed when it is a table:
// given its value at its declaration (errors.New sentinels, compiled
// regexps, reason → message maps, orders computed once) and never written
// after, nor its address taken, nor built from package sync. Anything else
// is state, and state belongs to whoever calls the decision.
package architecture
