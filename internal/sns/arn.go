package sns

import (
	"strings"
)

// partitionOf is the ARN partition a region belongs to.
func partitionOf(region string) string {
	switch {
	case strings.HasPrefix(region, "cn-"):
		return "aws-cn"
	case strings.HasPrefix(region, "us-gov-"):
		return "aws-us-gov"
	}
	return "aws"
}

func (s *Service) topicARN(name string) string {
	return "arn:" + partitionOf(s.region) + ":sns:" + s.region + ":" + s.account + ":" + name
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
func (s *Service) checkTopicARN(arn, param string) (string, error) {
	if arn == "" {
		return "", invalidParameter("%s Reason: no value for required parameter", param)
	}
	// Every publish checks its topic's ARN: no split, no allocation.
	if n := strings.Count(arn, ":") + 1; n < 6 {
		return "", invalidParameter("%s Reason: An ARN must have at least 6 elements, not %d", param, n)
	} else if n != 6 {
		return "", invalidParameter("%s", param)
	}
	parts, _ := arnSix(arn)
	if parts[0] != "arn" || parts[2] != "sns" || parts[3] != s.region || parts[5] == "" {
		return "", invalidParameter("%s", param)
	}
	if parts[4] != s.account {
		return "", errTopicNotFound
	}
	return parts[5], nil
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

// queueRef is an SQS queue named by its ARN.
type queueRef struct {
	region, account, name string
}

// parseQueueARN reads arn:{partition}:sqs:{region}:{account}:{name}.
func parseQueueARN(arn string) (queueRef, bool) {
	parts, ok := arnSix(arn)
	if !ok || parts[0] != "arn" || parts[1] == "" || parts[2] != "sqs" || parts[3] == "" || parts[4] == "" || parts[5] == "" {
		return queueRef{}, false
	}
	return queueRef{region: parts[3], account: parts[4], name: parts[5]}, true
}

// arnSix cuts s into exactly six ':'-separated elements, in place (it runs
// for every publish and every SQS copy); ok is false for any other count.
func arnSix(s string) (parts [6]string, ok bool) {
	for i := range 5 {
		if parts[i], s, ok = strings.Cut(s, ":"); !ok {
			return parts, false
		}
	}
	parts[5] = s
	return parts, !strings.Contains(s, ":")
}

// isARN reports whether s has the six elements of an ARN of service svc
// (any service when svc is empty).
func isARN(s, svc string) bool {
	parts := strings.SplitN(s, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[1] == "" || parts[2] == "" || parts[5] == "" {
		return false
	}
	return svc == "" || parts[2] == svc
}
