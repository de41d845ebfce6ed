// Package bench holds benchmarks that compare volplane's loops with the
// reference controllers of kube-controller-manager, each run on a fresh
// embedded control plane. It may import k8s.io/kubernetes, like
// internal/cluster. Under a plain `go test` only
// TestReferenceBinderBindsAStaticPair runs (5 to 20 s); the rest are
// Benchmark functions, selected with -bench.
package bench
