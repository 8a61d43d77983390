package sqs

import (
	"strings"
	"testing"
)

func TestParseQueueRef(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ref                   string
		account, name, region string
		ok                    bool
	}{
		{"https://sqs.us-east-1.amazonaws.com/123456789012/orders", "123456789012", "orders", "us-east-1", true},
		{"http://localhost:4566/000000000000/q-1", "000000000000", "q-1", "", true},
		{"https://eu-west-1.queue.amazonaws.com/123456789012/q", "123456789012", "q", "eu-west-1", true},
		{"https://queue.amazonaws.com/123456789012/q", "123456789012", "q", "", true},
		{"http://sqs.ap-south-2.localhost.localstack.cloud:4566/000000000000/q", "000000000000", "q", "ap-south-2", true},
		{"http://eu-west-3.queue.localhost.localstack.cloud:4566/000000000000/q", "000000000000", "q", "eu-west-3", true},
		{"http://sqs.localhost:4566/000000000000/q", "000000000000", "q", "", true},
		{"http://localhost:4566/queue/us-west-2/123456789012/q", "123456789012", "q", "us-west-2", true},
		{"http://localhost:4566/queue/nowhere/123456789012/q", "123456789012", "q", "", true},
		{"/queue/eu-north-1/123456789012/q", "123456789012", "q", "eu-north-1", true},
		{"http://localhost:4566/123456789012/q/", "123456789012", "q", "", true},
		{"http://localhost:4566/123456789012/q?Action=x", "123456789012", "q", "", true},
		{"/123456789012/q", "123456789012", "q", "", true},
		{"orders", "", "orders", "", true},
		{"http://localhost:4566/q", "", "", "", false},
		{"http://localhost:4566", "", "", "", false},
		{"http://localhost:4566/", "", "", "", false},
		{"/", "", "", "", false},
		{"", "", "", "", false},
		{"//", "", "", "", false},
		{"://", "", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			account, name, reg, ok := parseQueueRef(tt.ref)
			if account != tt.account || name != tt.name || reg != tt.region || ok != tt.ok {
				t.Errorf("parseQueueRef(%q) = %q, %q, %q, %v; want %q, %q, %q, %v", tt.ref, account, name, reg, ok, tt.account, tt.name, tt.region, tt.ok)
			}
		})
	}
}

func TestQueueNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		standard, fifo bool
	}{
		{"a", true, false},
		{"Orders_2-x", true, false},
		{strings.Repeat("a", 80), true, false},
		{strings.Repeat("a", 81), false, false},
		{"", false, false},
		{"a.fifo", false, true},
		{strings.Repeat("a", 75) + ".fifo", false, true},
		{strings.Repeat("a", 76) + ".fifo", false, false},
		{".fifo", false, false},
		{"a b", false, false},
		{"a/b", false, false},
		{"ä", false, false},
	}
	for _, tt := range tests {
		if got := validQueueName(tt.name); got != tt.standard {
			t.Errorf("validQueueName(%q) = %v", tt.name, got)
		}
		if got := validFifoQueueName(tt.name); got != tt.fifo {
			t.Errorf("validFifoQueueName(%q) = %v", tt.name, got)
		}
	}
}

func TestIsPunctID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id string
		ok bool
	}{
		{"group-1", true},
		{`!"#$%&'()*+,-./:;<=>?@[\]^_` + "`{|}~", true},
		{strings.Repeat("a", 128), true},
		{strings.Repeat("a", 129), false},
		{"", false},
		{"group 123", false},
		{"tab\t", false},
		{"é", false},
	}
	for _, tt := range tests {
		if got := isPunctID(tt.id); got != tt.ok {
			t.Errorf("isPunctID(%q) = %v, want %v", tt.id, got, tt.ok)
		}
	}
}

func TestQueueARN(t *testing.T) {
	t.Parallel()
	if got, want := queueARN("eu-west-1", "123456789012", "q"), "arn:aws:sqs:eu-west-1:123456789012:q"; got != want {
		t.Errorf("queueARN = %q, want %q", got, want)
	}
}
