package sns

import (
	"encoding/json"
	"testing"
	"time"
)

// TestSubscriptionRecordForm: a subscription is stored in the form earlier
// versions wrote (its grouped fields flattened), and reads back whole.
func TestSubscriptionRecordForm(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	full := &subscription{ARN: "arn:aws:sns:us-east-1:000000000000:t:id", TopicARN: "arn:aws:sns:us-east-1:000000000000:t", Protocol: "https",
		Endpoint: "https://example.com/", Owner: "000000000000", Attrs: map[string]string{"RawMessageDelivery": "true"},
		Queue: "id-00", Created: at.Add(-time.Hour)}
	full.Pending, full.Authenticated, full.AuthOnUnsubscribe, full.Token, full.TokenIssued = true, true, true, "tok", at
	full.Deleted, full.DeletedAt = true, at.Add(time.Hour)
	for _, tc := range []struct {
		sub  *subscription
		want string
	}{
		{full, `{"arn":"arn:aws:sns:us-east-1:000000000000:t:id","topicArn":"arn:aws:sns:us-east-1:000000000000:t","protocol":"https",` +
			`"endpoint":"https://example.com/","owner":"000000000000","attrs":{"RawMessageDelivery":"true"},"pending":true,` +
			`"authenticated":true,"authOnUnsubscribe":true,"token":"tok","tokenIssued":"2026-03-04T05:06:07Z","queue":"id-00",` +
			`"deleted":true,"deletedAt":"2026-03-04T06:06:07Z","created":"2026-03-04T04:06:07Z"}`},
		{&subscription{ARN: "a", Created: at}, `{"arn":"a","topicArn":"","protocol":"","endpoint":"","owner":"",` +
			`"tokenIssued":"0001-01-01T00:00:00Z","deletedAt":"0001-01-01T00:00:00Z","created":"2026-03-04T05:06:07Z"}`},
	} {
		b, err := json.Marshal(tc.sub)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("stored as\n%s\nwant\n%s", b, tc.want)
		}
		back := &subscription{}
		if err := json.Unmarshal([]byte(tc.want), back); err != nil {
			t.Fatal(err)
		}
		if again, _ := json.Marshal(back); string(again) != tc.want {
			t.Errorf("read back as\n%s", again)
		}
	}
}
