package hostpathtest

import (
	"testing"

	"google.golang.org/grpc"

	"github.com/volplane/volplane/internal/hostpath"
)

// ServeIntercepted is Serve with an interceptor around every call the
// driver serves, to watch what it is sent or to fault its answers.
func ServeIntercepted(t testing.TB, node string, capacity int64, interceptor grpc.UnaryServerInterceptor) string {
	t.Helper()
	return serve(t, hostpath.Config{NodeID: node, Capacity: capacity, Interceptor: interceptor})
}
