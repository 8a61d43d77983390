package policy

import (
	"testing"
	"time"
)

// FuzzParse: no document panics the parser or the evaluator, and a
// document that parses evaluates to one decision, the same every time.
func FuzzParse(f *testing.F) {
	for _, doc := range acceptedDocs {
		f.Add(doc, "222222222222", "sqs:SendMessage")
	}
	f.Fuzz(func(t *testing.T, doc, account, action string) {
		p, err := Parse(doc)
		if err != nil {
			if p != nil {
				t.Fatalf("Parse returned a policy with error %v", err)
			}
			return
		}
		r := &Request{Account: account, Action: action, Resource: "arn:aws:sqs:us-east-1:111111111111:q",
			Context: CallerContext(account, "aws", "10.0.0.1", false, time.Unix(0, 0))}
		d := p.Evaluate(r)
		if d != p.Evaluate(r) {
			t.Fatal("two decisions for one request")
		}
		if Authorize(p, r, "111111111111") != (d == Allowed || d == NotApplicable && account == "111111111111") {
			t.Fatalf("Authorize disagrees with Evaluate %v", d)
		}
		MaySNSSend(p, "arn:aws:sns:us-east-1:"+account+":t", account, "arn:aws:sqs:us-east-1:111111111111:q", "111111111111", time.Unix(0, 0))
	})
}
