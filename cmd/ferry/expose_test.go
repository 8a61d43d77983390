package main

import (
	"crypto/tls"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/ferrymq/ferry/internal/testcert"
	"github.com/ferrymq/ferry/internal/testwait"
)

// TestServeExposureFromEnv: the TLS, Host and admin settings reach the
// server from the environment: HTTPS on the API's address, the admin
// endpoints on their own behind the token, an extra Host name accepted
// and a foreign one refused.
func TestServeExposureFromEnv(t *testing.T) {
	cert, key, pool := testcert.Write(t)
	base, logs, stop := serveFromEnv(t, map[string]string{"FERRY_LISTEN": "127.0.0.1:0", "FERRY_MEMORY": "true",
		"FERRY_TLS_CERT": cert, "FERRY_TLS_KEY": key, "FERRY_ADMIN_LISTEN": "127.0.0.1:0", "FERRY_ADMIN_TOKEN": "tok",
		"FERRY_ALLOWED_HOSTS": "ferry, *.corp.example", "FERRY_SNS_ALLOWED_ENDPOINTS": "10.0.0.0/8,hooks.internal"})
	api := "https://" + strings.TrimPrefix(base, "http://")
	var admin string
	testwait.Eventually(t, "the admin address in the log", func() bool {
		m := regexp.MustCompile(`admin_addr=(\S+)`).FindStringSubmatch(logs.String())
		if m != nil {
			admin = "https://" + m[1]
		}
		return m != nil
	})
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	get := func(u, host, token string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", u, nil)
		if host != "" {
			req.Host = host
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, resp.Proto
	}
	for _, tc := range []struct {
		url, host, token string
		want             int
	}{
		{api + "/_ferry/health", "", "", 200},
		{api + "/_ferry/health", "ferry:4566", "", 200},
		{api + "/_ferry/health", "q.corp.example", "", 200},
		{api + "/_ferry/health", "evil.example", "", 403},
		{admin + "/metrics", "", "", 401},
		{admin + "/metrics", "", "tok", 200},
	} {
		if got, proto := get(tc.url, tc.host, tc.token); got != tc.want || proto != "HTTP/2.0" {
			t.Errorf("GET %s (Host %q): %d over %s, want %d over HTTP/2.0", tc.url, tc.host, got, proto, tc.want)
		}
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit code %d: %s", code, logs.String())
	}
}
