package sns

import (
	"context"
	"testing"
)

// newPlatformEndpoint makes a GCM application and an endpoint of it on s,
// enabled or not, and returns the endpoint's ARN.
func newPlatformEndpoint(t *testing.T, s *Service, enabled string) string {
	t.Helper()
	ctx := context.Background()
	app, err := s.createPlatformApplication(ctx, &platformAttrsInput{Name: "app", Platform: "GCM",
		Attributes: map[string]string{"PlatformCredential": "key"}})
	if err != nil {
		t.Fatal(err)
	}
	ep, err := s.createPlatformEndpoint(ctx, &createEndpointInput{PlatformApplicationArn: app.PlatformApplicationArn,
		Token: "device-" + enabled, Attributes: map[string]string{"Enabled": enabled}})
	if err != nil {
		t.Fatal(err)
	}
	return ep.EndpointArn
}

// TestPublishToEndpointChecksTheEndpointFirst: AWS answers a publish to a
// platform endpoint from the endpoint before it reads the message, so a
// disabled endpoint is EndpointDisabled whatever the body.
func TestPublishToEndpointChecksTheEndpointFirst(t *testing.T) {
	t.Parallel()
	nodes, _ := newNodes(t, 1)
	s := nodes[0]
	ctx := context.Background()
	disabled := newPlatformEndpoint(t, s, "false")
	enabled := newPlatformEndpoint(t, s, "true")
	missing := enabled[:len(enabled)-4] + "0000"
	for _, tt := range []struct {
		name, target, structure, message string
		code, text                       string
	}{
		{"disabled, body no JSON", disabled, "json", "msg", "EndpointDisabled", "Endpoint is disabled"},
		{"disabled, no default entry", disabled, "json", `{"GCM":"x"}`, "EndpointDisabled", "Endpoint is disabled"},
		{"disabled, empty message", disabled, "", "", "EndpointDisabled", "Endpoint is disabled"},
		{"disabled, good message", disabled, "", "m", "EndpointDisabled", "Endpoint is disabled"},
		{"missing, body no JSON", missing, "json", "msg", "InvalidParameter", "Invalid parameter: TargetArn Reason: No endpoint found for the target arn specified"},
		{"enabled, body no JSON", enabled, "json", "msg", "InvalidParameter", "Invalid parameter: Message Structure - JSON message body failed to parse"},
		{"enabled, empty message", enabled, "", "", "InvalidParameter", "Invalid parameter: Empty message"},
		{"enabled, good structure", enabled, "json", `{"default":"d","GCM":"to gcm"}`, "", ""},
	} {
		_, err := s.publish(ctx, &publishInput{TargetArn: tt.target, MessageStructure: tt.structure, Message: tt.message})
		wantErr(t, tt.name, err, tt.code, tt.text)
	}
	ds := s.Deliveries("application")
	if len(ds) != 1 || ds[0].Endpoint != enabled || ds[0].Message != "to gcm" {
		t.Errorf("deliveries = %+v, want the one good publish", ds)
	}
}

// TestSubscribePlatformEndpoint: an application subscription needs an
// endpoint that exists; a deleted one is refused in AWS's words.
func TestSubscribePlatformEndpoint(t *testing.T) {
	t.Parallel()
	nodes, _ := newNodes(t, 1)
	s := nodes[0]
	ctx := context.Background()
	topic, err := s.createTopic(ctx, &createTopicInput{Name: "push"})
	if err != nil {
		t.Fatal(err)
	}
	ep := newPlatformEndpoint(t, s, "true")
	gone := newPlatformEndpoint(t, s, "false")
	if _, err := s.deleteEndpoint(ctx, &endpointArnInput{EndpointArn: gone}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, endpoint string
		code, text     string
	}{
		{"existing endpoint", ep, "", ""},
		{"deleted endpoint", gone, "InvalidParameter", "Invalid parameter: Endpoint Reason: Endpoint does not exist for endpoint arn" + gone},
		{"never made", ep + "0", "InvalidParameter", "Invalid parameter: Endpoint Reason: Endpoint does not exist for endpoint arn" + ep + "0"},
		{"not an SNS ARN", "arn:aws:sqs:us-east-1:000000000000:q", "InvalidParameter", "Invalid parameter: ApplicationEndpoint ARN"},
	} {
		out, err := s.subscribe(ctx, &subscribeInput{TopicArn: topic.TopicArn, Protocol: "application", Endpoint: tt.endpoint})
		wantErr(t, tt.name, err, tt.code, tt.text)
		if err == nil && out.SubscriptionArn == "pending confirmation" {
			t.Errorf("%s: an application subscription waits for confirmation", tt.name)
		}
	}
}
