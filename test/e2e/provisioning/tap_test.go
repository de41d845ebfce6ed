package provisioning

import (
	"context"
	"maps"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// faultParam, among a test class's parameters, makes every node's driver
// misbehave for the volumes of that class; the drivers ignore it otherwise.
const faultParam = "e2e.volplane.io/fault"

// faultExhaustedAfterCreate: CreateVolume makes the volume, then answers
// ResourceExhausted, once per volume name, as a gRPC size limit or a driver
// still finishing the volume can.
const faultExhaustedAfterCreate = "exhausted-after-create"

// driverCalls sits in front of every node's driver (hostpath.Config's
// Interceptor): it injects the faults and records the secrets each call
// carried, by "CreateVolume <name>" and "DeleteVolume <volume ID>".
var driverCalls = &tap{faulted: map[string]bool{}, secrets: map[string]map[string]string{}}

type tap struct {
	mu      sync.Mutex
	faulted map[string]bool
	secrets map[string]map[string]string
}

func (p *tap) intercept(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	switch r := req.(type) {
	case *csi.CreateVolumeRequest:
		p.record("CreateVolume "+r.GetName(), r.GetSecrets())
		resp, err := handler(ctx, req)
		if err == nil && r.GetParameters()[faultParam] == faultExhaustedAfterCreate && p.firstFault(r.GetName()) {
			return nil, status.Error(codes.ResourceExhausted, "injected: answered after the volume was made")
		}
		return resp, err
	case *csi.DeleteVolumeRequest:
		p.record("DeleteVolume "+r.GetVolumeId(), r.GetSecrets())
	}
	return handler(ctx, req)
}

func (p *tap) record(call string, secrets map[string]string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.secrets[call] = maps.Clone(secrets)
}

func (p *tap) firstFault(name string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	first := !p.faulted[name]
	p.faulted[name] = true
	return first
}

// secretsOf are the secrets the last such call carried; ok is false if
// there was none.
func (p *tap) secretsOf(call string) (secrets map[string]string, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	secrets, ok = p.secrets[call]
	return secrets, ok
}
