// Package architecture holds no code: its tests hold the tree to the shape
// docs/architecture.md describes, so that the document and the code cannot
// drift apart unnoticed. They read the module with one `go list` call (the
// go command of the running toolchain) and parse each package's non-test
// files once.
//
// Nouns:
//   - a floor: where a package sits in the import picture (leaf, pure core,
//     I/O half, loop machinery, loop, manager, driver, control plane,
//     harness, command, test). Every package of the module has exactly one,
//     in floors (floors_test.go), and the document's floors table says the
//     same (doc_test.go). An arrow goes down or sideways, never up.
//   - a rule: an arrow that must never be drawn, read on a package's direct
//     imports as `go list` reports them, not its dependencies (an allowed
//     library such as component-helpers may pull in client-go); written as
//     one table, importRules (imports_test.go), each row with the reason a
//     reader needs when it fires.
//   - a purity finding: what go/ast sees in a leaf's or pure core's non-test
//     files that a decision must not do: read the clock, touch the host,
//     start a goroutine, log, keep state in a package-level var
//     (purity_test.go); and, in every package, the calls that have one home
//     only: AddAfter/AddRateLimited (the loop runner owns retry) and
//     AddIndexers (informerindex is the one registry), and every
//     loop.Runner given the metrics registry (onehome_test.go).
//   - no exceptions: every finding fails (report_test.go); a rule the tree
//     does not meet yet is added with the change that makes it true.
//
// A package-level var in a pure package is allowed when it is a table:
// given its value at its declaration (errors.New sentinels, compiled
// regexps, reason → message maps, orders computed once), never written
// after (assigned, incremented, deleted from, cleared), its address never
// taken, nothing of package sync in it. Anything else is state, and state
// belongs to whoever calls the decision. The check resolves names with
// go/types over stand-in imports, so a local that shadows a table is not
// mistaken for it, without compiling any dependency.
package architecture
