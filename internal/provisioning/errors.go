package provisioning

import (
	"errors"
)

// finalError is an error retrying the same request cannot fix by itself: a
// class or claim the driver cannot serve, or a final answer from the driver.
// With a selected node it asks the scheduler to choose again.
type finalError struct{ err error }

func (e *finalError) Error() string { return e.err.Error() }
func (e *finalError) Unwrap() error { return e.err }

func Final(err error) error { return &finalError{err} }

func IsFinal(err error) bool {
	var f *finalError
	return errors.As(err, &f)
}
