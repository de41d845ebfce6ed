package cluster

import (
	"net"
	"testing"
)

// An advertise address the serving certificate lacks is added by reissuing
// it, keeping every address it had (loopback, the Service IP, an earlier
// advertise address); an address it already has changes nothing.
func TestServingCertificateCoversEveryAdvertisedAddress(t *testing.T) {
	p := dataDir(t.TempDir()).pki()
	if err := p.ensure(); err != nil {
		t.Fatal(err)
	}
	for _, ip := range []string{"10.250.0.1", "10.250.0.2"} {
		if err := p.ensureServes(net.ParseIP(ip)); err != nil {
			t.Fatal(err)
		}
	}
	before, err := readCert(p.servingCert())
	if err != nil {
		t.Fatal(err)
	}
	for _, ip := range []string{"127.0.0.1", serviceIP, "10.250.0.1", "10.250.0.2"} {
		if err := before.VerifyHostname(ip); err != nil {
			t.Errorf("serving certificate not valid for %s: %v", ip, err)
		}
	}
	if err := p.ensureServes(net.ParseIP("10.250.0.1")); err != nil {
		t.Fatal(err)
	}
	after, err := readCert(p.servingCert())
	if err != nil {
		t.Fatal(err)
	}
	if !after.Equal(before) {
		t.Error("an address the certificate has made it reissue")
	}
	ca, err := readCert(p.caCert())
	if err != nil {
		t.Fatal(err)
	}
	if err := after.CheckSignatureFrom(ca); err != nil {
		t.Errorf("reissued certificate not signed by the cluster CA: %v", err)
	}
}
