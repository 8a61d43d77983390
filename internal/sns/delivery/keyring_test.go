package delivery

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

func TestKeyringMakesTheKeyOnceOnFirstUse(t *testing.T) {
	t.Parallel()
	key, err := NewMemorySigner()
	if err != nil {
		t.Fatal(err)
	}
	var made int
	fail := true
	k := &keyring{make: func() (*Signer, error) {
		made++
		if fail {
			fail = false
			return nil, errors.New("disk full")
		}
		return key, nil
	}}
	mux := http.NewServeMux()
	k.register(mux)
	if made != 0 {
		t.Fatalf("registering made the key %d times", made)
	}
	get := func(path string) int {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code
	}
	if code := get("/" + key.CertFileName()); code != http.StatusNotFound {
		t.Fatalf("certificate served before the key exists: %d", code)
	}
	if _, err := k.get(); err == nil {
		t.Fatal("a failed make returned a signer")
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if s, err := k.get(); err != nil || s != key {
				t.Errorf("get = %p, %v", s, err)
			}
		})
	}
	wg.Wait()
	if made != 2 {
		t.Fatalf("make ran %d times, want 2 (one failure, one success)", made)
	}
	for _, path := range []string{"/" + key.CertFileName(), "/_ferry/sns/" + key.CertFileName()} {
		if code := get(path); code != http.StatusOK {
			t.Errorf("GET %s = %d", path, code)
		}
	}
}

func TestKeyringRoutesAKeyMadeBeforeRegister(t *testing.T) {
	t.Parallel()
	key, err := NewMemorySigner()
	if err != nil {
		t.Fatal(err)
	}
	k := &keyring{make: func() (*Signer, error) { return key, nil }}
	if _, err := k.get(); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	k.register(mux)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/"+key.CertFileName(), nil))
	if rec.Code != http.StatusOK || rec.Body.String() != string(key.CertPEM()) {
		t.Fatalf("GET certificate = %d %q", rec.Code, rec.Body.String())
	}
}
