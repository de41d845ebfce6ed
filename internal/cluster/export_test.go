package cluster

// What the external tests need to reach etcd as the API server would.

func EtcdClientAddr(cp *ControlPlane) string { return cp.etcd.Clients[0].Addr().String() }

// EtcdClientFiles are the etcd CA and the API server's etcd client
// certificate and key under the data dir.
func EtcdClientFiles(dir string) (ca, cert, key string) {
	p := dataDir(dir).pki()
	return p.etcdCACert(), p.etcdClientCert(), p.etcdClientKey()
}

// AdminCertFiles are the admin's client certificate and key, signed by the
// cluster CA.
func AdminCertFiles(dir string) (cert, key string) {
	p := dataDir(dir).pki()
	return p.adminCert(), p.adminKey()
}
