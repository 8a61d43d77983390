package policy

import "testing"

// BenchmarkAuthorize: one cross-account request decided under a policy of
// two statements with conditions, as SQS decides each request of another
// account (the parsed policy is cached by the service).
func BenchmarkAuthorize(b *testing.B) {
	p, err := Parse(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::222222222222:root"},"Action":["sqs:SendMessage","sqs:Receive*"],"Resource":"` + queueARN + `","Condition":{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}},{"Effect":"Deny","Principal":"*","Action":"sqs:*","Condition":{"Bool":{"aws:SecureTransport":"false"}}}]}`)
	if err != nil {
		b.Fatal(err)
	}
	r := caller(other, "sqs:SendMessage", "10.1.2.3", true)
	b.ReportAllocs()
	for b.Loop() {
		if !Authorize(p, r, owner) {
			b.Fatal("denied")
		}
	}
}

// BenchmarkParse: the same policy parsed, as when it is set.
func BenchmarkParse(b *testing.B) {
	doc := acceptedDocs["sns default"]
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(doc); err != nil {
			b.Fatal(err)
		}
	}
}
