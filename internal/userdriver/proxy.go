package userdriver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	// The CSI spec's messages and services, registered with protobuf's
	// global registry, which the proxy looks its methods up in.
	_ "github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/volplane/volplane/internal/endpoint"
	"github.com/volplane/volplane/internal/hostpath"
)

// FaultProxy serves a CSI socket that forwards every call to a driver's
// socket, injecting seeded faults (hostpath.Faults: a call failed before it
// is done, done but reported as timed out, or delayed) while faults are
// on: a driver volplane did not write meets the same faults as the bundled
// one does in the soak.
type FaultProxy struct {
	// Address is the proxy's unix:// socket, for the loops to dial.
	Address string

	inject *hostpath.FaultInterceptor
	on     atomic.Bool
	srv    *grpc.Server
	conn   *grpc.ClientConn
	done   chan struct{}
}

// StartFaultProxy serves socket, forwarding to upstream (unix://...), with
// faults off until SetFaults(true).
func StartFaultProxy(socket, upstream string, f hostpath.Faults) (*FaultProxy, error) {
	inject, err := hostpath.NewFaultInterceptor(f)
	if err != nil {
		return nil, err
	}
	path, err := endpoint.Parse(upstream)
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient("passthrough:///"+path, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}))
	if err != nil {
		return nil, err
	}
	if err := os.Remove(socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		_ = conn.Close()
		return nil, err
	}
	l, err := net.Listen("unix", socket)
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("fault proxy: %w", err)
	}
	p := &FaultProxy{Address: endpoint.Format(socket), inject: inject, conn: conn, done: make(chan struct{})}
	p.srv = grpc.NewServer(grpc.UnknownServiceHandler(p.forward))
	go func() {
		defer close(p.done)
		_ = p.srv.Serve(l)
	}()
	return p, nil
}

// SetFaults turns the faults on or off.
func (p *FaultProxy) SetFaults(on bool) { p.on.Store(on) }

// Injected is how many calls the proxy faulted so far.
func (p *FaultProxy) Injected() int64 { return p.inject.Injected() }

// Stop stops serving and closes the connection to the driver.
func (p *FaultProxy) Stop() {
	p.srv.Stop()
	<-p.done
	_ = p.conn.Close()
}

// forward handles one call: CSI has unary methods only. The request and
// response types come from the method's descriptor, so the fault
// interceptor sees the typed request (the subject of a fault is the
// volume's name or ID).
func (p *FaultProxy) forward(_ any, stream grpc.ServerStream) error {
	method, ok := grpc.MethodFromServerStream(stream)
	if !ok {
		return status.Error(codes.Internal, "fault proxy: no method")
	}
	in, out, err := messages(method)
	if err != nil {
		return status.Error(codes.Unimplemented, err.Error())
	}
	if err := stream.RecvMsg(in); err != nil {
		return err
	}
	call := func(ctx context.Context, req any) (any, error) {
		resp := proto.Clone(out)
		if err := p.conn.Invoke(ctx, method, req, resp); err != nil {
			return nil, err
		}
		return resp, nil
	}
	var resp any
	if p.on.Load() {
		resp, err = p.inject.Intercept(stream.Context(), in, &grpc.UnaryServerInfo{FullMethod: method}, call)
	} else {
		resp, err = call(stream.Context(), in)
	}
	if err != nil {
		return err
	}
	return stream.SendMsg(resp)
}

// messages are new request and response messages of a full method name
// such as /csi.v1.Controller/CreateVolume.
func messages(method string) (proto.Message, proto.Message, error) {
	svc, name, ok := splitMethod(method)
	if !ok {
		return nil, nil, fmt.Errorf("fault proxy: %q is no method name", method)
	}
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(svc))
	if err != nil {
		return nil, nil, fmt.Errorf("fault proxy: unknown service %s", svc)
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil, nil, fmt.Errorf("fault proxy: %s is no service", svc)
	}
	md := sd.Methods().ByName(protoreflect.Name(name))
	if md == nil {
		return nil, nil, fmt.Errorf("fault proxy: unknown method %s", method)
	}
	newMsg := func(n protoreflect.FullName) (proto.Message, error) {
		t, err := protoregistry.GlobalTypes.FindMessageByName(n)
		if err != nil {
			return nil, err
		}
		return t.New().Interface(), nil
	}
	in, err := newMsg(md.Input().FullName())
	if err != nil {
		return nil, nil, err
	}
	out, err := newMsg(md.Output().FullName())
	return in, out, err
}

// splitMethod splits /pkg.Service/Method.
func splitMethod(m string) (svc, name string, ok bool) {
	svc, name, ok = strings.Cut(strings.TrimPrefix(m, "/"), "/")
	return svc, name, ok && strings.HasPrefix(m, "/") && svc != "" && name != ""
}
