// Package compat runs volplane's end-to-end core against the oldest
// Kubernetes release it supports (TestOldestSupportedRelease).
package compat
