package delivery

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/sns/delivery/deliverytest"
)

// memorySigner is shared: RSA key generation is slow.
var memorySigner = sync.OnceValues(NewMemorySigner)

func testSigner(t *testing.T) *Signer {
	t.Helper()
	s, err := memorySigner()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSignVerifies(t *testing.T) {
	t.Parallel()
	s := testSigner(t)
	notification := map[string]string{
		"Type": "Notification", "MessageId": "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324",
		"TopicArn": "arn:aws:sns:us-west-2:123456789012:MyTopic", "Message": "Hello\nworld \"é\" 😀",
		"Timestamp": "2012-05-02T00:54:06.655Z",
	}
	withSubject := map[string]string{"Subject": "My First Message"}
	for k, v := range notification {
		withSubject[k] = v
	}
	emptySubject := map[string]string{"Subject": ""}
	for k, v := range notification {
		emptySubject[k] = v
	}
	confirmation := map[string]string{
		"Type": "SubscriptionConfirmation", "MessageId": "165545c9-2a5c-472c-8df2-7ff2be2b3b1b",
		"Token": "2336412f37f", "TopicArn": "arn:aws:sns:us-west-2:123456789012:MyTopic",
		"Message":      "You have chosen to subscribe to the topic arn:aws:sns:us-west-2:123456789012:MyTopic.\nTo confirm the subscription, visit the SubscribeURL included in this message.",
		"SubscribeURL": "https://sns.us-west-2.amazonaws.com/?Action=ConfirmSubscription&TopicArn=arn:aws:sns:us-west-2:123456789012:MyTopic&Token=2336412f37f",
		"Timestamp":    "2012-04-26T20:45:04.751Z",
	}
	unsubscribe := map[string]string{"Type": "UnsubscribeConfirmation"}
	for k, v := range confirmation {
		if k != "Type" {
			unsubscribe[k] = v
		}
	}
	for name, msg := range map[string]map[string]string{
		"notification": notification, "with subject": withSubject, "empty subject": emptySubject,
		"subscription confirmation": confirmation, "unsubscribe confirmation": unsubscribe,
	} {
		for _, version := range []string{"1", "2"} {
			sig, err := s.Sign(msg, version)
			if err != nil {
				t.Fatalf("%s v%s: %v", name, version, err)
			}
			if err := deliverytest.Verify(s.CertPEM(), msg, version, sig); err != nil {
				t.Errorf("%s v%s: %v", name, version, err)
			}
			// Any signed field changes the signature; unsigned ones do not.
			tampered := map[string]string{"UnsubscribeURL": "https://x", "SignatureVersion": version}
			for k, v := range msg {
				tampered[k] = v
			}
			if err := deliverytest.Verify(s.CertPEM(), tampered, version, sig); err != nil {
				t.Errorf("%s v%s: unsigned fields must not matter: %v", name, version, err)
			}
			tampered["Message"] += "!"
			if deliverytest.Verify(s.CertPEM(), tampered, version, sig) == nil {
				t.Errorf("%s v%s: a changed Message still verifies", name, version)
			}
		}
	}
	// A version-1 signature is not a version-2 one.
	sig, _ := s.Sign(notification, "1")
	if deliverytest.Verify(s.CertPEM(), notification, "2", sig) == nil {
		t.Error("a SHA1 signature verifies as SHA256")
	}
}

func TestSignRejects(t *testing.T) {
	t.Parallel()
	s := testSigner(t)
	good := map[string]string{"Type": "Notification", "MessageId": "m", "TopicArn": "t", "Message": "x", "Timestamp": "ts"}
	if _, err := s.Sign(good, "3"); err == nil {
		t.Error("unknown version accepted")
	}
	if _, err := s.Sign(map[string]string{"Type": "Bogus"}, "1"); err == nil {
		t.Error("unknown type accepted")
	}
	missing := map[string]string{"Type": "SubscriptionConfirmation", "MessageId": "m", "TopicArn": "t", "Message": "x", "Timestamp": "ts"}
	if _, err := s.Sign(missing, "1"); err == nil || !strings.Contains(err.Error(), "SubscribeURL") {
		t.Errorf("missing SubscribeURL: %v", err)
	}
}

func TestSignerCertificate(t *testing.T) {
	t.Parallel()
	s := testSigner(t)
	block, _ := pem.Decode(s.CertPEM())
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if cert.Subject.CommonName != "sns.amazonaws.com" {
		t.Errorf("CN = %q", cert.Subject.CommonName)
	}
	if now := time.Now(); now.Before(cert.NotBefore) || now.After(cert.NotAfter) {
		t.Errorf("certificate not valid now: %v..%v", cert.NotBefore, cert.NotAfter)
	}
	if err := cert.CheckSignature(cert.SignatureAlgorithm, cert.RawTBSCertificate, cert.Signature); err != nil {
		t.Errorf("not self-signed: %v", err)
	}
	if !regexp.MustCompile(`^SimpleNotificationService-[0-9a-f]{32}\.pem$`).MatchString(s.CertFileName()) {
		t.Errorf("CertFileName = %q", s.CertFileName())
	}
	// The caller cannot change the signer's certificate through the copy.
	s.CertPEM()[0] = 'x'
	if s.CertPEM()[0] != '-' {
		t.Error("CertPEM exposes internal state")
	}
}

func TestLoadOrCreateSigner(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "keys")
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	first, err := LoadOrCreateSigner(dir, now)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(dir, signingKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v", info.Mode().Perm())
	}
	msg := map[string]string{"Type": "Notification", "MessageId": "m", "TopicArn": "t", "Message": "x", "Timestamp": "ts"}

	again, err := LoadOrCreateSigner(dir, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if string(again.CertPEM()) != string(first.CertPEM()) {
		t.Error("reload changed the certificate")
	}
	sig, err := again.Sign(msg, "2")
	if err != nil {
		t.Fatal(err)
	}
	if err := deliverytest.Verify(first.CertPEM(), msg, "2", sig); err != nil {
		t.Errorf("reloaded key does not match the first certificate: %v", err)
	}

	// Past the certificate's end: a new certificate for the same key.
	later, err := LoadOrCreateSigner(dir, now.Add(11*365*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if string(later.CertPEM()) == string(first.CertPEM()) {
		t.Error("expired certificate kept")
	}
	if later.CertFileName() == first.CertFileName() {
		t.Error("a new certificate must get a new file name")
	}
	if err := deliverytest.Verify(later.CertPEM(), msg, "2", sig); err != nil {
		t.Errorf("reissued certificate is for another key: %v", err)
	}
	onDisk, _ := os.ReadFile(filepath.Join(dir, signingCertFile))
	if string(onDisk) != string(later.CertPEM()) {
		t.Error("reissued certificate not saved")
	}
}

func TestLoadOrCreateSignerBadState(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	now := time.Now()
	good := filepath.Join(base, "good")
	if _, err := LoadOrCreateSigner(good, now); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(base, "other")
	if _, err := LoadOrCreateSigner(other, now); err != nil {
		t.Fatal(err)
	}
	read := func(dir, name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := []struct {
		name      string
		key, cert []byte // nil: file absent
	}{
		{"key without certificate", read(good, signingKeyFile), nil},
		{"certificate without key", nil, read(good, signingCertFile)},
		{"corrupt key", []byte("not pem"), read(good, signingCertFile)},
		{"corrupt certificate", read(good, signingKeyFile), []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")},
		{"certificate for another key", read(good, signingKeyFile), read(other, signingCertFile)},
	}
	for _, tt := range tests {
		dir := filepath.Join(base, strings.ReplaceAll(tt.name, " ", "-"))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if tt.key != nil {
			os.WriteFile(filepath.Join(dir, signingKeyFile), tt.key, 0o600)
		}
		if tt.cert != nil {
			os.WriteFile(filepath.Join(dir, signingCertFile), tt.cert, 0o644)
		}
		if _, err := LoadOrCreateSigner(dir, now); err == nil {
			t.Errorf("%s: accepted", tt.name)
		}
		// Nothing is replaced behind the operator's back.
		if tt.key != nil && string(read(dir, signingKeyFile)) != string(tt.key) {
			t.Errorf("%s: key file changed", tt.name)
		}
	}
}
