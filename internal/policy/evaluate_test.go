package policy

import (
	"testing"
	"time"
)

const (
	owner    = "111111111111"
	other    = "222222222222"
	queueARN = "arn:aws:sqs:us-east-1:111111111111:orders"
	topicARN = "arn:aws:sns:us-east-1:222222222222:events"
)

var now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func caller(account, action, ip string, tls bool) *Request {
	return &Request{Account: account, Action: action, Resource: queueARN,
		Context: CallerContext(account, "aws", ip, tls, now)}
}

func TestAuthorize(t *testing.T) {
	allowOther := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::222222222222:root"},"Action":"SQS:SendMessage","Resource":"` + queueARN + `"}]}`
	for _, tt := range []struct {
		name   string
		doc    string // "" is no policy
		req    *Request
		want   bool
		wantEv Decision
	}{
		{"owner, no policy", "", caller(owner, "sqs:ReceiveMessage", "", false), true, NotApplicable},
		{"other, no policy", "", caller(other, "sqs:SendMessage", "", false), false, NotApplicable},
		{"other, granted", allowOther, caller(other, "sqs:SendMessage", "", false), true, Allowed},
		{"other, granted, action case", allowOther, caller(other, "SQS:sendmessage", "", false), true, Allowed},
		{"other, another action", allowOther, caller(other, "sqs:ReceiveMessage", "", false), false, NotApplicable},
		{"third account", allowOther, caller("333333333333", "sqs:SendMessage", "", false), false, NotApplicable},
		{"other, another resource", `{"Statement":{"Effect":"Allow","Principal":{"AWS":"222222222222"},"Action":"sqs:*","Resource":"arn:aws:sqs:us-east-1:111111111111:other"}}`,
			caller(other, "sqs:SendMessage", "", false), false, NotApplicable},
		{"account id principal, wildcard action", `{"Statement":{"Effect":"Allow","Principal":{"AWS":["222222222222"]},"Action":"sqs:Send*","Resource":"arn:aws:sqs:*:111111111111:ord?rs"}}`,
			caller(other, "sqs:SendMessage", "", false), true, Allowed},
		{"wildcard action misses", `{"Statement":{"Effect":"Allow","Principal":{"AWS":"222222222222"},"Action":"sqs:Send*","Resource":"*"}}`,
			caller(other, "sqs:ReceiveMessage", "", false), false, NotApplicable},
		{"star principal", `{"Statement":{"Effect":"Allow","Principal":"*","Action":"*"}}`, caller(other, "sqs:DeleteMessage", "", false), true, Allowed},
		{"role arn is no ferry caller", `{"Statement":{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::222222222222:role/app"},"Action":"sqs:*"}}`,
			caller(other, "sqs:SendMessage", "", false), false, NotApplicable},
		{"deny wins", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sqs:*"},{"Effect":"Deny","Principal":{"AWS":"222222222222"},"Action":"sqs:ReceiveMessage"}]}`,
			caller(other, "sqs:ReceiveMessage", "", false), false, Denied},
		{"deny wins, listed first", `{"Statement":[{"Effect":"Deny","Principal":"*","Action":"sqs:SendMessage"},{"Effect":"Allow","Principal":"*","Action":"sqs:*"}]}`,
			caller(other, "sqs:SendMessage", "", false), false, Denied},
		{"owner denied", `{"Statement":{"Effect":"Deny","Principal":"*","Action":"sqs:PurgeQueue"}}`, caller(owner, "sqs:PurgeQueue", "", false), false, Denied},
		{"owner, deny of another action", `{"Statement":{"Effect":"Deny","Principal":"*","Action":"sqs:PurgeQueue"}}`, caller(owner, "sqs:SendMessage", "", false), true, NotApplicable},
		{"not action", `{"Statement":{"Effect":"Allow","Principal":"*","NotAction":["sqs:DeleteMessage","sqs:PurgeQueue"]}}`,
			caller(other, "sqs:SendMessage", "", false), true, Allowed},
		{"not action excludes", `{"Statement":{"Effect":"Allow","Principal":"*","NotAction":"sqs:Delete*"}}`,
			caller(other, "sqs:DeleteMessage", "", false), false, NotApplicable},
		{"not resource", `{"Statement":{"Effect":"Allow","Principal":"*","Action":"sqs:*","NotResource":"arn:aws:sqs:*:*:private-*"}}`,
			caller(other, "sqs:SendMessage", "", false), true, Allowed},
		{"not resource excludes", `{"Statement":{"Effect":"Allow","Principal":"*","Action":"sqs:*","NotResource":"arn:aws:sqs:*:*:ord*"}}`,
			caller(other, "sqs:SendMessage", "", false), false, NotApplicable},
		{"not principal deny", `{"Statement":{"Effect":"Deny","NotPrincipal":{"AWS":"111111111111"},"Action":"*"}}`,
			caller(other, "sqs:SendMessage", "", false), false, Denied},
		{"not principal deny spares the named", `{"Statement":{"Effect":"Deny","NotPrincipal":{"AWS":"111111111111"},"Action":"*"}}`,
			caller(owner, "sqs:SendMessage", "", false), true, NotApplicable},
		{"source ip in", `{"Statement":{"Effect":"Allow","Principal":"*","Action":"sqs:*","Condition":{"IpAddress":{"aws:SourceIp":"10.1.0.0/16"}}}}`,
			caller(other, "sqs:SendMessage", "10.1.2.3", false), true, Allowed},
		{"source ip out", `{"Statement":{"Effect":"Allow","Principal":"*","Action":"sqs:*","Condition":{"IpAddress":{"aws:SourceIp":"10.1.0.0/16"}}}}`,
			caller(other, "sqs:SendMessage", "10.2.0.1", false), false, NotApplicable},
		{"source ip v6 single", `{"Statement":{"Effect":"Allow","Principal":"*","Action":"sqs:*","Condition":{"IpAddress":{"aws:SourceIp":"::1"}}}}`,
			caller(other, "sqs:SendMessage", "::1", false), true, Allowed},
		{"not ip deny", `{"Statement":{"Effect":"Deny","Principal":"*","Action":"sqs:*","Condition":{"NotIpAddress":{"aws:SourceIp":["127.0.0.0/8"]}}}}`,
			caller(owner, "sqs:SendMessage", "192.0.2.1", false), false, Denied},
		{"enforce ssl over http", `{"Statement":{"Effect":"Deny","Principal":{"AWS":"*"},"Action":"sqs:*","Condition":{"Bool":{"aws:SecureTransport":"false"}}}}`,
			caller(owner, "sqs:SendMessage", "", false), false, Denied},
		{"enforce ssl over https", `{"Statement":{"Effect":"Deny","Principal":{"AWS":"*"},"Action":"sqs:*","Condition":{"Bool":{"aws:SecureTransport":false}}}}`,
			caller(owner, "sqs:SendMessage", "", true), true, NotApplicable},
		{"principal account, key case", `{"Statement":{"Effect":"Allow","Principal":"*","Action":"sqs:*","Condition":{"StringEquals":{"AWS:PrincipalAccount":["222222222222"]}}}}`,
			caller(other, "sqs:SendMessage", "", false), true, Allowed},
		{"string not equals", `{"Statement":{"Effect":"Allow","Principal":"*","Action":"sqs:*","Condition":{"StringNotEquals":{"aws:PrincipalAccount":"222222222222"}}}}`,
			caller(other, "sqs:SendMessage", "", false), false, NotApplicable},
		{"absent key, positive", `{"Statement":{"Effect":"Allow","Principal":"*","Action":"sqs:*","Condition":{"StringEquals":{"aws:SourceArn":"x"}}}}`,
			caller(other, "sqs:SendMessage", "", false), false, NotApplicable},
		{"absent key, negated", `{"Statement":{"Effect":"Allow","Principal":"*","Action":"sqs:*","Condition":{"ArnNotLike":{"aws:SourceArn":"arn:*"}}}}`,
			caller(other, "sqs:SendMessage", "", false), true, Allowed},
		{"absent key, if exists", `{"Statement":{"Effect":"Allow","Principal":"*","Action":"sqs:*","Condition":{"ArnLikeIfExists":{"aws:SourceArn":"arn:aws:sns:*"}}}}`,
			caller(other, "sqs:SendMessage", "", false), true, Allowed},
		{"null true", `{"Statement":{"Effect":"Allow","Principal":"*","Action":"sqs:*","Condition":{"Null":{"aws:SourceArn":"true"}}}}`,
			caller(other, "sqs:SendMessage", "", false), true, Allowed},
		{"null false", `{"Statement":{"Effect":"Allow","Principal":"*","Action":"sqs:*","Condition":{"Null":{"aws:SourceArn":"false"}}}}`,
			caller(other, "sqs:SendMessage", "", false), false, NotApplicable},
		{"all conditions must hold", `{"Statement":{"Effect":"Allow","Principal":"*","Action":"sqs:*","Condition":{"StringEquals":{"aws:PrincipalAccount":"222222222222"},"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}}}`,
			caller(other, "sqs:SendMessage", "192.0.2.1", false), false, NotApplicable},
		{"numeric and date", `{"Statement":{"Effect":"Allow","Principal":"*","Action":"sqs:*","Condition":{"NumericGreaterThan":{"aws:EpochTime":1000},"DateLessThan":{"aws:CurrentTime":"2030-01-01T00:00:00Z"}}}}`,
			caller(other, "sqs:SendMessage", "", false), true, Allowed},
		{"date past", `{"Statement":{"Effect":"Allow","Principal":"*","Action":"sqs:*","Condition":{"DateLessThan":{"aws:CurrentTime":"2020-01-01"}}}}`,
			caller(other, "sqs:SendMessage", "", false), false, NotApplicable},
		{"ignore case", `{"Statement":{"Effect":"Allow","Principal":"*","Action":"sqs:*","Condition":{"StringEqualsIgnoreCase":{"aws:PrincipalArn":"ARN:AWS:IAM::222222222222:ROOT"}}}}`,
			caller(other, "sqs:SendMessage", "", false), true, Allowed},
		{"string like", `{"Statement":{"Effect":"Allow","Principal":"*","Action":"sqs:*","Condition":{"StringLike":{"aws:PrincipalArn":"arn:aws:iam::2222*"}}}}`,
			caller(other, "sqs:SendMessage", "", false), true, Allowed},
		{"for all values", `{"Statement":{"Effect":"Allow","Principal":"*","Action":"sqs:*","Condition":{"ForAllValues:StringEquals":{"aws:PrincipalAccount":["222222222222","333333333333"]}}}}`,
			caller(other, "sqs:SendMessage", "", false), true, Allowed},
		{"for any value negated", `{"Statement":{"Effect":"Allow","Principal":"*","Action":"sqs:*","Condition":{"ForAnyValue:StringNotEquals":{"aws:PrincipalAccount":"222222222222"}}}}`,
			caller(other, "sqs:SendMessage", "", false), false, NotApplicable},
		{"service principal is not an account", `{"Statement":{"Effect":"Allow","Principal":{"Service":"sns.amazonaws.com"},"Action":"sqs:SendMessage"}}`,
			caller(other, "sqs:SendMessage", "", false), false, NotApplicable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var p *Policy
			if tt.doc != "" {
				var err error
				if p, err = Parse(tt.doc); err != nil {
					t.Fatalf("Parse: %v", err)
				}
			}
			if got := p.Evaluate(tt.req); got != tt.wantEv {
				t.Errorf("Evaluate = %v, want %v", got, tt.wantEv)
			}
			if got := Authorize(p, tt.req, owner); got != tt.want {
				t.Errorf("Authorize = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMaySNSSend(t *testing.T) {
	const queue = "arn:aws:sqs:us-east-1:111111111111:orders"
	const ownTopic = "arn:aws:sns:us-east-1:111111111111:own"
	for _, tt := range []struct {
		name             string
		doc              string
		topic, topicAcct string
		want             bool
	}{
		{"same account, no policy", "", ownTopic, owner, true},
		{"other account, no policy", "", topicARN, other, false},
		{"service with source arn", `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"sns.amazonaws.com"},"Action":"sqs:SendMessage","Resource":"` + queue + `","Condition":{"ArnEquals":{"aws:SourceArn":"` + topicARN + `"}}}]}`, topicARN, other, true},
		{"service with another source arn", `{"Statement":[{"Effect":"Allow","Principal":{"Service":"sns.amazonaws.com"},"Action":"sqs:SendMessage","Condition":{"ArnEquals":{"aws:SourceArn":"arn:aws:sns:us-east-1:222222222222:other"}}}]}`, topicARN, other, false},
		{"service with source account", `{"Statement":[{"Effect":"Allow","Principal":{"Service":"sns.amazonaws.com"},"Action":"sqs:SendMessage","Condition":{"StringEquals":{"aws:SourceAccount":"222222222222"}}}]}`, topicARN, other, true},
		{"star with source arn like", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Condition":{"ArnLike":{"aws:SourceArn":"arn:aws:sns:*:222222222222:*"}}}]}`, topicARN, other, true},
		{"topic owner account", `{"Statement":[{"Effect":"Allow","Principal":{"AWS":"222222222222"},"Action":"sqs:SendMessage"}]}`, topicARN, other, true},
		{"service, wrong action", `{"Statement":[{"Effect":"Allow","Principal":{"Service":"sns.amazonaws.com"},"Action":"sqs:ReceiveMessage"}]}`, topicARN, other, false},
		{"deny of the service", `{"Statement":[{"Effect":"Allow","Principal":{"AWS":"222222222222"},"Action":"sqs:SendMessage"},{"Effect":"Deny","Principal":{"Service":"sns.amazonaws.com"},"Action":"sqs:*"}]}`, topicARN, other, false},
		{"same account denied", `{"Statement":[{"Effect":"Deny","Principal":"*","Action":"sqs:SendMessage","Condition":{"ArnLike":{"aws:SourceArn":"arn:aws:sns:*"}}}]}`, ownTopic, owner, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var p *Policy
			if tt.doc != "" {
				var err error
				if p, err = Parse(tt.doc); err != nil {
					t.Fatalf("Parse: %v", err)
				}
			}
			if got := MaySNSSend(p, tt.topic, tt.topicAcct, queue, owner, now); got != tt.want {
				t.Errorf("MaySNSSend = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMatch(t *testing.T) {
	for _, tt := range []struct {
		pattern, s string
		want       bool
	}{
		{"", "", true}, {"*", "", true}, {"*", "anything", true}, {"a?c", "abc", true}, {"a?c", "ac", false},
		{"sqs:*", "sqs:sendmessage", true}, {"sqs:send*", "sqs:receivemessage", false},
		{"*message", "sqs:sendmessage", true}, {"a*b*c", "axxbyyc", true}, {"a*b*c", "axxbyy", false},
		{"abc", "abcd", false}, {"**", "x", true}, {"a*", "b", false},
	} {
		if got := Match(tt.pattern, tt.s); got != tt.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
	}
}

func TestArnLike(t *testing.T) {
	for _, tt := range []struct {
		pattern, arn string
		want         bool
	}{
		{"arn:aws:sns:us-east-1:222222222222:events", topicARN, true},
		{"arn:aws:sns:*:222222222222:*", topicARN, true},
		{"arn:aws:sns:*", topicARN, true},
		{"arn:aws:sqs:*", topicARN, false},
		{"arn:aws:sns:*:1*:*", topicARN, false},
		{"arn:aws:sns:us-east-?:222222222222:ev*", topicARN, true},
		{"arn:aws:sns:us-east-1:222222222222:events", "arn:aws:sns:us-east-1:222222222222", false},
		{"*", "anything", true},
	} {
		if got := arnLike(tt.pattern, tt.arn); got != tt.want {
			t.Errorf("arnLike(%q, %q) = %v, want %v", tt.pattern, tt.arn, got, tt.want)
		}
	}
}
