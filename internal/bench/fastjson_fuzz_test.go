package bench

import (
	"encoding/json"
	"testing"
)

// FuzzParseAnswers feeds the fast client's answer parsers any bytes: they
// must never panic, must accept only valid JSON, and what parseReceive
// reads must be what encoding/json reads from the same document.
func FuzzParseAnswers(f *testing.F) {
	for _, s := range []string{
		`{}`,
		`{"Messages":[{"MessageId":"1","ReceiptHandle":"r\/1","MD5OfBody":"m","Body":"a\"b\u00e9","Attributes":{"X":"1"}}]}`,
		`{"Successful":[{"Id":"0","MessageId":"m","MD5OfMessageBody":"abc"}],"Failed":[{"Id":"1","SenderFault":true,"Code":"C","Message":"M"}]}`,
		`{"MD5OfMessageBody":"abc","MessageId":"1"}`,
		`{"__type":"com.amazonaws.sqs#QueueDoesNotExist","message":"gone"}`,
		`{"X":[1,-2.5e3,true,false,null,{"y":[]}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		msgs, rerr := parseReceive(b, nil)
		_, berr := parseBatch(b, nil)
		_, serr := parseSend(b)
		_ = parseError(400, b)
		for _, err := range []error{rerr, berr, serr} {
			if err == nil && !json.Valid(b) {
				t.Fatalf("accepted invalid JSON %q", b)
			}
		}
		if rerr != nil {
			return
		}
		// Members by their exact names (encoding/json would match a
		// struct's fields without regard to case; AWS's SDKs do not).
		var top map[string]json.RawMessage
		var doc struct{ Messages []map[string]any }
		if err := json.Unmarshal(b, &top); err != nil {
			t.Fatalf("%q: parsed, but encoding/json says %v", b, err)
		}
		if raw, ok := top["Messages"]; ok {
			if err := json.Unmarshal(raw, &doc.Messages); err != nil {
				t.Fatalf("%q: parsed, but encoding/json says %v", b, err)
			}
		}
		if len(doc.Messages) != len(msgs) {
			t.Fatalf("%q: %d messages, encoding/json reads %d", b, len(msgs), len(doc.Messages))
		}
		for i, m := range msgs {
			var receipt string
			if err := json.Unmarshal([]byte(`"`+string(m.receipt)+`"`), &receipt); err != nil {
				t.Fatalf("%q: receipt %q is no string's contents: %v", b, m.receipt, err)
			}
			want := doc.Messages[i]
			if want["Body"] != string(m.body) || want["MD5OfBody"] != string(m.md5) || want["ReceiptHandle"] != receipt {
				t.Fatalf("%q: message %d read as %q %q %q, encoding/json reads %v", b, i, m.body, m.md5, receipt, want)
			}
		}
	})
}
