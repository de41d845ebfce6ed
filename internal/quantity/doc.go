// Package quantity converts the sizes users write (resource.Quantity: any
// number the API server accepts, however large or fine) into the byte
// counts of CSI requests. It is the one home of that rule: a size that is
// negative or beyond int64 is refused, never wrapped around by
// Quantity.Value() into a small one.
package quantity
