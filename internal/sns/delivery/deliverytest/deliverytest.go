// Package deliverytest reads what SNS delivers as a subscriber does, from
// the published rules alone and apart from the code that makes it, so
// that tests of SNS and of its deliveries check its envelopes the same
// way.
package deliverytest

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha1" // SignatureVersion 1 is SHA1withRSA by definition
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"testing"
)

// Decode reads an envelope's string members; anything but a JSON object
// fails the test.
func Decode(t testing.TB, b []byte) map[string]string {
	t.Helper()
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	out := make(map[string]string)
	for k, v := range raw {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

// Verify checks an envelope's signature sig, of version "1" or "2", with
// the certificate certPEM: it rebuilds the string to sign from msg's
// members, as a subscriber does.
func Verify(certPEM []byte, msg map[string]string, version, sig string) error {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return fmt.Errorf("no certificate in %q", certPEM)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return err
	}
	pub, ok := cert.PublicKey.(*rsa.PublicKey)
	if !ok {
		return errors.New("the certificate's key is not RSA")
	}
	var keys []string
	if msg["Type"] == "Notification" {
		keys = []string{"Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"}
	} else {
		keys = []string{"Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"}
	}
	var canon string
	for _, k := range keys {
		if v, ok := msg[k]; ok && (k != "Subject" || v != "") {
			canon += k + "\n" + v + "\n"
		}
	}
	raw, err := base64.StdEncoding.DecodeString(sig)
	if err != nil {
		return err
	}
	if version == "1" {
		sum := sha1.Sum([]byte(canon))
		return rsa.VerifyPKCS1v15(pub, crypto.SHA1, sum[:], raw)
	}
	sum := sha256.Sum256([]byte(canon))
	return rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], raw)
}
