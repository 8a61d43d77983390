package protocol

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// benchOutputs are the hot SQS answers: a SendMessageBatch of 10 and a
// ReceiveMessage of 10 × 256 bytes.
func benchOutputs() map[string]any {
	send := &sendBatchOutput{Failed: []batchErrorEntry{}}
	recv := &receiveOutput{}
	body := strings.Repeat("x", 256)
	for i := range 10 {
		send.Successful = append(send.Successful, sendBatchResultEntry{Id: fmt.Sprint(i),
			MessageId: "0f4c1c4e-6a7b-4d0e-9d43-5b8e1f0a2c3d", MD5OfMessageBody: "5e8ff9bf55ba3508199d22e984129be6"})
		recv.Messages = append(recv.Messages, message{MessageId: "0f4c1c4e-6a7b-4d0e-9d43-5b8e1f0a2c3d",
			ReceiptHandle: strings.Repeat("AQEB", 40), MD5OfBody: "5e8ff9bf55ba3508199d22e984129be6", Body: body})
	}
	return map[string]any{"SendMessageBatch": send, "ReceiveMessage": recv}
}

func BenchmarkEncode(b *testing.B) {
	svc := &Service{XMLNamespace: sqsNS}
	for _, name := range []string{"SendMessageBatch", "ReceiveMessage"} {
		out := benchOutputs()[name]
		var buf bytes.Buffer
		b.Run(name+"/json", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				buf.Reset()
				if err := encodeJSON(&buf, out); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(buf.Len()))
		})
		b.Run(name+"/json-plan", func(b *testing.B) {
			plans := &jsonPlans{}
			b.ReportAllocs()
			for b.Loop() {
				buf.Reset()
				if err := encodeJSONPlan(plans, &buf, out); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(buf.Len()))
		})
		b.Run(name+"/xml", func(b *testing.B) {
			pc := &planCache{}
			v := reflect.ValueOf(out).Elem()
			c, err := pc.plan(v.Type())
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				buf.Reset()
				encodeXMLResponse(&buf, svc, name, c, v, "6f0ae4c6-2f7d-5d35-9a3e-46d1b2d6d1c1")
			}
			b.SetBytes(int64(buf.Len()))
		})
	}
}

// BenchmarkDecodeCloudWatchJSON reads a GetMetricData as the SDKs send it
// on the AWS JSON wire (PutMetricData: BenchmarkJSONPlanDecodePutMetricData).
func BenchmarkDecodeCloudWatchJSON(b *testing.B) {
	body := []byte(`{"MetricDataQueries":[{"Id":"m1","MetricStat":{"Metric":{"Namespace":"AWS/SQS","MetricName":"NumberOfMessagesSent",` +
		`"Dimensions":[{"Name":"QueueName","Value":"jobs"}]},"Period":60,"Stat":"Sum"},"ReturnData":true}],` +
		`"StartTime":1767322800,"EndTime":1767326400,"MaxDatapoints":1000}`)
	typ := reflect.TypeFor[cwGetMetricDataInput]()
	h := &Handler{}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var in cwGetMetricDataInput
		if err := h.decodeJSONInput(typ, body, &in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeCloudWatchJSON writes a GetMetricData answer of 3 series
// of 60 points.
func BenchmarkEncodeCloudWatchJSON(b *testing.B) {
	out := &cwGetMetricDataOutput{}
	for i := range 3 {
		r := cwResult{Id: fmt.Sprint("m", i), Label: "NumberOfMessagesSent", StatusCode: "Complete"}
		for p := range 60 {
			r.Timestamps = append(r.Timestamps, time.Unix(1767322800+int64(p)*60, 0))
			r.Values = append(r.Values, float64(p)*1.5)
		}
		out.MetricDataResults = append(out.MetricDataResults, r)
	}
	h := &Handler{}
	a := Define("GetMetricData", func(_ context.Context, _ *cwGetMetricDataInput) (*cwGetMetricDataOutput, error) { return nil, nil })
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := h.encodeJSONOutput(&buf, a, out); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(buf.Len()))
}
