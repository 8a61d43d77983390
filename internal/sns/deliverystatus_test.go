package sns

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestValidRoleARN(t *testing.T) {
	for _, c := range []struct {
		arn  string
		want bool
	}{
		{"arn:aws:iam::123456789012:role/SNSFeedback", true},
		{"arn:aws:iam::123456789012:role/service-role/SNSFeedback", true},
		{"arn:aws-cn:iam::123456789012:role/x", true},
		{"arn:aws:iam::123456789012:role/", false},
		{"arn:aws:iam::123456789012:role/a/", false},
		{"arn:aws:iam::123456789012:user/bob", false},
		{"arn:aws:iam:us-east-1:123456789012:role/x", false},
		{"arn:aws:sts::123456789012:role/x", false},
		{"arn:aws:iam::12345678901x:role/x", false},
		{"arn:aws:iam::1234567890:role/x", false},
		{"arn::iam::123456789012:role/x", false},
		{"role/x", false},
		{"", false},
	} {
		if got := validRoleARN(c.arn); got != c.want {
			t.Errorf("validRoleARN(%q) = %v, want %v", c.arn, got, c.want)
		}
	}
}

func TestSampled(t *testing.T) {
	const n = 10_000
	for _, rate := range []int{0, 1, 25, 50, 99, 100} {
		hits := 0
		for i := range n {
			id := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
			got := sampled(rate, id, "arn:aws:sns:us-east-1:000000000000:t:sub")
			if got != sampled(rate, id, "arn:aws:sns:us-east-1:000000000000:t:sub") {
				t.Fatalf("rate %d: %s sampled differently twice", rate, id)
			}
			if got {
				hits++
			}
		}
		switch {
		case rate == 0 && hits != 0, rate == 100 && hits != n:
			t.Errorf("rate %d: %d of %d", rate, hits, n)
		case hits < n*rate/100-n/50 || hits > n*rate/100+n/50:
			t.Errorf("rate %d: %d of %d sampled", rate, hits, n)
		}
	}
}

func TestPrepareFeedback(t *testing.T) {
	role := "arn:aws:iam::123456789012:role/r"
	for _, c := range []struct {
		attrs map[string]string
		proto string
		want  feedbackConf
		logs  bool
	}{
		{map[string]string{}, protoSQS, feedbackConf{}, false},
		{map[string]string{"SQSFailureFeedbackRoleArn": role}, protoSQS, feedbackConf{failure: true}, true},
		{map[string]string{"SQSFailureFeedbackRoleArn": role}, protoHTTP, feedbackConf{}, false},
		// A success role without a sample rate logs no successes.
		{map[string]string{"HTTPSuccessFeedbackRoleArn": role}, protoHTTPS, feedbackConf{}, false},
		{map[string]string{"HTTPSuccessFeedbackRoleArn": role, "HTTPSuccessFeedbackSampleRate": "40"}, protoHTTPS,
			feedbackConf{success: true, rate: 40}, true},
		{map[string]string{"LambdaFailureFeedbackRoleArn": role}, protoLambda, feedbackConf{failure: true}, true},
		{map[string]string{"FirehoseFailureFeedbackRoleArn": role}, protoFirehose, feedbackConf{failure: true}, true},
		{map[string]string{"ApplicationFailureFeedbackRoleArn": role}, protoApplication, feedbackConf{failure: true}, true},
		{map[string]string{"SQSFailureFeedbackRoleArn": role}, protoEmail, feedbackConf{}, false},
	} {
		tp := &topic{Attrs: c.attrs}
		tp.prepareFeedback()
		var got feedbackConf
		if i := feedbackIndex(c.proto); i >= 0 && tp.feedback != nil {
			got = tp.feedback[i]
		}
		if got != c.want || tp.logsFor(c.proto) != c.logs {
			t.Errorf("%v %s: %+v logs %v, want %+v %v", c.attrs, c.proto, got, tp.logsFor(c.proto), c.want, c.logs)
		}
	}
}

func TestOpenStatusLog(t *testing.T) {
	l, err := openStatusLog("-")
	if err != nil || l.w != os.Stdout || l.close() != nil {
		t.Errorf("stdout: %v %v", l, err)
	}
	if l, err = openStatusLog(""); err != nil || l.w != nil {
		t.Errorf("memory only: %v %v", l, err)
	}
	if _, err = openStatusLog(filepath.Join(t.TempDir(), "missing", "x.log")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing directory: %v", err)
	}
	// The ring keeps the latest lines, oldest first.
	s := testService()
	l, _ = openStatusLog("")
	for i := range statusLogSize + 3 {
		l.write(s, &DeliveryStatus{Delivery: DeliveryStatusDelivery{Attempts: i}})
	}
	lines := l.lines()
	if len(lines) != statusLogSize || !strings.Contains(string(lines[0]), `"attempts":3,`) ||
		!strings.Contains(string(lines[statusLogSize-1]), fmt.Sprintf(`"attempts":%d,`, statusLogSize+2)) {
		t.Errorf("%d lines, first %s", len(lines), lines[0])
	}
}
