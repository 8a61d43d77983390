package sns

import (
	"strings"

	"github.com/ferrymq/ferry/internal/arn"
)

func (s *Service) topicARN(name string) string {
	return "arn:" + arn.Partition(s.region) + ":sns:" + s.region + ":" + s.account + ":" + name
}

// arnElements splits an ARN on ':' and refuses fewer than six elements
// with AWS's words; param names the parameter ("TopicArn").
func arnElements(arn, param string) ([]string, error) {
	parts := strings.Split(arn, ":")
	if len(parts) < 6 {
		return nil, invalidParameter("%s Reason: An ARN must have at least 6 elements, not %d", param, len(parts))
	}
	return parts, nil
}

// checkTopicARN validates a topic ARN parameter: present, well formed, of
// SNS, in this region and account. It returns the topic's name. A topic of
// another account cannot exist here, so it is reported as missing.
func (s *Service) checkTopicARN(topicARN, param string) (string, error) {
	if topicARN == "" {
		return "", invalidParameter("%s Reason: no value for required parameter", param)
	}
	// Every publish checks its topic's ARN: no split, no allocation.
	if n := strings.Count(topicARN, ":") + 1; n < 6 {
		return "", invalidParameter("%s Reason: An ARN must have at least 6 elements, not %d", param, n)
	} else if n != 6 {
		return "", invalidParameter("%s", param)
	}
	a, ok := arn.Split(topicARN)
	if !ok || a.Service != "sns" || a.Region != s.region || a.Resource == "" {
		return "", invalidParameter("%s", param)
	}
	if a.Account != s.account {
		return "", errTopicNotFound
	}
	return a.Resource, nil
}

// checkSubscriptionARN validates a subscription ARN: a topic ARN followed
// by the subscription's id. It returns the topic ARN.
func (s *Service) checkSubscriptionARN(arn string) (topicARN string, err error) {
	if arn == "" {
		return "", invalidParameter("SubscriptionArn Reason: no value for required parameter")
	}
	parts, err := arnElements(arn, "SubscriptionArn")
	if err != nil {
		return "", err
	}
	if len(parts) == 6 {
		return "", invalidParameter("SubscriptionId")
	}
	if len(parts) != 7 || parts[0] != "arn" || parts[2] != "sns" || parts[6] == "" {
		return "", invalidParameter("SubscriptionArn")
	}
	if parts[3] != s.region {
		return "", invalidParameter("SubscriptionArn")
	}
	return strings.Join(parts[:6], ":"), nil
}

// queueARN reads an SQS queue's ARN as SNS takes it for an endpoint or a
// dead-letter queue, arn:{partition}:sqs:{region}:{account}:{name}, of
// any account and region: the queue is SQS's to find when SNS sends.
func queueARN(s string) (arn.ARN, bool) {
	a, ok := arn.Parse(s)
	return a, ok && a.Service == "sqs" && a.Region != "" && a.Account != "" && a.Six()
}

// fifoQueue reports whether a queue's ARN names a FIFO queue.
func fifoQueue(queueARN string) bool { return strings.HasSuffix(queueARN, ".fifo") }

// isARN reports whether s is an ARN of service svc.
func isARN(s, svc string) bool {
	a, ok := arn.Parse(s)
	return ok && a.Service == svc
}
