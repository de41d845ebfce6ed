package cluster

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// etcdReadyTimeout bounds how long a start waits for etcd; a healthy embedded
// etcd is ready in well under a second, replaying a large WAL takes longer.
const etcdReadyTimeout = 2 * time.Minute

// startEtcd starts the embedded etcd with its data under dir and returns it once
// it serves. The caller closes it.
func startEtcd(ctx context.Context, dir, logFile string, clientPort, peerPort int, noFsync bool) (*embed.Etcd, error) {
	cfg := embed.NewConfig()
	cfg.Name = "volplane"
	cfg.Dir = filepath.Join(dir, "etcd")
	clientURL := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", clientPort)}
	peerURL := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", peerPort)}
	cfg.ListenClientUrls = []url.URL{clientURL}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.AdvertisePeerUrls = []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "warn"
	cfg.LogOutputs = []string{logFile}
	// Tests trade durability for speed; `volplane up` keeps fsync on.
	cfg.UnsafeNoFsync = noFsync

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
