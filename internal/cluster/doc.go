// Package cluster runs an embedded Kubernetes control plane in the current
// process: etcd, the real kube-apiserver, kube-scheduler and
// kube-controller-manager (with the volume controllers that volplane replaces
// turned off), plus an agent that simulates Ready nodes.
//
// Nouns: a ControlPlane is one running instance bound to a data directory; the
// data directory holds etcd's data, the PKI (certificates generated on first
// start and reused afterwards), the admin kubeconfig and the component logs.
// A data directory is locked while a ControlPlane uses it.
//
// This is the only package of volplane that imports k8s.io/kubernetes.
// Everything binds to 127.0.0.1.
package cluster
