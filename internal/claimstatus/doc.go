// Package claimstatus builds the claim status writes of the external-resizer
// role (the resizer and modifier loops) and of the kubelet's (the node
// agent): a strategic merge patch of the status subresource carrying only
// what a pure step changed (internal/expansion's and internal/modification's
// Mark* steps), other conditions left alone. It is pure: the write itself,
// through a client, is resizing.WriteClaim (internal/controller/resizing).
//
// Nouns:
//
//   - Precondition: what the patch asks of the server's copy. IfUnchanged
//     carries old's resourceVersion, so the server refuses the patch with a
//     conflict if the claim changed since it was read: the reference's marks
//     of progress. Always carries none, so it lands whatever changed: the
//     reference's failure marks, which must be recorded even on a claim
//     edited meanwhile, and its final writes.
//   - Patch: the patch from old to want under a Precondition.
package claimstatus
