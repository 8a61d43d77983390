package delivery

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// keyring holds the message signing key. Generating a 2048-bit RSA key
// takes hundreds of milliseconds, most of a first start of Ferry, so a key
// that does not exist yet is made on the first signature; the routes that
// serve its certificate are added then, since their path names it.
type keyring struct {
	make   func() (*Signer, error)
	signer atomic.Pointer[Signer]

	mu  sync.Mutex // serialises making the key and adding the routes
	mux Mux
}

// get returns the signer, making it on first use. A failure is returned to
// this caller and tried again by the next.
func (k *keyring) get() (*Signer, error) {
	if s := k.signer.Load(); s != nil {
		return s, nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if s := k.signer.Load(); s != nil {
		return s, nil
	}
	s, err := k.make()
	if err != nil {
		return nil, err
	}
	k.signer.Store(s)
	k.route(s)
	return s, nil
}

// set installs s, read elsewhere, unless a signer is there already.
func (k *keyring) set(s *Signer) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.signer.Load() == nil {
		k.signer.Store(s)
		k.route(s)
	}
}

// register keeps mux for the certificate routes, adding them now if the
// key exists.
func (k *keyring) register(mux Mux) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.mux = mux
	if s := k.signer.Load(); s != nil {
		k.route(s)
	}
}

// route serves s's certificate at SigningCertURL (and under /_ferry/sns/).
// k.mu is held.
func (k *keyring) route(s *Signer) {
	if k.mux == nil {
		return
	}
	cert := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-pem-file")
		_, _ = w.Write(s.CertPEM())
	}
	k.mux.HandleFunc("GET /"+s.CertFileName(), cert)
	k.mux.HandleFunc("GET /_ferry/sns/"+s.CertFileName(), cert)
}

// signerExists tells whether dir holds a signing key or certificate, which
// a start loads at once so that a damaged pair is reported then.
func signerExists(dir string) (bool, error) {
	for _, name := range []string{signingKeyFile, signingCertFile} {
		_, err := os.Stat(filepath.Join(dir, name))
		switch {
		case err == nil:
			return true, nil
		case !errors.Is(err, fs.ErrNotExist):
			return false, err
		}
	}
	return false, nil
}
