package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	cwsdk "github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	snssdk "github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/server"
	"github.com/ferrymq/ferry/internal/testwait"
)

// resetState is what a reset must remove, made in one account through c:
// a queue with a message, a queue deleted a moment ago (its name
// reserved), a queue purged a moment ago, a topic with an SQS and a
// lambda subscription and a recorded delivery, SMS settings, an alarm.
func resetState(t *testing.T, f *ferry, c authClients) {
	t.Helper()
	ctx := ctxT(t)
	inbox := createQueueIn(ctx, t, c, "inbox")
	if _, err := c.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &inbox, MessageBody: aws.String("old")}); err != nil {
		t.Fatal(err)
	}
	gone := createQueueIn(ctx, t, c, "gone")
	if _, err := c.json.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: &gone}); err != nil {
		t.Fatal(err)
	}
	purged := createQueueIn(ctx, t, c, "purged")
	if _, err := c.json.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: &purged}); err != nil {
		t.Fatal(err)
	}
	topic := createTopic(ctx, t, c, "events")
	attrs, err := c.json.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &inbox, AttributeNames: []types.QueueAttributeName{"QueueArn"}})
	if err != nil {
		t.Fatal(err)
	}
	subscribe(ctx, t, c, topic, attrs.Attributes["QueueArn"])
	if _, err := c.sns.Subscribe(ctx, &snssdk.SubscribeInput{TopicArn: &topic, Protocol: aws.String("lambda"),
		Endpoint: aws.String("arn:aws:lambda:us-east-1:" + strings.Split(topic, ":")[4] + ":function:f")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.sns.Publish(ctx, &snssdk.PublishInput{TopicArn: &topic, Message: aws.String("hello")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.sns.SetSMSAttributes(ctx, &snssdk.SetSMSAttributesInput{Attributes: map[string]string{"DefaultSMSType": "Transactional"}}); err != nil {
		t.Fatal(err)
	}
	putAlarm(ctx, t, c, "too-many", topic)
}

// wantClean checks that c's account starts afresh: nothing listed, every
// name free at once, no purge remembered, no recorded delivery of its
// topics on f.
func wantClean(t *testing.T, f *ferry, c authClients) {
	t.Helper()
	ctx := ctxT(t)
	qs, err := c.json.ListQueues(ctx, &sqs.ListQueuesInput{})
	if err != nil || len(qs.QueueUrls) != 0 {
		t.Fatalf("queues after the reset: %v, %v", qs.QueueUrls, err)
	}
	ts, err := c.sns.ListTopics(ctx, &snssdk.ListTopicsInput{})
	if err != nil || len(ts.Topics) != 0 {
		t.Fatalf("topics after the reset: %+v, %v", ts.Topics, err)
	}
	subs, err := c.sns.ListSubscriptions(ctx, &snssdk.ListSubscriptionsInput{})
	if err != nil || len(subs.Subscriptions) != 0 {
		t.Fatalf("subscriptions after the reset: %+v, %v", subs.Subscriptions, err)
	}
	sms, err := c.sns.GetSMSAttributes(ctx, &snssdk.GetSMSAttributesInput{})
	if err != nil || sms.Attributes["DefaultSMSType"] == "Transactional" {
		t.Fatalf("SMS settings after the reset: %v, %v", sms.Attributes, err)
	}
	alarms, err := c.cw.DescribeAlarms(ctx, &cwsdk.DescribeAlarmsInput{})
	if err != nil || len(alarms.MetricAlarms) != 0 {
		t.Fatalf("alarms after the reset: %+v, %v", alarms.MetricAlarms, err)
	}
	hist, err := c.cw.DescribeAlarmHistory(ctx, &cwsdk.DescribeAlarmHistoryInput{})
	if err != nil || len(hist.AlarmHistoryItems) != 0 {
		t.Fatalf("alarm history after the reset: %+v, %v", hist.AlarmHistoryItems, err)
	}
	for _, name := range []string{"inbox", "gone", "purged"} {
		u := createQueueIn(ctx, t, c, name)
		if out := receiveBodies(ctx, t, c, u); len(out) != 0 {
			t.Fatalf("%s after the reset holds %v", name, out)
		}
		if _, err := c.json.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: &u}); err != nil {
			t.Fatalf("first purge of %s after the reset: %v", name, err)
		}
	}
	topic := createTopic(ctx, t, c, "events")
	if r := adminDo(t, "GET", f.srv.AdminURL()+"/_ferry/sns/deliveries?topic="+topic, ""); r.Status != 200 || r.Body != "" {
		t.Fatalf("recorded deliveries after the reset: %d %q", r.Status, r.Body)
	}
}

func post(t testing.TB, u string, hdr ...string) rawResponse {
	t.Helper()
	req := mustRequest(t, "POST", u)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return do(t, req)
}

// TestResetMoto: moto's path answers as moto does, and a POST removes the
// state of every account.
func TestResetMoto(t *testing.T) {
	t.Parallel()
	f := start(t)
	a := clientsOf(f.srv.URL(), "111111111111", "x", "us-east-1")
	b := clientsOf(f.srv.URL(), "222222222222", "x", "us-east-1")
	resetState(t, f, a)
	resetState(t, f, b)
	r := adminDo(t, "GET", f.srv.URL()+"/moto-api/reset", "")
	if r.Status != 400 || strings.TrimSpace(r.Body) != `{"Error":"Need to POST to reset Moto"}` {
		t.Fatalf("GET /moto-api/reset: %d %s", r.Status, r.Body)
	}
	if _, err := a.json.GetQueueUrl(ctxT(t), &sqs.GetQueueUrlInput{QueueName: aws.String("inbox")}); err != nil {
		t.Fatalf("a GET reset something: %v", err)
	}
	r = post(t, f.srv.URL()+"/moto-api/reset")
	if r.Status != 200 || strings.TrimSpace(r.Body) != `{"status":"ok"}` || r.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("POST /moto-api/reset: %d %s %s", r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	wantClean(t, f, a)
	wantClean(t, f, b)
}

// TestResetLocalStack: LocalStack's paths answer 200 with no body; one
// service's path leaves the others' state, and a service Ferry does not
// serve resets nothing.
func TestResetLocalStack(t *testing.T) {
	t.Parallel()
	f := start(t)
	a := clientsOf(f.srv.URL(), "111111111111", "x", "us-east-1")
	ctx := ctxT(t)
	resetState(t, f, a)
	for _, svc := range []string{"s3", "sqs"} {
		if r := post(t, f.srv.URL()+"/_localstack/state/"+svc+"/reset"); r.Status != 200 || r.Body != "" {
			t.Fatalf("reset %s: %d %q", svc, r.Status, r.Body)
		}
	}
	qs, err := a.json.ListQueues(ctx, &sqs.ListQueuesInput{})
	if err != nil || len(qs.QueueUrls) != 0 {
		t.Fatalf("queues after the SQS reset: %v, %v", qs.QueueUrls, err)
	}
	ts, err := a.sns.ListTopics(ctx, &snssdk.ListTopicsInput{})
	if err != nil || len(ts.Topics) != 1 {
		t.Fatalf("topics after the SQS reset: %+v, %v", ts.Topics, err)
	}
	alarms, err := a.cw.DescribeAlarms(ctx, &cwsdk.DescribeAlarmsInput{})
	if err != nil || len(alarms.MetricAlarms) != 1 {
		t.Fatalf("alarms after the SQS reset: %+v, %v", alarms.MetricAlarms, err)
	}
	if r := post(t, f.srv.URL()+"/_localstack/state/reset"); r.Status != 200 || r.Body != "" {
		t.Fatalf("reset: %d %q", r.Status, r.Body)
	}
	wantClean(t, f, a)
}

// TestResetFerry: Ferry's path resets one account, leaving the other's
// state, or one service; it says what it removed, ends the long polls on
// the queues it removes, and refuses what it does not know.
func TestResetFerry(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := start(t, onDisk(dir))
	a := clientsOf(f.srv.URL(), "111111111111", "x", "us-east-1")
	b := clientsOf(f.srv.URL(), "222222222222", "x", "us-east-1")
	ctx := ctxT(t)
	resetState(t, f, a)
	resetState(t, f, b)
	// An account's queues are those of every region.
	aWest := clientsOf(f.srv.URL(), "111111111111", "x", "eu-west-1")
	bWest := clientsOf(f.srv.URL(), "222222222222", "x", "eu-west-1")
	sendN(t, aWest.json, createQueueIn(ctx, t, aWest, "west"), 1)
	sendN(t, bWest.json, createQueueIn(ctx, t, bWest, "west"), 1)
	// Once the topics' deliveries are over, the sampler's tick saves the
	// minute of the sends; the alarms are evaluated on the way (a second
	// history item).
	testwait.Eventually(t, "the topics' deliveries", func() bool {
		const delivered = "AWS/SNS NumberOfNotificationsDelivered TopicName=events"
		return slices.Contains(metricsOf(t, a), delivered) && slices.Contains(metricsOf(t, b), delivered)
	})
	evaluated := f.srv.CloudWatch().Ticks()
	f.tick(t)
	testwait.Eventually(t, "the alarms' evaluation", func() bool { return f.srv.CloudWatch().Ticks() != evaluated })
	polled := createQueueIn(ctx, t, a, "polled")
	poll := make(chan error, 1)
	go func() {
		_, err := a.json.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &polled, WaitTimeSeconds: 20})
		poll <- err
	}()
	f.waitPending(t, 1)

	for _, q := range []string{"account=1234", "service=s3", "account=111111111111&service=lambda"} {
		if r := post(t, f.srv.URL()+"/_ferry/reset?"+q); r.Status != 400 || !strings.Contains(r.Body, `"error"`) {
			t.Errorf("reset?%s: %d %s", q, r.Status, r.Body)
		}
	}
	// a's series of both regions go, from memory and from the store.
	aSeries := append(metricsOf(t, a), metricsOf(t, aWest)...)
	bSeries, bWestSeries := metricsOf(t, b), metricsOf(t, bWest)
	r := post(t, f.srv.URL()+"/_ferry/reset?account=111111111111")
	var got map[string]any
	if err := json.Unmarshal([]byte(r.Body), &got); r.Status != 200 || err != nil {
		t.Fatalf("reset: %d %s", r.Status, r.Body)
	}
	// metricSeries is checked below, with the long poll.
	series := got["removed"].(map[string]any)["metricSeries"]
	got["removed"].(map[string]any)["metricSeries"] = "checked"
	want := `{"account":"111111111111","removed":{"alarmHistory":2,"alarms":1,"metricSeries":"checked",` +
		`"platformApplications":0,"platformEndpoints":0,"queues":4,"smsSettings":1,"subscriptions":2,"topics":1},` +
		`"services":["sns","cloudwatch","sqs"]}`
	if canon, _ := json.Marshal(got); string(canon) != want {
		t.Errorf("reset answered %s\nwant %s", canon, want)
	}
	// What is left of the sends before the reset: nothing of a's, in
	// either region; all of b's.
	wantSent := func(when string) {
		t.Helper()
		from, to := epoch.Add(-time.Hour), epoch.Add(time.Hour)
		for _, c := range []struct {
			who   string
			cl    authClients
			queue string
			want  int
		}{{"a", a, "inbox", 0}, {"a", aWest, "west", 0}, {"b", b, "inbox", 1}, {"b", bWest, "west", 1}} {
			if dps := statWith(t, c.cl.cw, "NumberOfMessagesSent", c.queue, from, to, 60); len(dps) != c.want {
				t.Errorf("%s: %s's datapoints of %s: %+v, want %d", when, c.who, c.queue, dps, c.want)
			}
		}
		if got := metricsOf(t, aWest); len(got) != 0 {
			t.Errorf("%s: a lists %v in eu-west-1", when, got)
		}
		if got := metricsOf(t, bWest); !slices.Equal(got, bWestSeries) {
			t.Errorf("%s: b lists %v in eu-west-1, want %v", when, got, bWestSeries)
		}
	}
	var pollErr error
	select {
	case pollErr = <-poll:
		// As when the queue is deleted: empty, or (on PostgreSQL, whose
		// receive looks the queue up again) QueueDoesNotExist.
		var qne *types.QueueDoesNotExist
		if pollErr != nil && !errors.As(pollErr, &qne) {
			t.Errorf("long poll on a removed queue: %v", pollErr)
		}
	case <-ctx.Done():
		t.Fatal("the long poll on a removed queue did not end")
	}
	// The reset removed every series a had listed. The long poll, ended
	// as its queue went, counts an empty receive if it answered one: as
	// any request that races the reset, before its series went (removed
	// with them) or after (left, alone).
	late := metricsOf(t, a)
	removed := map[bool]float64{false: float64(len(aSeries)), true: float64(len(aSeries) + 1)}
	switch {
	case len(late) == 0 && (series == removed[false] || pollErr == nil && series == removed[true]):
	case pollErr == nil && slices.Equal(late, []string{"AWS/SQS NumberOfEmptyReceives QueueName=polled"}) && series == removed[false]:
	default:
		t.Errorf("the reset removed %v series of a's %d (long poll: %v); a lists %v after it", series, len(aSeries), pollErr, late)
	}
	if got := metricsOf(t, b); !slices.Equal(got, bSeries) {
		t.Errorf("b lists %v after a's reset, want %v", got, bSeries)
	}
	wantSent("after a's reset")
	wantClean(t, f, a)
	if l, err := aWest.json.ListQueues(ctx, &sqs.ListQueuesInput{}); err != nil || len(l.QueueUrls) != 0 {
		t.Errorf("a's queues in eu-west-1 after its reset: %v %v", l, err)
	}
	if l, err := bWest.json.ListQueues(ctx, &sqs.ListQueuesInput{}); err != nil || len(l.QueueUrls) != 1 {
		t.Errorf("b's queues in eu-west-1 after a's reset: %v %v", l, err)
	}
	// b's state is whole.
	inbox, err := b.json.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("inbox")})
	if err != nil {
		t.Fatal(err)
	}
	if bodies := receiveBodies(ctx, t, b, aws.ToString(inbox.QueueUrl)); len(bodies) != 2 {
		t.Errorf("b's inbox holds %v, want its message and the SNS copy", bodies)
	}
	var dr *types.QueueDeletedRecently
	if _, err := b.json.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("gone")}); !errors.As(err, &dr) {
		t.Errorf("b's deleted name: %v, want QueueDeletedRecently", err)
	}
	if ts, err := b.sns.ListTopics(ctx, &snssdk.ListTopicsInput{}); err != nil || len(ts.Topics) != 1 {
		t.Errorf("b's topics: %+v, %v", ts, err)
	}
	if al, err := b.cw.DescribeAlarms(ctx, &cwsdk.DescribeAlarmsInput{}); err != nil || len(al.MetricAlarms) != 1 {
		t.Errorf("b's alarms: %+v, %v", al, err)
	}

	// One service of every account: b's topic goes, its queues stay.
	r = post(t, f.srv.URL()+"/_ferry/reset?service=sns")
	if r.Status != 200 || !strings.Contains(r.Body, `"services":["sns"]`) || !strings.Contains(r.Body, `"topics":2`) {
		t.Fatalf("reset of SNS: %d %s", r.Status, r.Body)
	}
	if ts, err := b.sns.ListTopics(ctx, &snssdk.ListTopicsInput{}); err != nil || len(ts.Topics) != 0 {
		t.Errorf("b's topics after the SNS reset: %+v, %v", ts, err)
	}
	if _, err := b.json.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("inbox")}); err != nil {
		t.Errorf("b's queue after the SNS reset: %v", err)
	}

	// Nothing of a's series comes back at a restart.
	stop(t, f)
	f = start(t, onDisk(dir), onClock(f.clk))
	a, aWest = clientsOf(f.srv.URL(), "111111111111", "x", "us-east-1"), clientsOf(f.srv.URL(), "111111111111", "x", "eu-west-1")
	b, bWest = clientsOf(f.srv.URL(), "222222222222", "x", "us-east-1"), clientsOf(f.srv.URL(), "222222222222", "x", "eu-west-1")
	wantSent("after a restart")
}

// TestResetAdmin: the reset paths are admin endpoints: with auth on they
// need the admin token, and a browser's request for another site is
// refused as at every admin endpoint.
func TestResetAdmin(t *testing.T) {
	t.Parallel()
	f := start(t, verifyingHarness(t), func(c *server.Config) { c.AdminToken = "tok" })
	f.createQueue(t, "kept", nil)
	for _, p := range []string{"/_ferry/reset", "/moto-api/reset", "/_localstack/state/reset", "/_localstack/state/sqs/reset"} {
		if r := post(t, f.srv.URL()+p); r.Status != http.StatusUnauthorized {
			t.Errorf("POST %s without the token: %d %s", p, r.Status, r.Body)
		}
		if r := post(t, f.srv.URL()+p, "Authorization", "Bearer tok", "Origin", "https://evil.example"); r.Status != http.StatusForbidden {
			t.Errorf("POST %s from another site: %d %s", p, r.Status, r.Body)
		}
	}
	if _, err := f.json.GetQueueUrl(ctxT(t), &sqs.GetQueueUrlInput{QueueName: aws.String("kept")}); err != nil {
		t.Fatalf("a refused reset removed the queue: %v", err)
	}
	if r := post(t, f.srv.URL()+"/_ferry/reset", "Authorization", "Bearer tok"); r.Status != 200 {
		t.Fatalf("POST /_ferry/reset with the token: %d %s", r.Status, r.Body)
	}
	var qne *types.QueueDoesNotExist
	if _, err := f.json.GetQueueUrl(ctxT(t), &sqs.GetQueueUrlInput{QueueName: aws.String("kept")}); !errors.As(err, &qne) {
		t.Fatalf("after the reset: %v", err)
	}
}

// TestSQSWaitSwitches: by default a deleted queue's name and a second
// purge wait 60 seconds, as on AWS; with the switches off both are
// allowed at once.
func TestSQSWaitSwitches(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		waits engine.Waits
		aws   bool
	}{
		{"AWS", engine.Waits{}, true},
		{"off", engine.Waits{NoRecreateDelay: true, NoPurgeInterval: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := start(t, withWaits(t, tc.waits))
			ctx := ctxT(t)
			u := f.createQueue(t, "q", nil)
			if _, err := f.json.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: &u}); err != nil {
				t.Fatal(err)
			}
			_, err := f.json.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: &u})
			var pip *types.PurgeQueueInProgress
			if tc.aws != errors.As(err, &pip) {
				t.Errorf("second purge at once: %v", err)
			}
			if _, err := f.json.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: &u}); err != nil {
				t.Fatal(err)
			}
			_, err = f.json.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("q")})
			var dr *types.QueueDeletedRecently
			if tc.aws != errors.As(err, &dr) || (!tc.aws && err != nil) {
				t.Errorf("create of the deleted name at once: %v", err)
			}
		})
	}
}

// TestResetNodes: on PostgreSQL, a reset through one node is the other's
// too: its queues, topics and alarms are gone there, a deleted name is
// free there at once, and it forgets the deliveries it recorded itself.
func TestResetNodes(t *testing.T) {
	if !onPostgres(t) {
		t.Skip("several nodes need PostgreSQL")
	}
	t.Parallel()
	nodes := startNodes(t, 2)
	a := clientsOf(nodes[0].srv.URL(), "111111111111", "x", "us-east-1")
	a2 := clientsOf(nodes[1].srv.URL(), "111111111111", "x", "us-east-1")
	resetState(t, nodes[1], a2)
	ctx := ctxT(t)
	// The second node knows the topic, and recorded the lambda delivery.
	topic := "arn:aws:sns:us-east-1:111111111111:events"
	if r := adminDo(t, "GET", nodes[1].srv.URL()+"/_ferry/sns/deliveries?topic="+topic, ""); r.Body == "" {
		t.Fatal("no delivery recorded on the second node")
	}
	if r := post(t, nodes[0].srv.URL()+"/_ferry/reset"); r.Status != 200 {
		t.Fatalf("reset: %d %s", r.Status, r.Body)
	}
	testwait.Eventually(t, "the second node forgets the topic and its deliveries", func() bool {
		ts, err := a2.sns.ListTopics(ctx, &snssdk.ListTopicsInput{})
		r := adminDo(t, "GET", nodes[1].srv.URL()+"/_ferry/sns/deliveries?topic="+topic, "")
		return err == nil && len(ts.Topics) == 0 && r.Body == ""
	})
	testwait.Eventually(t, "the second node forgets the alarm", func() bool {
		al, err := a2.cw.DescribeAlarms(ctx, &cwsdk.DescribeAlarmsInput{})
		return err == nil && len(al.MetricAlarms) == 0
	})
	wantClean(t, nodes[1], a2)

	// A reset of one account: its series go from the node that resets,
	// which lists them through its overlay of the other node's points,
	// from the other node and from the store; b's stay whole.
	b := clientsOf(nodes[0].srv.URL(), "222222222222", "x", "us-east-1")
	b2 := clientsOf(nodes[1].srv.URL(), "222222222222", "x", "us-east-1")
	sendN(t, b2.json, createQueueIn(ctx, t, b2, "kept"), 1)
	c := &cluster{clk: nodes[0].clk, nodes: nodes}
	c.step(t) // saves
	c.step(t) // reads the other node's
	aSeries, bSeries := metricsOf(t, a2), metricsOf(t, b2)
	if len(aSeries) == 0 || !slices.Equal(metricsOf(t, a), aSeries) || !slices.Equal(metricsOf(t, b), bSeries) {
		t.Fatalf("before the reset the first node lists %v and %v, the second %v and %v",
			metricsOf(t, a), metricsOf(t, b), aSeries, bSeries)
	}
	if r := post(t, nodes[0].srv.URL()+"/_ferry/reset?account=111111111111"); r.Status != 200 {
		t.Fatalf("reset of a: %d %s", r.Status, r.Body)
	}
	if got := metricsOf(t, a); len(got) != 0 {
		t.Errorf("the first node lists %v of a after its reset", got)
	}
	testwait.Eventually(t, "the second node forgets a's series", func() bool { return len(metricsOf(t, a2)) == 0 })
	c.step(t)
	c.step(t)
	for _, n := range []struct {
		who  string
		a, b authClients
	}{{"first", a, b}, {"second", a2, b2}} {
		if got := metricsOf(t, n.a); len(got) != 0 {
			t.Errorf("the %s node lists %v of a after the saves and reads that follow its reset", n.who, got)
		}
		if got := metricsOf(t, n.b); !slices.Equal(got, bSeries) {
			t.Errorf("the %s node lists %v of b after a's reset, want %v", n.who, got, bSeries)
		}
	}
	stored, err := nodes[0].srv.Engine().(engine.MetricStore).MetricPoints(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range stored {
		if p.Account != "222222222222" {
			t.Errorf("stored after a's reset: %+v", p)
		}
	}
}

// metricsOf lists the series the client's account has in its region, as
// "namespace metric dimension=value".
func metricsOf(t testing.TB, c authClients) []string {
	t.Helper()
	var out []string
	p := cwsdk.NewListMetricsPaginator(c.cw, &cwsdk.ListMetricsInput{})
	for p.HasMorePages() {
		page, err := p.NextPage(ctxT(t))
		if err != nil {
			t.Fatalf("ListMetrics: %v", err)
		}
		for _, m := range page.Metrics {
			s := aws.ToString(m.Namespace) + " " + aws.ToString(m.MetricName)
			for _, d := range m.Dimensions {
				s += " " + aws.ToString(d.Name) + "=" + aws.ToString(d.Value)
			}
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}
