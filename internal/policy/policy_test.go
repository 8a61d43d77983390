package policy

import (
	"errors"
	"strings"
	"testing"
)

// Documents SQS and SNS accept: what AddPermission writes, SNS's default
// topic policy, and the examples of the SQS and SNS developer guides.
var acceptedDocs = map[string]string{
	"sqs AddPermission":                 `{"Version":"2008-10-17","Id":"arn:aws:sqs:us-east-1:111111111111:q/SQSDefaultPolicy","Statement":[{"Sid":"share","Effect":"Allow","Principal":{"AWS":"arn:aws:iam::222222222222:root"},"Action":"SQS:SendMessage","Resource":"arn:aws:sqs:us-east-1:111111111111:q"}]}`,
	"sqs AddPermission, lists":          `{"Version":"2008-10-17","Id":"x/SQSDefaultPolicy","Statement":[{"Sid":"a","Effect":"Allow","Principal":{"AWS":["arn:aws:iam::222222222222:root","arn:aws:iam::333333333333:root"]},"Action":["SQS:SendMessage","SQS:ReceiveMessage"],"Resource":"arn:aws:sqs:us-east-1:111111111111:q"}]}`,
	"sns default":                       `{"Version":"2008-10-17","Id":"__default_policy_ID","Statement":[{"Sid":"__default_statement_ID","Effect":"Allow","Principal":{"AWS":"*"},"Action":["SNS:GetTopicAttributes","SNS:SetTopicAttributes","SNS:AddPermission","SNS:RemovePermission","SNS:DeleteTopic","SNS:Subscribe","SNS:ListSubscriptionsByTopic","SNS:Publish"],"Resource":"arn:aws:sns:us-east-1:111111111111:t","Condition":{"StringEquals":{"AWS:SourceOwner":"111111111111"}}}]}`,
	"sns to sqs":                        `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"sns.amazonaws.com"},"Action":"sqs:SendMessage","Resource":"arn:aws:sqs:us-east-2:123456789012:MyQueue","Condition":{"ArnEquals":{"aws:SourceArn":"arn:aws:sns:us-east-2:123456789012:MyTopic"}}}]}`,
	"statement object, principal star":  `{"Version":"2012-10-17","Id":"Queue1_Policy_UUID","Statement":{"Sid":"Queue1_AnonymousAccess_ReceiveMessage","Effect":"Allow","Principal":"*","Action":"sqs:ReceiveMessage","Resource":"arn:aws:sqs:*:111122223333:queue1"}}`,
	"ip and time":                       `{"Version":"2012-10-17","Id":"Queue1_Policy_UUID","Statement":[{"Sid":"Queue1_AnonymousAccess_AllActions_WhitelistIP","Effect":"Allow","Principal":"*","Action":"sqs:*","Resource":"arn:aws:sqs:*:111122223333:queue1","Condition":{"IpAddress":{"aws:SourceIp":"192.0.2.0/24"},"DateGreaterThan":{"aws:CurrentTime":"2009-01-31T12:00Z"},"DateLessThan":{"aws:CurrentTime":"2009-01-31T15:00Z"}}}]}`,
	"deny not ip":                       `{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Principal":"*","Action":"sqs:*","Resource":"arn:aws:sqs:*:111122223333:queue1","Condition":{"NotIpAddress":{"aws:SourceIp":["192.0.2.0/24","2001:db8::/32","203.0.113.7"]}}}]}`,
	"enforce ssl":                       `{"Version":"2012-10-17","Statement":[{"Sid":"enforceSSL","Effect":"Deny","Principal":{"AWS":"*"},"Action":"sqs:*","Resource":"arn:aws:sqs:us-east-1:111111111111:q","Condition":{"Bool":{"aws:SecureTransport":"false"}}}]}`,
	"bool literal, numbers, null, sets": `{"Statement":[{"Effect":"Allow","Principal":{"AWS":["111111111111"]},"NotAction":["sqs:DeleteQueue"],"NotResource":"arn:aws:sqs:*:*:private-*","Condition":{"Bool":{"aws:SecureTransport":true},"NumericLessThanEquals":{"aws:EpochTime":4102444800},"Null":{"aws:SourceIp":"false"},"ForAnyValue:StringLike":{"aws:SourceArn":["arn:aws:sns:*"]},"StringEqualsIfExists":{"aws:SourceAccount":"111111111111"}}}]}`,
	"eventbridge service, multi-arn":    `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":["events.amazonaws.com","s3.amazonaws.com"]},"Action":"sqs:SendMessage","Resource":"*","Condition":{"ArnLike":{"aws:SourceArn":["arn:aws:events:*:111111111111:rule/*","arn:aws:s3:*:*:bucket"]},"StringEquals":{"aws:SourceAccount":"111111111111"}}}]}`,
	"not principal, role arn":           `{"Version":"2012-10-17","Statement":[{"Effect":"Deny","NotPrincipal":{"AWS":["arn:aws:iam::111111111111:role/admin","arn:aws:iam::111111111111:root"]},"Action":"*","Resource":"*"}]}`,
}

func TestParseAccepts(t *testing.T) {
	for name, doc := range acceptedDocs {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse(doc); err != nil {
				t.Fatalf("Parse: %v", err)
			}
		})
	}
}

func TestParseReads(t *testing.T) {
	p, err := Parse(acceptedDocs["sqs AddPermission, lists"])
	if err != nil {
		t.Fatal(err)
	}
	st := p.Statements[0]
	if p.Version != Version2008 || st.Sid != "a" || st.Effect != Allow || st.NotAction ||
		strings.Join(st.Principal.Accounts, ",") != "222222222222,333333333333" ||
		strings.Join(st.Actions, ",") != "sqs:sendmessage,sqs:receivemessage" || len(st.Resources) != 1 {
		t.Errorf("parsed %+v", p)
	}
	p, _ = Parse(acceptedDocs["not principal, role arn"])
	if st := p.Statements[0]; !st.NotPrincipal || len(st.Principal.ARNs) != 1 || st.Principal.Accounts[0] != "111111111111" {
		t.Errorf("parsed %+v", st)
	}
}

func TestParseRefuses(t *testing.T) {
	const ok = `"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage"`
	for _, tt := range []struct{ name, doc, reason string }{
		{"not json", `{"Statement":`, "not a JSON object"},
		{"array", `[]`, "not a JSON object"},
		{"null", `null`, "not a JSON object"},
		{"trailing data", `{"Statement":{` + ok + `}} {}`, "not a JSON object"},
		{"bad version", `{"Version":"2020-01-01","Statement":{` + ok + `}}`, "Version"},
		{"unknown element", `{"Statements":[]}`, "unknown element"},
		{"no statement", `{"Version":"2012-10-17"}`, "no Statement"},
		{"statement not object", `{"Statement":["x"]}`, "not an object"},
		{"no effect", `{"Statement":{"Principal":"*","Action":"sqs:*"}}`, "no Effect"},
		{"lower-case effect", `{"Statement":{"Effect":"allow","Principal":"*","Action":"sqs:*"}}`, "neither Allow nor Deny"},
		{"no principal", `{"Statement":{"Effect":"Allow","Action":"sqs:*"}}`, "no Principal"},
		{"principal string", `{"Statement":{"Effect":"Allow","Principal":"111111111111","Action":"sqs:*"}}`, "Principal"},
		{"principal kind", `{"Statement":{"Effect":"Allow","Principal":{"User":"x"},"Action":"sqs:*"}}`, "unknown principal type"},
		{"aws principal", `{"Statement":{"Effect":"Allow","Principal":{"AWS":"bob"},"Action":"sqs:*"}}`, "neither an account nor an ARN"},
		{"both principals", `{"Statement":{"Effect":"Allow","Principal":"*","NotPrincipal":"*","Action":"sqs:*"}}`, "both"},
		{"no action", `{"Statement":{"Effect":"Allow","Principal":"*"}}`, "no Action"},
		{"action shape", `{"Statement":{"Effect":"Allow","Principal":"*","Action":"SendMessage"}}`, "service:action"},
		{"empty action list", `{"Statement":{"Effect":"Allow","Principal":"*","Action":[]}}`, "neither a string"},
		{"action number", `{"Statement":{"Effect":"Allow","Principal":"*","Action":7}}`, "neither a string"},
		{"resource not arn", `{"Statement":{` + ok + `,"Resource":"queue1"}}`, "not an ARN"},
		{"unknown statement element", `{"Statement":{` + ok + `,"Effects":"Allow"}}`, "unknown element"},
		{"unknown operator", `{"Statement":{` + ok + `,"Condition":{"StringMatches":{"aws:SourceArn":"x"}}}}`, "unknown condition operator"},
		{"bad cidr", `{"Statement":{` + ok + `,"Condition":{"IpAddress":{"aws:SourceIp":"300.0.0.0/8"}}}}`, "value"},
		{"bad number", `{"Statement":{` + ok + `,"Condition":{"NumericEquals":{"aws:EpochTime":"soon"}}}}`, "value"},
		{"bad date", `{"Statement":{` + ok + `,"Condition":{"DateLessThan":{"aws:CurrentTime":"tomorrow"}}}}`, "value"},
		{"condition object value", `{"Statement":{` + ok + `,"Condition":{"StringEquals":{"aws:SourceArn":{"a":1}}}}}`, "neither a string"},
		{"null ifexists", `{"Statement":{` + ok + `,"Condition":{"NullIfExists":{"aws:SourceIp":"true"}}}}`, "condition operator"},
		{"repeated sid", `{"Statement":[{"Sid":"a",` + ok + `},{"Sid":"a",` + ok + `}]}`, "repeated"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.doc)
			var perr *Error
			if !errors.As(err, &perr) {
				t.Fatalf("Parse = %v, want a policy error", err)
			}
			if !strings.Contains(perr.Reason, tt.reason) {
				t.Errorf("reason %q, want it to say %q", perr.Reason, tt.reason)
			}
		})
	}
}
