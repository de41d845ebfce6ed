// Package endpoint is the one home of a CSI endpoint's address, the form
// the kubelet and the CSI sidecars use: "unix://" followed by the
// absolute path of a unix socket, the only scheme volplane dials and
// serves.
//
// Nouns: Scheme, MaxSocketPath, Parse (address → socket path, or why
// not) and Format (socket path → address). Pure: it reads no file.
package endpoint
