package csi

import "google.golang.org/grpc/status"

// code is the status code of err for metrics ("OK" for nil). What an error
// means to its caller is internal/csierror's.
func code(err error) string { return status.Code(err).String() }
