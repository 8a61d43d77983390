package arn

import "testing"

func TestSplitAndParse(t *testing.T) {
	for _, tt := range []struct {
		in           string
		split, parse bool
		want         ARN
	}{
		{"arn:aws:sqs:us-east-1:000000000000:q", true, true, ARN{"aws", "sqs", "us-east-1", "000000000000", "q"}},
		{"arn:aws:lambda:us-east-1:1:function:fn:alias", true, true, ARN{"aws", "lambda", "us-east-1", "1", "function:fn:alias"}},
		{"arn:aws:iam::123456789012:role/r", true, true, ARN{"aws", "iam", "", "123456789012", "role/r"}},
		{"arn::sns:us-east-1:1:t", true, false, ARN{"", "sns", "us-east-1", "1", "t"}},
		{"arn:aws:sqs:us-east-1:1:", true, false, ARN{"aws", "sqs", "us-east-1", "1", ""}},
		{"arn:aws::us-east-1:1:q", true, false, ARN{"aws", "", "us-east-1", "1", "q"}},
		{"arn:aws:sqs:us-east-1:q", false, false, ARN{}},
		{"ARN:aws:sqs:us-east-1:1:q", false, false, ARN{}},
		{"arnx:aws:sqs:us-east-1:1:q", false, false, ARN{}},
		{"", false, false, ARN{}},
	} {
		a, ok := Split(tt.in)
		if ok != tt.split || a != tt.want {
			t.Errorf("Split(%q) = %+v, %v; want %+v, %v", tt.in, a, ok, tt.want, tt.split)
		}
		if ok && a.String() != tt.in {
			t.Errorf("Split(%q).String() = %q", tt.in, a.String())
		}
		if _, ok := Parse(tt.in); ok != tt.parse {
			t.Errorf("Parse(%q) ok = %v, want %v", tt.in, ok, tt.parse)
		}
	}
}

func TestSix(t *testing.T) {
	for in, want := range map[string]bool{
		"arn:aws:sns:us-east-1:1:t":   true,
		"arn:aws:sns:us-east-1:1:t:s": false,
	} {
		if a, _ := Split(in); a.Six() != want {
			t.Errorf("%s: Six() = %v", in, !want)
		}
	}
}

func TestPartition(t *testing.T) {
	for region, want := range map[string]string{"cn-north-1": "aws-cn", "us-gov-west-1": "aws-us-gov", "eu-west-1": "aws", "": "aws"} {
		if got := Partition(region); got != want {
			t.Errorf("Partition(%q) = %q, want %q", region, got, want)
		}
	}
}

func TestSplitAllocatesNothing(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { Split("arn:aws:sqs:us-east-1:000000000000:q") }); n != 0 {
		t.Errorf("Split allocates %v times", n)
	}
}
