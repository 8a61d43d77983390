package server_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	pathpkg "path"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	snssdk "github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/ferrymq/ferry/internal/server"
	"github.com/ferrymq/ferry/internal/testcert"
	"github.com/ferrymq/ferry/internal/testwait"
)

func withTLS(cert, key string) option {
	return func(c *server.Config) { c.TLSCert, c.TLSKey = cert, key }
}

// protoRecorder is an SDK HTTP client that remembers the protocol of its
// last answer.
type protoRecorder struct {
	next  aws.HTTPClient
	proto chan string
}

func (p *protoRecorder) Do(r *http.Request) (*http.Response, error) {
	resp, err := p.next.Do(r)
	if err == nil {
		select {
		case p.proto <- resp.Proto:
		default:
		}
	}
	return resp, err
}

func (p *protoRecorder) last(t testing.TB) string {
	t.Helper()
	select {
	case v := <-p.proto:
		return v
	default:
		t.Fatal("no answer recorded")
		return ""
	}
}

// TestTLS serves HTTPS to the SDK's default client and to one that speaks
// only HTTP/2, and hands out https links: queue URLs, SubscribeURL,
// SigningCertURL and UnsubscribeURL, each of which works.
func TestTLS(t *testing.T) {
	t.Parallel()
	cert, key, pool := testcert.Write(t)
	f := start(t, withTLS(cert, key))
	if !strings.HasPrefix(f.srv.URL(), "https://127.0.0.1:") {
		t.Fatalf("URL = %s", f.srv.URL())
	}
	ctx := ctxT(t)
	h2only := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	h2only.Protocols = new(http.Protocols)
	h2only.Protocols.SetHTTP2(true)
	for _, tc := range []struct {
		name, queue string
		client      aws.HTTPClient
		proto       string
	}{
		{"the SDK's default client", "sdk-default", awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
			tr.TLSClientConfig.RootCAs = pool
		}), "HTTP/2.0"},
		{"a client that speaks only HTTP/2", "h2-only", &http.Client{Transport: h2only}, "HTTP/2.0"},
		{"a client that speaks only HTTP/1.1", "http1", &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}, "HTTP/1.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &protoRecorder{next: tc.client, proto: make(chan string, 1)}
			c := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(f.srv.URL()),
				Credentials: credentials.NewStaticCredentialsProvider("AKIDFERRYTEST", "secret", ""), RetryMaxAttempts: 1, HTTPClient: rec})
			out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(tc.queue)})
			if err != nil {
				t.Fatal(err)
			}
			if got := rec.last(t); got != tc.proto {
				t.Errorf("answered over %s, want %s", got, tc.proto)
			}
			u := aws.ToString(out.QueueUrl)
			if !strings.HasPrefix(u, f.srv.URL()+"/000000000000/") {
				t.Errorf("queue URL %s", u)
			}
			if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(u), MessageBody: aws.String("over TLS")}); err != nil {
				t.Fatal(err)
			}
			got, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(u)})
			if err != nil || len(got.Messages) != 1 || aws.ToString(got.Messages[0].Body) != "over TLS" {
				t.Fatalf("receive: %v %v", got, err)
			}
		})
	}

	t.Run("SNS links", func(t *testing.T) {
		trusting := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
		sns := snssdk.New(snssdk.Options{Region: "us-east-1", BaseEndpoint: aws.String(f.srv.URL()),
			Credentials: credentials.NewStaticCredentialsProvider("AKIDFERRYTEST", "secret", ""), HTTPClient: trusting})
		topic, err := sns.CreateTopic(ctx, &snssdk.CreateTopicInput{Name: aws.String("links")})
		if err != nil {
			t.Fatal(err)
		}
		e := newEndpoint(t, f, always(200))
		if _, err := sns.Subscribe(ctx, &snssdk.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("http"),
			Endpoint: aws.String(e.srv.URL + "/hook")}); err != nil {
			t.Fatal(err)
		}
		e.waitHits(1)
		conf := parseEnvelope(t, e.get(0).body)
		get := func(link string) string {
			t.Helper()
			if !strings.HasPrefix(link, f.srv.URL()+"/") {
				t.Fatalf("link %s does not lead to %s", link, f.srv.URL())
			}
			resp, err := trusting.Get(link)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 {
				t.Fatalf("GET %s: %d %s", link, resp.StatusCode, b)
			}
			return string(b)
		}
		if pemText := get(conf.str("SigningCertURL")); !strings.HasPrefix(pemText, "-----BEGIN CERTIFICATE-----") {
			t.Errorf("certificate: %.40q", pemText)
		}
		get(conf.str("SubscribeURL"))
		if _, err := sns.Publish(ctx, &snssdk.PublishInput{TopicArn: topic.TopicArn, Message: aws.String("hi")}); err != nil {
			t.Fatal(err)
		}
		e.waitHits(2)
		n := parseEnvelope(t, e.get(1).body)
		if !strings.HasPrefix(n.str("UnsubscribeURL"), f.srv.URL()+"/?Action=Unsubscribe") ||
			!strings.HasPrefix(n.str("SigningCertURL"), f.srv.URL()+"/") {
			t.Errorf("notification links: %s %s", n.str("UnsubscribeURL"), n.str("SigningCertURL"))
		}
		get(n.str("UnsubscribeURL"))
	})
}

// TestTLSNeedsBothFiles: a certificate without its key, or files that hold
// none, stop the start.
func TestTLSNeedsBothFiles(t *testing.T) {
	t.Parallel()
	cert, key, _ := testcert.Write(t)
	for _, tc := range []struct{ cert, key, want string }{
		{cert, "", "both a certificate"},
		{"", key, "both a certificate"},
		{key, cert, "load TLS certificate"},
	} {
		cfg := server.Config{Listen: "127.0.0.1:0", TLSCert: tc.cert, TLSKey: tc.key}
		cfg.Store = openStore(t, cfg, nil)
		if s, err := server.Start(ctxT(t), cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			if s != nil {
				s.Shutdown(ctxT(t))
			}
			t.Errorf("cert %q key %q: %v, want %q", tc.cert, tc.key, err, tc.want)
		}
	}
}

// dialTo is an HTTP client that connects to addr whatever the URL's host,
// as a name that resolves there would.
func dialTo(addr string) *http.Client {
	var d net.Dialer
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return d.DialContext(ctx, network, addr)
	}}}
}

// TestHostCheck: names Ferry is not configured for are refused with a
// clear AccessDenied, in the protocol the client speaks; the names
// LocalStack's clients use keep working and appear in queue URLs.
func TestHostCheck(t *testing.T) {
	t.Parallel()
	f := start(t, func(c *server.Config) { c.AllowedHosts = []string{"ferry", "*.corp.example"} })
	_, port, _ := net.SplitHostPort(f.srv.Addr())
	hc := dialTo(f.srv.Addr())
	for _, tc := range []struct {
		host string
		ok   bool
	}{
		{"localhost", true},
		{"127.0.0.1", true},
		{"sqs.us-east-1.localhost.localstack.cloud", true},
		{"ferry", true},
		{"queues.corp.example", true},
		{"evil.example", false},
		{"localhost.evil.example", false},
	} {
		t.Run(tc.host, func(t *testing.T) {
			base := "http://" + net.JoinHostPort(tc.host, port)
			c := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(base),
				Credentials: credentials.NewStaticCredentialsProvider("AKIDFERRYTEST", "secret", ""), RetryMaxAttempts: 1, HTTPClient: hc})
			out, err := c.CreateQueue(ctxT(t), &sqs.CreateQueueInput{QueueName: aws.String("host-" + strings.ReplaceAll(tc.host, ".", "-"))})
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				if u := aws.ToString(out.QueueUrl); !strings.HasPrefix(u, base+"/") {
					t.Errorf("queue URL %s, want it under %s", u, base)
				}
				return
			}
			var ae smithy.APIError
			if !errors.As(err, &ae) || ae.ErrorCode() != "AccessDenied" || !strings.Contains(ae.ErrorMessage(), "--allowed-hosts") {
				t.Fatalf("CreateQueue through %s: %v", tc.host, err)
			}
			var re *awshttp.ResponseError
			if !errors.As(err, &re) || re.HTTPStatusCode() != http.StatusForbidden {
				t.Errorf("status: %v", err)
			}
			// The query protocol is refused alike; so are Ferry's own paths.
			for _, req := range []*http.Request{
				mustRequest(t, "GET", base+"/?Action=ListQueues"),
				mustRequest(t, "GET", base+"/_ferry/sns/deliveries"),
			} {
				resp, err := hc.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "<Code>AccessDenied</Code>") {
					t.Errorf("GET %s: %d %s", req.URL.Path, resp.StatusCode, b)
				}
			}
		})
	}
	if qs, err := f.json.ListQueues(ctxT(t), &sqs.ListQueuesInput{QueueNamePrefix: aws.String("host-evil")}); err != nil || len(qs.QueueUrls) != 0 {
		t.Errorf("a refused request made a queue: %v %v", qs.QueueUrls, err)
	}
}

// TestCrossSiteRequests: what a browser sends for another site's page is
// refused before it acts; the SDKs, and the SNS links people open from a
// mail, are served.
func TestCrossSiteRequests(t *testing.T) {
	t.Parallel()
	f := start(t)
	topic := f.createTopic(t, "links", nil)
	for _, tc := range []struct {
		name, method, query, origin, fetchSite string
		refused                                bool
	}{
		{"a GET from another site's page", "GET", "Action=CreateQueue&QueueName=x1", "", "cross-site", true},
		{"a form POST from another site", "POST", "Action=CreateQueue&QueueName=x2", "https://evil.example", "cross-site", true},
		{"a POST naming a sandboxed origin", "POST", "Action=CreateQueue&QueueName=x3", "null", "", true},
		{"a page on localhost", "POST", "Action=CreateQueue&QueueName=ok1", "http://localhost:3000", "same-site", false},
		{"typed into the address bar", "GET", "Action=CreateQueue&QueueName=ok2", "", "none", false},
		{"an SDK", "POST", "Action=CreateQueue&QueueName=ok3", "", "", false},
		{"SubscribeURL opened from a mail", "GET", "Action=ConfirmSubscription&TopicArn=" + url.QueryEscape(topic) + "&Token=nope", "", "cross-site", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var req *http.Request
			if tc.method == "GET" {
				req = mustRequest(t, "GET", f.srv.URL()+"/?"+tc.query)
			} else {
				req, _ = http.NewRequest("POST", f.srv.URL()+"/", strings.NewReader(tc.query+"&Version=2012-11-05"))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			}
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			if tc.fetchSite != "" {
				req.Header.Set("Sec-Fetch-Site", tc.fetchSite)
			}
			r := do(t, req)
			refused := r.Status == http.StatusForbidden && strings.Contains(r.Body, "<Code>AccessDenied</Code>")
			if refused != tc.refused {
				t.Errorf("%d %s; want refused %v", r.Status, r.Body, tc.refused)
			}
		})
	}
	qs, err := f.json.ListQueues(ctxT(t), &sqs.ListQueuesInput{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range qs.QueueUrls {
		names = append(names, u[strings.LastIndex(u, "/")+1:])
	}
	if strings.Join(names, ",") != "ok1,ok2,ok3" {
		t.Errorf("queues %v, want ok1,ok2,ok3", names)
	}
}

// adminDo sends method to u with the admin token (none when empty).
func adminDo(t testing.TB, method, u, token string) rawResponse {
	t.Helper()
	req := mustRequest(t, method, u)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return do(t, req)
}

// TestAdminToken: Ferry's admin endpoints are open with auth off and no
// token (as they always were), need the token when one is set, and are
// closed with auth on and none set. Health stays open.
func TestAdminToken(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		authOn     bool
		token      string
		send       string
		wantStatus int
	}{
		{"auth off, no token: open", false, "", "", 200},
		{"auth off, token set, none sent", false, "s3cret", "", 401},
		{"auth off, token set and sent", false, "s3cret", "s3cret", 200},
		{"auth on, no token: closed", true, "", "anything", 403},
		{"auth on, no token sent", true, "s3cret", "", 401},
		{"auth on, wrong token", true, "s3cret", "s3cre7", 401},
		{"auth on, token", true, "s3cret", "s3cret", 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := []option{func(c *server.Config) { c.AdminToken = tc.token }}
			if tc.authOn {
				opts = append(opts, verifyingHarness(t))
			}
			f := start(t, opts...)
			for _, path := range []string{"/_ferry/sns/deliveries", "/metrics", "/_ferry/sns/counters"} {
				if r := adminDo(t, "GET", f.srv.URL()+path, tc.send); r.Status != tc.wantStatus {
					t.Errorf("GET %s: %d %s, want %d", path, r.Status, r.Body, tc.wantStatus)
				} else if r.Status == 401 && r.Header.Get("WWW-Authenticate") == "" {
					t.Errorf("GET %s: 401 without WWW-Authenticate", path)
				}
			}
			if r := adminDo(t, "GET", f.srv.URL()+"/_ferry/health", ""); r.Status != 200 {
				t.Errorf("health: %d", r.Status)
			}
		})
	}
}

// TestEndpointsClassified walks every path the server registered, the
// SNS certificate's included, and fails on one that no endpoint
// classifies, on an endpoint never registered, and on one the README does
// not list. With auth on and a token, each admin path refuses a request
// without it and serves one with it; each public path serves anyone.
func TestEndpointsClassified(t *testing.T) {
	t.Parallel()
	f := start(t, verifyingHarness(t), func(c *server.Config) { c.AdminToken = "tok" })
	// The certificate's paths are registered once the signing key exists:
	// a subscription's confirmation makes it.
	topic := f.createTopic(t, "classified", nil)
	e := newEndpoint(t, f, always(200))
	// With auth on the loopback endpoint is refused, after the
	// confirmation has been signed.
	f.subscribe(t, topic, "http", e.srv.URL+"/hook", nil)
	testwait.Eventually(t, "the certificate's routes", func() bool {
		for _, p := range f.srv.Routes() {
			if strings.HasSuffix(p, ".pem") {
				return true
			}
		}
		return false
	})
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	registered := map[string]bool{}
	for _, p := range f.srv.Routes() {
		class, ok := server.ClassOf(p)
		if !ok {
			t.Errorf("endpoint %q is not classified: add it to endpoints() in expose.go and to the README", p)
			continue
		}
		for _, ep := range server.Endpoints() {
			if ok, _ := pathpkg.Match(ep[0], p); ok {
				registered[ep[0]] = true
			}
		}
		method, path, ok := strings.Cut(p, " ")
		if !ok {
			continue // the API
		}
		without := adminDo(t, method, f.srv.URL()+path, "")
		with := adminDo(t, method, f.srv.URL()+path, "tok")
		switch class {
		case "admin":
			if without.Status != http.StatusUnauthorized {
				t.Errorf("%s without the token: %d", p, without.Status)
			}
			if with.Status == http.StatusUnauthorized || with.Status == http.StatusForbidden {
				t.Errorf("%s with the token: %d", p, with.Status)
			}
		case "public":
			if without.Status != 200 {
				t.Errorf("%s: %d", p, without.Status)
			}
		default:
			t.Errorf("%s is classified %s", p, class)
		}
	}
	for _, ep := range server.Endpoints() {
		if !registered[ep[0]] {
			t.Errorf("endpoint %q is classified but the server never registered it", ep[0])
		}
		if ep[0] != "/" && !strings.Contains(string(readme), "`"+ep[0]+"`") {
			t.Errorf("the README does not list `%s`", ep[0])
		}
	}
}

// TestAdminListen: with a second listener, Ferry's admin endpoints are
// served there only; health and the API stay where they were.
func TestAdminListen(t *testing.T) {
	t.Parallel()
	f := start(t, func(c *server.Config) { c.AdminListen = "127.0.0.1:0" })
	if f.srv.AdminURL() == f.srv.URL() {
		t.Fatal("no admin listener")
	}
	for _, tc := range []struct {
		base, path string
		want       int
	}{
		{f.srv.AdminURL(), "/_ferry/sns/deliveries", 200},
		{f.srv.AdminURL(), "/metrics", 200},
		{f.srv.AdminURL(), "/_ferry/health", 200},
		{f.srv.AdminURL(), "/?Action=ListQueues", 404},
		{f.srv.URL(), "/_ferry/health", 200},
		{f.srv.URL(), "/_localstack/health", 200},
		// The API answers every other path: here with its error.
		{f.srv.URL(), "/_ferry/sns/deliveries", 400},
		{f.srv.URL(), "/metrics", 400},
	} {
		if r := adminDo(t, "GET", tc.base+tc.path, ""); r.Status != tc.want {
			t.Errorf("GET %s%s: %d %.80s, want %d", tc.base, tc.path, r.Status, r.Body, tc.want)
		}
	}
	if _, err := f.json.ListQueues(ctxT(t), &sqs.ListQueuesInput{}); err != nil {
		t.Errorf("API: %v", err)
	}
}

// TestSNSDeliveryGuard: with auth on, an HTTP/S endpoint on a loopback
// address is refused as an unreachable one is (Subscribe succeeds, each
// attempt fails, retries follow the policy, then the dead-letter queue),
// unless the allow-list admits it; a redirect is not followed past the
// check.
func TestSNSDeliveryGuard(t *testing.T) {
	t.Parallel()
	f := start(t, verifyingHarness(t), func(c *server.Config) {
		c.AdminToken, c.SNSAllowedEndpoints = "tok", []string{"localhost"}
	})
	topic := f.createTopic(t, "guarded", map[string]string{"HTTPFailureFeedbackRoleArn": "arn:aws:iam::000000000000:role/logs"})
	dlqURL := f.createQueue(t, "guard-dlq", nil)
	svc := f.srv.SNS()

	// Admitted by name: localhost is on the allow-list.
	admitted := newEndpoint(t, f, always(200))
	_, port, _ := net.SplitHostPort(admitted.srv.Listener.Addr().String())
	f.subscribe(t, topic, "http", "http://localhost:"+port+"/hook", nil)
	admitted.waitHits(1)
	if r := do(t, mustRequest(t, "GET", parseEnvelope(t, admitted.get(0).body).str("SubscribeURL"))); r.Status != 200 {
		t.Fatalf("confirm: %d %s", r.Status, r.Body)
	}

	// Refused: 127.0.0.1 is on no list. Subscribe answers as AWS does for
	// an endpoint it cannot reach; the test confirms with the token.
	refused := newEndpoint(t, f, always(200))
	policy := `{"healthyRetryPolicy":{"numRetries":1,"numNoDelayRetries":1,"minDelayTarget":1,"maxDelayTarget":1}}`
	sub := f.subscribe(t, topic, "http", refused.srv.URL+"/hook", map[string]string{"DeliveryPolicy": policy,
		"RedrivePolicy": `{"deadLetterTargetArn":"` + arnPrefix + `guard-dlq"}`})
	if _, err := f.sns.ConfirmSubscription(ctxT(t), &snssdk.ConfirmSubscriptionInput{TopicArn: aws.String(topic), Token: aws.String(f.pendingToken(t, sub))}); err != nil {
		t.Fatal(err)
	}

	// Admitted, but redirecting to the refused endpoint: SNS counts the
	// 3xx as delivered and goes no further.
	redirects := make(chan struct{}, 4)
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		redirects <- struct{}{}
		http.Redirect(w, r, refused.srv.URL+"/hook", http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	_, rport, _ := net.SplitHostPort(redirector.Listener.Addr().String())
	via := f.subscribe(t, topic, "http", "http://localhost:"+rport+"/hook", nil)
	testwait.Receive(t, "the redirector's confirmation", redirects)
	if _, err := f.sns.ConfirmSubscription(ctxT(t), &snssdk.ConfirmSubscriptionInput{TopicArn: aws.String(topic), Token: aws.String(f.pendingToken(t, via))}); err != nil {
		t.Fatal(err)
	}

	id := aws.ToString(f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("guarded")}).MessageId)
	admitted.waitHits(2)
	testwait.Receive(t, "the redirected notification", redirects)
	testwait.Eventually(t, "the refused attempt and its immediate retry", f.failedAtLeast(sub, 2))
	m := testwait.Some(t, "the dead-letter copy", func() []types.Message { return f.receiveAll(t, dlqURL, 1) })[0]
	if env := parseEnvelope(t, aws.ToString(m.Body)); env.str("MessageId") != id {
		t.Errorf("DLQ holds %s", aws.ToString(m.Body))
	}
	f.deliveriesDone(t)
	if n := refused.count(); n != 0 {
		t.Errorf("the refused endpoint was reached %d times", n)
	}
	if c, _ := svc.SubscriptionCounters(via); c.Delivered != 1 {
		t.Errorf("redirector counters: %+v", c)
	}
	if c, _ := svc.SubscriptionCounters(sub); c.Failed != 2 || c.RedrivenToDLQ != 1 || c.Delivered != 0 {
		t.Errorf("refused counters: %+v", c)
	}
	// The status log says why.
	if r := adminDo(t, "GET", f.srv.URL()+"/_ferry/sns/delivery-logs", "tok"); !strings.Contains(r.Body, "is loopback") {
		t.Errorf("delivery log: %d %.300s", r.Status, r.Body)
	}
}
