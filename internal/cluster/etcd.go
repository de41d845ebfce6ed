package cluster

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
)

// etcdReadyTimeout bounds how long a start waits for etcd; a healthy embedded
// etcd is ready in well under a second, replaying a large WAL takes longer.
const etcdReadyTimeout = 2 * time.Minute

// etcdQuotaBytes is the embedded etcd's space quota (startEtcd).
const etcdQuotaBytes = 8 << 30

// etcdTLS says that etcd serves both listeners over TLS and accepts only
// clients holding a certificate of the etcd CA: other local users reach
// 127.0.0.1 as well, and etcd holds every Secret of the cluster.
func etcdTLS(p pki) transport.TLSInfo {
	return transport.TLSInfo{
		CertFile:       p.etcdServerCert(),
		KeyFile:        p.etcdServerKey(),
		TrustedCAFile:  p.etcdCACert(),
		ClientCertAuth: true,
	}
}

// startEtcd starts the embedded etcd with its data under dir and returns it once
// it serves. The caller closes it. A data dir first served over plain HTTP
// (volplane before etcd TLS) restarts fine: a one-member cluster never dials
// the peer URLs it keeps.
func startEtcd(ctx context.Context, dir, logFile string, tls transport.TLSInfo, clientPort, peerPort int, noFsync bool) (*embed.Etcd, error) {
	cfg := embed.NewConfig()
	cfg.Name = "volplane"
	cfg.Dir = filepath.Join(dir, "etcd")
	cfg.ClientTLSInfo, cfg.PeerTLSInfo = tls, tls
	clientURL := url.URL{Scheme: "https", Host: fmt.Sprintf("127.0.0.1:%d", clientPort)}
	peerURL := url.URL{Scheme: "https", Host: fmt.Sprintf("127.0.0.1:%d", peerPort)}
	cfg.ListenClientUrls = []url.URL{clientURL}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.AdvertisePeerUrls = []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "warn"
	cfg.LogOutputs = []string{logFile}
	// Tests trade durability for speed; `volplane up` keeps fsync on.
	cfg.UnsafeNoFsync = noFsync
	// etcd's largest recommended quota, not its 2 GiB default, for a
	// simulated cluster of 1,000 nodes (leases and statuses rewritten every
	// few seconds, kept until the API server's compaction every 5 minutes)
	// and 100,000 volumes: a full quota stops every write. It is a ceiling;
	// the file grows only as used.
	cfg.QuotaBackendBytes = etcdQuotaBytes

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("start etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("etcd failed: %w", err)
	case <-time.After(etcdReadyTimeout):
		e.Close()
		return nil, fmt.Errorf("etcd not ready after %s", etcdReadyTimeout)
	case <-ctx.Done():
		e.Close()
		return nil, ctx.Err()
	}
}
