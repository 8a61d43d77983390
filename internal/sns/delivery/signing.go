package delivery

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1" // SignatureVersion 1 is SHA1withRSA by definition
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Signature versions a topic can use.
const (
	SignatureVersion1 = "1" // SHA1withRSA
	SignatureVersion2 = "2" // SHA256withRSA
)

// Files LoadOrCreateSigner keeps in its directory.
const (
	signingKeyFile  = "sns-signing-key.pem"
	signingCertFile = "sns-signing-cert.pem"
)

const (
	signingKeyBits = 2048
	certLifetime   = 10 * 365 * 24 * time.Hour
	// certSubject is the common name AWS's own signing certificates carry;
	// some message validators check it besides the signature.
	certSubject = "sns.amazonaws.com"
)

// Signer signs SNS messages with its own RSA key. Subscribers verify the
// signatures with the certificate Ferry serves at SigningCertURL. A Signer
// is safe for concurrent use.
type Signer struct {
	key     *rsa.PrivateKey
	cert    *x509.Certificate
	certPEM []byte
}

// NewMemorySigner makes a signer whose key lives only in memory.
func NewMemorySigner() (*Signer, error) {
	key, err := rsa.GenerateKey(rand.Reader, signingKeyBits)
	if err != nil {
		return nil, fmt.Errorf("sns: generate signing key: %w", err)
	}
	return newSigner(key, time.Now())
}

// LoadOrCreateSigner loads the key and certificate kept as PEM in dir, or
// creates both (and dir) on first use. A certificate that has expired by
// now is reissued for the same key, so subscribers that pinned the key
// keep verifying. A key without its certificate, or the reverse, is an
// error rather than a reason to replace the key.
func LoadOrCreateSigner(dir string, now time.Time) (*Signer, error) {
	keyPath := filepath.Join(dir, signingKeyFile)
	certPath := filepath.Join(dir, signingCertFile)
	keyPEM, kerr := os.ReadFile(keyPath)
	certPEM, cerr := os.ReadFile(certPath)
	switch {
	case errors.Is(kerr, fs.ErrNotExist) && errors.Is(cerr, fs.ErrNotExist):
		return createSigner(dir, keyPath, certPath, now)
	case kerr != nil:
		return nil, fmt.Errorf("sns: read signing key: %w", kerr)
	case cerr != nil:
		return nil, fmt.Errorf("sns: read signing certificate: %w", cerr)
	}
	key, err := parseKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("sns: %s: %w", keyPath, err)
	}
	cert, err := parseCertPEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("sns: %s: %w", certPath, err)
	}
	s, reissued, err := pairSigner(key, cert, certPEM, now)
	switch {
	case errors.Is(err, errOtherKey):
		return nil, fmt.Errorf("sns: %s does not certify the key in %s", certPath, keyPath)
	case err != nil:
		return nil, err
	}
	if reissued {
		if err := writeFileAtomic(certPath, s.certPEM, 0o644); err != nil {
			return nil, err
		}
	}
	return s, nil
}

var errOtherKey = errors.New("the certificate certifies another key")

// pairSigner makes the signer of a stored key and certificate. A
// certificate that has expired by now is reissued for the same key
// (reissued), so subscribers that pinned the key keep verifying; one of
// another key is an error rather than a reason to replace the key.
func pairSigner(key *rsa.PrivateKey, cert *x509.Certificate, certPEM []byte, now time.Time) (s *Signer, reissued bool, err error) {
	if pub, ok := cert.PublicKey.(*rsa.PublicKey); !ok || !pub.Equal(&key.PublicKey) {
		return nil, false, errOtherKey
	}
	if now.Before(cert.NotAfter) {
		return &Signer{key: key, cert: cert, certPEM: certPEM}, false, nil
	}
	s, err = newSigner(key, now)
	return s, err == nil, err
}

// newSharedSigner makes a key and its certificate as one value, the key's
// PEM block then the certificate's, which a store keeps for every node
// (Options.SharedKey).
func newSharedSigner(now time.Time) ([]byte, error) {
	key, err := rsa.GenerateKey(rand.Reader, signingKeyBits)
	if err != nil {
		return nil, fmt.Errorf("sns: generate signing key: %w", err)
	}
	s, err := newSigner(key, now)
	if err != nil {
		return nil, err
	}
	kp, err := keyPEM(key)
	if err != nil {
		return nil, err
	}
	return append(kp, s.certPEM...), nil
}

// sharedSigner reads a value newSharedSigner made. An expired certificate
// is reissued in memory only: the stored value never changes.
func sharedSigner(v []byte, now time.Time) (*Signer, error) {
	key, err := parseKeyPEM(v)
	if err != nil {
		return nil, fmt.Errorf("sns: shared signing key: %w", err)
	}
	_, rest := pem.Decode(v)
	cert, err := parseCertPEM(rest)
	if err != nil {
		return nil, fmt.Errorf("sns: shared signing certificate: %w", err)
	}
	s, _, err := pairSigner(key, cert, bytes.TrimSpace(rest), now)
	if err != nil {
		return nil, fmt.Errorf("sns: shared signing key: %w", err)
	}
	return s, nil
}

// keyPEM encodes key as a PKCS #8 PEM block.
func keyPEM(key *rsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("sns: encode signing key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func createSigner(dir, keyPath, certPath string, now time.Time) (*Signer, error) {
	key, err := rsa.GenerateKey(rand.Reader, signingKeyBits)
	if err != nil {
		return nil, fmt.Errorf("sns: generate signing key: %w", err)
	}
	s, err := newSigner(key, now)
	if err != nil {
		return nil, err
	}
	kp, err := keyPEM(key)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("sns: create signing directory: %w", err)
	}
	// The certificate goes last: a crash in between leaves a key alone,
	// which the next start reports instead of silently replacing.
	if err := writeFileAtomic(keyPath, kp, 0o600); err != nil {
		return nil, err
	}
	if err := writeFileAtomic(certPath, s.certPEM, 0o644); err != nil {
		return nil, err
	}
	return s, nil
}

// newSigner issues a self-signed certificate for key, valid from an hour
// before now (clock skew) for certLifetime.
func newSigner(key *rsa.PrivateKey, now time.Time) (*Signer, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("sns: certificate serial: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: certSubject},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(certLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("sns: issue signing certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("sns: parse signing certificate: %w", err)
	}
	return &Signer{key: key, cert: cert, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

func parseKeyPEM(data []byte) (*rsa.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	switch block.Type {
	case "RSA PRIVATE KEY":
		return x509.ParsePKCS1PrivateKey(block.Bytes)
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, err
		}
		rk, ok := k.(*rsa.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("key is %T, not RSA", k)
		}
		return rk, nil
	}
	return nil, fmt.Errorf("unexpected PEM block %q", block.Type)
}

func parseCertPEM(data []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no CERTIFICATE PEM block")
	}
	return x509.ParseCertificate(block.Bytes)
}

func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("sns: write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // no-op once renamed
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("sns: write %s: %w", path, err)
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return fmt.Errorf("sns: write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("sns: write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("sns: write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("sns: write %s: %w", path, err)
	}
	return nil
}

// CertPEM is the signing certificate, to serve at SigningCertURL.
func (s *Signer) CertPEM() []byte { return bytes.Clone(s.certPEM) }

// CertFileName names the certificate as AWS names its own:
// SimpleNotificationService-<32 hex digits>.pem, here derived from the
// certificate so that a new certificate gets a new URL.
func (s *Signer) CertFileName() string {
	sum := sha256.Sum256(s.cert.Raw)
	return "SimpleNotificationService-" + hex.EncodeToString(sum[:16]) + ".pem"
}

// Sign returns the base64 RSA PKCS#1 v1.5 signature of the string SNS
// signs for the message in fields (envelope names to unescaped values),
// with SHA1 for version "1" and SHA256 for version "2".
func (s *Signer) Sign(fields map[string]string, version string) (string, error) {
	canon, err := stringToSign(fields)
	if err != nil {
		return "", err
	}
	var (
		h      crypto.Hash
		digest []byte
	)
	switch version {
	case SignatureVersion1:
		sum := sha1.Sum([]byte(canon))
		h, digest = crypto.SHA1, sum[:]
	case SignatureVersion2:
		sum := sha256.Sum256([]byte(canon))
		h, digest = crypto.SHA256, sum[:]
	default:
		return "", fmt.Errorf("sns: unknown signature version %q", version)
	}
	sig, err := rsa.SignPKCS1v15(rand.Reader, s.key, h, digest)
	if err != nil {
		return "", fmt.Errorf("sns: sign: %w", err)
	}
	return base64.StdEncoding.EncodeToString(sig), nil
}

// Keys each message type signs, in the byte order SNS concatenates them.
var (
	notificationKeys = []string{"Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"}
	confirmationKeys = []string{"Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"}
)

// stringToSign builds "Key\nValue\n" for each signed key of the message's
// Type. Subject is signed only when the message has one; every other key
// must be present.
func stringToSign(fields map[string]string) (string, error) {
	var keys []string
	switch t := fields["Type"]; t {
	case TypeNotification:
		keys = notificationKeys
	case TypeSubscriptionConfirmation, TypeUnsubscribeConfirmation:
		keys = confirmationKeys
	default:
		return "", fmt.Errorf("sns: cannot sign message type %q", t)
	}
	var b strings.Builder
	for _, k := range keys {
		v, ok := fields[k]
		if k == "Subject" && v == "" {
			continue
		}
		if !ok {
			return "", fmt.Errorf("sns: %s message lacks %s", fields["Type"], k)
		}
		b.WriteString(k)
		b.WriteByte('\n')
		b.WriteString(v)
		b.WriteByte('\n')
	}
	return b.String(), nil
}
