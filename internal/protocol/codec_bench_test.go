package protocol

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
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
