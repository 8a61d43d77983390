package topology

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// goodYAML uses every kind of entry and value the format has.
const goodYAML = `account: "123456789012"
region: eu-west-1
queues:
  - name: orders
    attributes:
      VisibilityTimeout: 60
      DelaySeconds: "5"
      SqsManagedSseEnabled: false
      RedrivePolicy:
        deadLetterTargetArn: orders-dlq
        maxReceiveCount: 5
    tags:
      team: shop
      tier: 1
  - name: orders-dlq
    attributes:
      RedriveAllowPolicy: '{"redrivePermission":"allowAll"}'
topics:
  - name: events
    attributes:
      DisplayName: Events
    subscriptions:
      - protocol: sqs
        endpoint: orders
        attributes:
          RawMessageDelivery: true
          FilterPolicy:
            type: [order, "refund"]
            amount: [{numeric: [">", 100]}]
alarms:
  - AlarmName: backlog
    Namespace: AWS/SQS
    MetricName: ApproximateNumberOfMessagesVisible
    Dimensions:
      - {Name: QueueName, Value: orders}
    Statistic: Maximum
    Period: 60
    EvaluationPeriods: 2
    Threshold: 99.5
    ComparisonOperator: GreaterThanThreshold
    ActionsEnabled: false
    Tags:
      - {Key: team, Value: shop}
`

// goodJSON is goodYAML as JSON.
const goodJSON = `{
  "account": "123456789012",
  "region": "eu-west-1",
  "queues": [
    {"name": "orders",
     "attributes": {"VisibilityTimeout": 60, "DelaySeconds": "5", "SqsManagedSseEnabled": false,
                    "RedrivePolicy": {"deadLetterTargetArn": "orders-dlq", "maxReceiveCount": 5}},
     "tags": {"team": "shop", "tier": 1}},
    {"name": "orders-dlq", "attributes": {"RedriveAllowPolicy": "{\"redrivePermission\":\"allowAll\"}"}}
  ],
  "topics": [
    {"name": "events", "attributes": {"DisplayName": "Events"},
     "subscriptions": [{"protocol": "sqs", "endpoint": "orders",
       "attributes": {"RawMessageDelivery": true,
                      "FilterPolicy": {"type": ["order", "refund"], "amount": [{"numeric": [">", 100]}]}}}]}
  ],
  "alarms": [
    {"AlarmName": "backlog", "Namespace": "AWS/SQS", "MetricName": "ApproximateNumberOfMessagesVisible",
     "Dimensions": [{"Name": "QueueName", "Value": "orders"}], "Statistic": "Maximum", "Period": 60,
     "EvaluationPeriods": 2, "Threshold": 99.5, "ComparisonOperator": "GreaterThanThreshold",
     "ActionsEnabled": false, "Tags": [{"Key": "team", "Value": "shop"}]}
  ]
}
`

// stripPos clears the places, so that the same document read from YAML
// and from JSON compares equal.
func stripPos(t *Topology) *Topology {
	c := *t
	c.Pos = Pos{}
	strip := func(a Attributes) Attributes {
		if a == nil {
			return nil
		}
		out := Attributes{}
		for k, v := range a {
			out[k] = Value{Text: v.Text}
		}
		return out
	}
	c.Queues = append([]Queue(nil), t.Queues...)
	for i := range c.Queues {
		c.Queues[i].Pos, c.Queues[i].Attributes = Pos{}, strip(c.Queues[i].Attributes)
	}
	c.Topics = append([]Topic(nil), t.Topics...)
	for i := range c.Topics {
		tp := &c.Topics[i]
		tp.Pos, tp.Attributes = Pos{}, strip(tp.Attributes)
		tp.Subscriptions = append([]Subscription(nil), tp.Subscriptions...)
		for j := range tp.Subscriptions {
			tp.Subscriptions[j].Pos, tp.Subscriptions[j].Attributes = Pos{}, strip(tp.Subscriptions[j].Attributes)
		}
	}
	c.Alarms = append([]Alarm(nil), t.Alarms...)
	for i := range c.Alarms {
		c.Alarms[i].Pos = Pos{}
	}
	return &c
}

func TestLoadGood(t *testing.T) {
	t.Parallel()
	y, err := Load("t.yaml", []byte(goodYAML))
	if err != nil {
		t.Fatal(err)
	}
	j, err := Load("t.json", []byte(goodJSON))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(stripPos(y), stripPos(j)) {
		t.Errorf("YAML and JSON differ:\n%+v\n%+v", stripPos(y), stripPos(j))
	}
	q := y.Queues[0]
	for name, want := range map[string]string{
		"VisibilityTimeout": "60", "DelaySeconds": "5", "SqsManagedSseEnabled": "false",
		"RedrivePolicy": `{"deadLetterTargetArn":"orders-dlq","maxReceiveCount":5}`,
	} {
		if got := q.Attributes[name].Text; got != want {
			t.Errorf("%s = %q; want %q", name, got, want)
		}
	}
	if q.Tags["tier"] != "1" || q.Pos != (Pos{File: "t.yaml", Line: 4, Column: 5}) {
		t.Errorf("queue = %+v", q)
	}
	if p := q.Attributes["VisibilityTimeout"].Pos; p != (Pos{File: "t.yaml", Line: 6, Column: 26}) {
		t.Errorf("VisibilityTimeout at %v", p)
	}
	if p := j.Queues[0].Attributes["VisibilityTimeout"].Pos; p != (Pos{File: "t.json", Line: 6, Column: 42}) {
		t.Errorf("JSON VisibilityTimeout at %v", p)
	}
	sub := y.Topics[0].Subscriptions[0]
	if got := sub.Attributes["FilterPolicy"].Text; got != `{"amount":[{"numeric":[">",100]}],"type":["order","refund"]}` {
		t.Errorf("FilterPolicy = %s", got)
	}
	a := y.Alarms[0]
	if a.Threshold == nil || *a.Threshold != 99.5 || a.Period == nil || *a.Period != 60 || a.ActionsEnabled == nil || *a.ActionsEnabled ||
		len(a.Dimensions) != 1 || a.Dimensions[0].Value != "orders" || len(a.Tags) != 1 {
		t.Errorf("alarm = %+v", a)
	}
	// Nothing at all is an empty topology.
	for _, empty := range []string{"", "# nothing yet\n", "  \n"} {
		if e, err := Load("e.yaml", []byte(empty)); err != nil || len(e.Queues)+len(e.Topics)+len(e.Alarms) != 0 {
			t.Errorf("Load(%q) = %+v, %v", empty, e, err)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, file, text string
		pos              string // file:line:column of the error
		msg              string // part of its message
	}{
		{"unknown top key", "a.yaml", "queue:\n  - name: x\n", "a.yaml:1:1", `unknown key "queue"; want one of account, region, queues, topics, alarms`},
		{"unknown queue key", "a.yaml", "queues:\n  - name: x\n    atributes: {}\n", "a.yaml:3:5", `queues[0]: unknown key "atributes"`},
		{"unknown attribute", "a.yaml", "queues:\n  - name: x\n    attributes:\n      Visibility: 3\n", "a.yaml:4:7", `queues[0].attributes: unknown attribute "Visibility"`},
		{"topic attribute on a queue", "a.yaml", "queues:\n  - name: x\n    attributes: {DisplayName: d}\n", "a.yaml:3:18", `unknown attribute "DisplayName"`},
		{"subscription attribute", "a.yaml", "topics:\n  - name: t\n    subscriptions:\n      - protocol: sqs\n        endpoint: arn:aws:sqs:us-east-1:000000000000:q\n        attributes: {Raw: true}\n", "a.yaml:6:22", `unknown attribute "Raw"`},
		{"list for a number", "a.yaml", "queues:\n  - name: x\n    attributes:\n      VisibilityTimeout: [1]\n", "a.yaml:4:26", "attribute VisibilityTimeout: want a text, not a list"},
		{"text for a number", "a.yaml", "alarms:\n  - AlarmName: a\n    Period: sixty\n", "a.yaml:3:13", `alarms[0].Period: want a whole number, not "sixty"`},
		{"number for a boolean", "a.yaml", "queues:\n  - name: x\n    attributes:\n      FifoQueue: 1\n", "a.yaml:4:18", "attribute FifoQueue: want true or false, not the number 1"},
		{"map for a name", "a.yaml", "queues:\n  - name: {a: b}\n", "a.yaml:2:11", "queues[0].name: want a text, not a map"},
		{"map for the queues", "a.yaml", "queues: {name: x}\n", "a.yaml:1:9", "queues: want a list, not a map"},
		{"key twice", "a.yaml", "queues:\n  - name: x\n    name: y\n", "a.yaml:3:5", `queues[0]: "name" appears twice`},
		{"missing name", "a.yaml", "queues:\n  - attributes: {DelaySeconds: 1}\n", "a.yaml:2:5", "queue: name is missing"},
		{"queue twice", "a.yaml", "queues:\n  - name: x\n  - name: x\n", "a.yaml:3:5", "queue x: named twice (first at a.yaml:2:5)"},
		{"dead-letter queue not in the file", "a.yaml", "queues:\n  - name: x\n    attributes:\n      RedrivePolicy: {deadLetterTargetArn: dlq, maxReceiveCount: 3}\n", "a.yaml:4:22", `no queue "dlq" in the file`},
		{"redrive cycle", "a.yaml", "queues:\n  - name: x\n    attributes: {RedrivePolicy: {deadLetterTargetArn: y, maxReceiveCount: 3}}\n  - name: y\n    attributes: {RedrivePolicy: {deadLetterTargetArn: x, maxReceiveCount: 3}}\n", "a.yaml:3:33", "redrive policies form a cycle"},
		{"endpoint not in the file", "a.yaml", "topics:\n  - name: t\n    subscriptions:\n      - {protocol: sqs, endpoint: nowhere}\n", "a.yaml:4:9", `no queue "nowhere"`},
		{"subscription without endpoint", "a.yaml", "topics:\n  - name: t\n    subscriptions:\n      - {protocol: sqs}\n", "a.yaml:4:9", "protocol and endpoint are required"},
		{"alarm without name", "a.yaml", "alarms:\n  - Namespace: AWS/SQS\n", "a.yaml:2:5", "AlarmName is missing"},
		{"bad account", "a.yaml", "account: 12\n", "a.yaml:1:1", "want 12 digits"},
		{"bad region", "a.yaml", "region: moon-1\n", "a.yaml:1:1", "not a region"},
		{"YAML syntax", "a.yaml", "queues:\n\t- name: x\n", "a.yaml:2", "found character that cannot start any token"},
		{"two documents", "a.yaml", "queues: []\n---\nqueues: []\n", "a.yaml:2:1", "a second document"},
		{"JSON syntax", "a.json", "{\n  \"queues\": [\n    {\"name\": \"x\"}\n  \n}\n", "a.json:5:1", "bad JSON: invalid character '}'"},
		{"JSON cut short", "a.json", "{\"queues\": [", "a.json:1:13", "unexpected end"},
		{"JSON unknown key", "a.json", "{\n  \"queues\": [\n    {\"name\": \"x\", \"tag\": {}}\n  ]\n}\n", "a.json:3:19", `unknown key "tag"`},
		{"JSON wrong type", "a.json", "{\"alarms\": [{\"AlarmName\": \"a\",\n \"Threshold\": \"high\"}]}", "a.json:2:15", `alarms[0].Threshold: want a number, not "high"`},
		{"JSON key twice", "a.json", "{\"queues\": [{\"name\": \"x\",\n \"name\": \"y\"}]}", "a.json:2:2", `queues[0]: "name" appears twice`},
		{"JSON text after", "a.json", "{}\n{}", "a.json:2:1", "text after the document"},
		{"JSON detected by content", "a.conf", "{\"queue\": []}", "a.conf:1:2", `unknown key "queue"`},
	} {
		_, err := Load(tt.file, []byte(tt.text))
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%s: error %v; want an *Error", tt.name, err)
			continue
		}
		if !strings.HasPrefix(err.Error(), tt.pos+": ") || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: error %q; want %s: ...%s...", tt.name, err, tt.pos, tt.msg)
		}
	}
}

// TestEncodeLoads writes a topology in both formats and reads it back.
func TestEncodeLoads(t *testing.T) {
	t.Parallel()
	want, err := Load("t.yaml", []byte(goodYAML))
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{FormatYAML, FormatJSON} {
		b, err := Encode(want, format)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Load("out."+format, b)
		if err != nil {
			t.Fatalf("%s: %v\n%s", format, err, b)
		}
		if !reflect.DeepEqual(stripPos(got), stripPos(want)) {
			t.Errorf("%s round trip:\n%s\n got %+v\nwant %+v", format, b, stripPos(got), stripPos(want))
		}
		again, err := Encode(got, format)
		if err != nil || string(again) != string(b) {
			t.Errorf("%s: encoding again differs (%v):\n%s\n%s", format, err, b, again)
		}
	}
	// Numbers, booleans and policies are written as their types.
	b, _ := Encode(want, FormatYAML)
	for _, line := range []string{"VisibilityTimeout: 60", "DelaySeconds: 5", "SqsManagedSseEnabled: false", "maxReceiveCount: 5", "RawMessageDelivery: true", "Threshold: 99.5", "tier: \"1\""} {
		if !strings.Contains(string(b), line) {
			t.Errorf("no %q in\n%s", line, b)
		}
	}
	if _, err := Encode(want, "toml"); err == nil {
		t.Error("Encode toml: no error")
	}
}

func TestSame(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		current, want string
		k             kind
		same          bool
	}{
		{"30", "30", kindInt, true},
		{"30", "030", kindInt, true},
		{"30", "31", kindInt, false},
		{"true", "True", kindBool, true},
		{"true", "false", kindBool, false},
		{`{"a":1,"b":"x"}`, `{ "b": "x", "a": 1 }`, kindJSON, true},
		{`{"maxReceiveCount":"5"}`, `{"maxReceiveCount":5}`, kindJSON, true},
		{`{"maxReceiveCount":"5"}`, `{"maxReceiveCount":6}`, kindJSON, false},
		{`{"a":[1,2]}`, `{"a":[2,1]}`, kindJSON, false},
		{"", "{}", kindJSON, false},
		{"Events", "events", kindString, false},
	} {
		if got := same(tt.current, tt.want, tt.k); got != tt.same {
			t.Errorf("same(%q, %q) = %v", tt.current, tt.want, got)
		}
	}
}

func TestQueueOrder(t *testing.T) {
	t.Parallel()
	top, err := Load("o.yaml", []byte(`queues:
  - name: a
    attributes: {RedrivePolicy: {deadLetterTargetArn: b, maxReceiveCount: 1}}
  - name: c
  - name: b
    attributes: {RedrivePolicy: {deadLetterTargetArn: "arn:aws:sqs:us-east-1:000000000000:d", maxReceiveCount: 1}}
  - name: d
`))
	if err != nil {
		t.Fatal(err)
	}
	order, err := queueOrder(top.Queues)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, q := range order {
		names = append(names, q.Name)
	}
	if got := strings.Join(names, " "); got != "d b a c" {
		t.Errorf("order %s; want d b a c", got)
	}
}
