package sqs

import (
	"maps"
	"net/http"
	"strings"
	"testing"
)

func TestTags(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := must[CreateQueueOutput](h, "CreateQueue", &CreateQueueInput{QueueName: "q", Tags: map[string]string{"team": "a"}}).QueueUrl
	list := func() map[string]string {
		return must[ListQueueTagsOutput](h, "ListQueueTags", &QueueInput{QueueUrl: url}).Tags
	}
	if got := list(); !maps.Equal(got, map[string]string{"team": "a"}) {
		t.Errorf("tags on create = %v", got)
	}
	must[EmptyOutput](h, "TagQueue", &TagQueueInput{QueueUrl: url, Tags: map[string]string{"tag1": "value1", "tag3": "", "team": "b"}})
	if got := list(); !maps.Equal(got, map[string]string{"tag1": "value1", "tag3": "", "team": "b"}) {
		t.Errorf("tags = %v", got)
	}
	must[EmptyOutput](h, "UntagQueue", &UntagQueueInput{QueueUrl: url, TagKeys: []string{"tag1", "tag3", "absent"}})
	if got := list(); !maps.Equal(got, map[string]string{"team": "b"}) {
		t.Errorf("tags = %v", got)
	}
	must[EmptyOutput](h, "UntagQueue", &UntagQueueInput{QueueUrl: url, TagKeys: []string{"team"}})
	if got := list(); got != nil {
		t.Errorf("no tags must be omitted: %v", got)
	}

	tests := []struct {
		name    string
		tags    map[string]string
		message string
	}{
		{"none", nil, "The request must contain the parameter Tags."},
		{"empty key", map[string]string{"": "production"}, "Tag keys must be between 1 and 128 characters in length."},
		{"long key", map[string]string{strings.Repeat("k", 129): "v"}, "Tag keys must be between 1 and 128 characters in length."},
		{"long value", map[string]string{"k": strings.Repeat("v", 257)}, "Tag values must be between 0 and 256 characters in length."},
		{"reserved prefix", map[string]string{"AWS:x": "v"}, "Tag keys must not begin with the reserved prefix 'aws:'."},
		{"bad character", map[string]string{"k": "a*b"}, ""},
	}
	for _, tt := range tests {
		code := "InvalidParameterValue"
		if tt.tags == nil {
			code = "MissingParameter"
		}
		fails(h, "TagQueue", &TagQueueInput{QueueUrl: url, Tags: tt.tags}, code, tt.message)
	}
	must[EmptyOutput](h, "TagQueue", &TagQueueInput{QueueUrl: url, Tags: map[string]string{
		strings.Repeat("k", 128): strings.Repeat("v", 256), "ünï cödé": "a_b.c:d/e=f+g-h@i j"}})

	fifty := map[string]string{}
	for i := range 50 {
		fifty[strings.Repeat("t", i+1)] = "v"
	}
	fails(h, "TagQueue", &TagQueueInput{QueueUrl: url, Tags: fifty}, "InvalidParameterValue", "Too many tags added for queue q.")
	fifty["one-more"] = "v"
	fails(h, "CreateQueue", &CreateQueueInput{QueueName: "other", Tags: fifty}, "InvalidParameterValue", "Too many tags added for queue other.")
	fails(h, "UntagQueue", &UntagQueueInput{QueueUrl: url}, "InvalidParameterValue", "Tag keys must be between 1 and 128 characters in length.")
	fails(h, "ListQueueTags", &QueueInput{QueueUrl: "nope"}, "AWS.SimpleQueueService.NonExistentQueue", "")
	fails(h, "TagQueue", &TagQueueInput{QueueUrl: "nope", Tags: map[string]string{"a": "b"}}, "AWS.SimpleQueueService.NonExistentQueue", "")
}

func TestPermissions(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createQueue("q", nil)
	arn := "arn:aws:sqs:eu-west-1:123456789012:q"
	must[EmptyOutput](h, "AddPermission", &AddPermissionInput{QueueUrl: url, Label: "crossaccountpermission",
		AWSAccountIds: []string{"111111111111"}, Actions: []string{"SendMessage"}})
	want := `{"Version":"2008-10-17","Id":"` + arn + `/SQSDefaultPolicy","Statement":[{"Sid":"crossaccountpermission","Effect":"Allow",` +
		`"Principal":{"AWS":"arn:aws:iam::111111111111:root"},"Action":"SQS:SendMessage","Resource":"` + arn + `"}]}`
	if got := h.attributes(url, "Policy")["Policy"]; got != want {
		t.Errorf("policy =\n%s\nwant\n%s", got, want)
	}
	must[EmptyOutput](h, "AddPermission", &AddPermissionInput{QueueUrl: url, Label: "two",
		AWSAccountIds: []string{"111111111111", "222222222222"}, Actions: []string{"ReceiveMessage", "DeleteMessage"}})
	want2 := strings.TrimSuffix(want, "]}") + `,{"Sid":"two","Effect":"Allow","Principal":{"AWS":["arn:aws:iam::111111111111:root","arn:aws:iam::222222222222:root"]},` +
		`"Action":["SQS:ReceiveMessage","SQS:DeleteMessage"],"Resource":"` + arn + `"}]}`
	if got := h.attributes(url, "Policy")["Policy"]; got != want2 {
		t.Errorf("policy =\n%s\nwant\n%s", got, want2)
	}
	fails(h, "AddPermission", &AddPermissionInput{QueueUrl: url, Label: "two", AWSAccountIds: []string{"111111111111"}, Actions: []string{"*"}},
		"InvalidParameterValue", "Value two for parameter Label is invalid. Reason: Already exists.")

	must[EmptyOutput](h, "RemovePermission", &RemovePermissionInput{QueueUrl: url, Label: "crossaccountpermission"})
	fails(h, "RemovePermission", &RemovePermissionInput{QueueUrl: url, Label: "crossaccountpermission"},
		"InvalidParameterValue", "Value crossaccountpermission for parameter Label is invalid. Reason: can't find label.")
	must[EmptyOutput](h, "RemovePermission", &RemovePermissionInput{QueueUrl: url, Label: "two"})
	if got := h.attributes(url, "All"); got["Policy"] != "" {
		t.Errorf("the last statement's removal must remove Policy: %v", got)
	}

	tests := []struct {
		name    string
		in      AddPermissionInput
		code    string
		message string
	}{
		{"no label", AddPermissionInput{AWSAccountIds: []string{"111111111111"}, Actions: []string{"*"}}, "MissingParameter", "The request must contain the parameter Label."},
		{"no accounts", AddPermissionInput{Label: "l", Actions: []string{"*"}}, "MissingParameter", "The request must contain the parameter AWSAccountIds."},
		{"no actions", AddPermissionInput{Label: "l", AWSAccountIds: []string{"111111111111"}}, "MissingParameter", "The request must contain the parameter Actions."},
		{"bad label", AddPermissionInput{Label: "a b", AWSAccountIds: []string{"111111111111"}, Actions: []string{"*"}}, "InvalidParameterValue", ""},
		{"bad account", AddPermissionInput{Label: "l", AWSAccountIds: []string{"nobody"}, Actions: []string{"*"}}, "InvalidParameterValue",
			"Value [nobody] for parameter PrincipalId is invalid. Reason: Unable to verify."},
		{"unknown action", AddPermissionInput{Label: "l", AWSAccountIds: []string{"111111111111"}, Actions: []string{"Fly"}}, "InvalidParameterValue",
			"Value SQS:Fly for parameter ActionName is invalid. Reason: Please refer to the appropriate WSDL for a list of valid actions."},
		{"owner-only action", AddPermissionInput{Label: "l", AWSAccountIds: []string{"111111111111"}, Actions: []string{"DeleteQueue"}}, "InvalidParameterValue",
			"Value SQS:DeleteQueue for parameter ActionName is invalid. Reason: Only the queue owner is allowed to invoke this action."},
		{"eight actions", AddPermissionInput{Label: "l", AWSAccountIds: []string{"111111111111"}, Actions: []string{"*", "*", "*", "*", "*", "*", "*", "*"}}, "OverLimit",
			"8 Actions were found, maximum allowed is 7."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.QueueUrl = url
			err := fails(h, "AddPermission", &tt.in, tt.code, tt.message)
			if tt.code == "OverLimit" && err.Status != http.StatusForbidden {
				t.Errorf("status = %d", err.Status)
			}
		})
	}
	fails(h, "RemovePermission", &RemovePermissionInput{QueueUrl: url}, "MissingParameter", "The request must contain the parameter Label.")
}

// AddPermission keeps a policy set through SetQueueAttributes, even one
// whose Statement is a single object.
func TestAddPermissionExtendsAUserPolicy(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createQueue("q", map[string]string{"Policy": `{"Version":"2012-10-17","Statement":{"Sid":"mine","Effect":"Deny","Principal":"*","Action":"sqs:*","Resource":"*"}}`})
	must[EmptyOutput](h, "AddPermission", &AddPermissionInput{QueueUrl: url, Label: "l", AWSAccountIds: []string{"111111111111"}, Actions: []string{"*"}})
	got := h.attributes(url, "Policy")["Policy"]
	want := `{"Version":"2012-10-17","Statement":[{"Sid":"mine","Effect":"Deny","Principal":"*","Action":"sqs:*","Resource":"*"},` +
		`{"Sid":"l","Effect":"Allow","Principal":{"AWS":"arn:aws:iam::111111111111:root"},"Action":"SQS:*","Resource":"arn:aws:sqs:eu-west-1:123456789012:q"}]}`
	if got != want {
		t.Errorf("policy =\n%s\nwant\n%s", got, want)
	}
	must[EmptyOutput](h, "RemovePermission", &RemovePermissionInput{QueueUrl: url, Label: "mine"})
	must[EmptyOutput](h, "RemovePermission", &RemovePermissionInput{QueueUrl: url, Label: "l"})
	if got := h.attributes(url, "Policy"); got != nil {
		t.Errorf("policy left: %v", got)
	}
}
