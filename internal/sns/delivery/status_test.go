package delivery

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestValidRoleARN(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

func TestParseFeedback(t *testing.T) {
	t.Parallel()
	role := "arn:aws:iam::123456789012:role/r"
	for _, c := range []struct {
		attrs map[string]string
		proto string
		want  feedbackConf
		logs  bool
	}{
		{map[string]string{}, ProtoSQS, feedbackConf{}, false},
		{map[string]string{"SQSFailureFeedbackRoleArn": role}, ProtoSQS, feedbackConf{failure: true}, true},
		{map[string]string{"SQSFailureFeedbackRoleArn": role}, ProtoHTTP, feedbackConf{}, false},
		// A success role without a sample rate logs no successes.
		{map[string]string{"HTTPSuccessFeedbackRoleArn": role}, ProtoHTTPS, feedbackConf{}, false},
		{map[string]string{"HTTPSuccessFeedbackRoleArn": role, "HTTPSuccessFeedbackSampleRate": "40"}, ProtoHTTPS,
			feedbackConf{success: true, rate: 40}, true},
		{map[string]string{"LambdaFailureFeedbackRoleArn": role}, ProtoLambda, feedbackConf{failure: true}, true},
		{map[string]string{"FirehoseFailureFeedbackRoleArn": role}, ProtoFirehose, feedbackConf{failure: true}, true},
		{map[string]string{"ApplicationFailureFeedbackRoleArn": role}, ProtoApplication, feedbackConf{failure: true}, true},
		{map[string]string{"SQSFailureFeedbackRoleArn": role}, ProtoEmail, feedbackConf{}, false},
	} {
		tp, err := NewTopic("arn:aws:sns:us-east-1:000000000000:t", "t", false, c.attrs)
		if err != nil {
			t.Fatal(err)
		}
		var got feedbackConf
		if i := feedbackIndex(c.proto); i >= 0 && tp.feedback != nil {
			got = tp.feedback[i]
		}
		if got != c.want || tp.LogsFor(c.proto) != c.logs {
			t.Errorf("%v %s: %+v logs %v, want %+v %v", c.attrs, c.proto, got, tp.LogsFor(c.proto), c.want, c.logs)
		}
	}
}

func TestCheckFeedbackAttribute(t *testing.T) {
	t.Parallel()
	role := "arn:aws:iam::123456789012:role/r"
	for _, c := range []struct {
		name, value  string
		known, valid bool
	}{
		{"SQSSuccessFeedbackRoleArn", role, true, true},
		{"HTTPFailureFeedbackRoleArn", "", true, true},
		{"LambdaFailureFeedbackRoleArn", "arn:aws:iam::123456789012:user/bob", true, false},
		{"FirehoseSuccessFeedbackSampleRate", "100", true, true},
		{"ApplicationSuccessFeedbackSampleRate", "101", true, false},
		{"SQSSuccessFeedbackSampleRate", "50%", true, false},
		{"EmailSuccessFeedbackRoleArn", role, false, false},
		{"DisplayName", "x", false, false},
	} {
		if known, valid := CheckFeedbackAttribute(c.name, c.value); known != c.known || valid != c.valid {
			t.Errorf("%s=%q: known %v valid %v, want %v %v", c.name, c.value, known, valid, c.known, c.valid)
		}
	}
}

func TestOpenStatusLog(t *testing.T) {
	t.Parallel()
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
	l, _ = openStatusLog("")
	for i := range statusLogSize + 3 {
		l.write(slog.New(slog.DiscardHandler), &Status{Delivery: StatusDelivery{Attempts: i}})
	}
	lines := l.lines()
	if len(lines) != statusLogSize || !strings.Contains(string(lines[0]), `"attempts":3,`) ||
		!strings.Contains(string(lines[statusLogSize-1]), fmt.Sprintf(`"attempts":%d,`, statusLogSize+2)) {
		t.Errorf("%d lines, first %s", len(lines), lines[0])
	}
}
