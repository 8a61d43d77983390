package sqs

import (
	"net/http"
	"testing"
)

func TestErrorByCode(t *testing.T) {
	cases := []struct {
		code, shape, query string
		status             int
	}{
		{"RequestThrottled", "RequestThrottled", "RequestThrottled", http.StatusForbidden},
		{"QueueDoesNotExist", "QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue", http.StatusBadRequest},
		{"AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue", http.StatusBadRequest},
		{"KmsThrottled", "KmsThrottled", "KMS.ThrottlingException", http.StatusBadRequest},
		{"KMS.OptInRequired", "KmsOptInRequired", "KMS.OptInRequired", http.StatusForbidden},
		{"InvalidAddress", "InvalidAddress", "InvalidAddress", http.StatusNotFound},
		{"AccessDeniedException", "AccessDenied", "AccessDenied", http.StatusForbidden},
		{"ServiceUnavailable", "ServiceUnavailable", "ServiceUnavailable", http.StatusServiceUnavailable},
		{"InternalFailure", "InternalFailure", "InternalFailure", http.StatusInternalServerError},
		{"OverLimit", "OverLimit", "OverLimit", http.StatusForbidden},
	}
	for _, tc := range cases {
		e, ok := ErrorByCode(tc.code)
		if !ok || e.Shape != tc.shape || e.Code != tc.query || e.Status != tc.status {
			t.Errorf("ErrorByCode(%q) = %+v, %v", tc.code, e, ok)
		}
	}
	for _, code := range []string{"", "Throttling", "ThrottlingException", "requestthrottled"} {
		if e, ok := ErrorByCode(code); ok {
			t.Errorf("ErrorByCode(%q) = %+v", code, e)
		}
	}
	for _, e := range catalogue {
		if e.Shape == "" || e.Code == "" || e.Status == 0 {
			t.Errorf("catalogue entry without shape, code or status: %+v", e)
		}
	}
}

func TestParseQueueURL(t *testing.T) {
	cases := []struct {
		url, account, name, region string
		ok                         bool
	}{
		{"http://localhost:4566/000000000000/orders", "000000000000", "orders", "", true},
		{"https://sqs.eu-west-1.amazonaws.com/111111111111/q.fifo", "111111111111", "q.fifo", "eu-west-1", true},
		{"http://localhost:4566/queue/us-west-2/000000000000/q", "000000000000", "q", "us-west-2", true},
		{"http://localhost:4566/000000000000/bad name", "", "", "", false},
		{"http://localhost:4566/", "", "", "", false},
	}
	for _, tc := range cases {
		a, n, r, ok := ParseQueueURL(tc.url)
		if ok != tc.ok || ok && (a != tc.account || n != tc.name || r != tc.region) {
			t.Errorf("ParseQueueURL(%q) = %q %q %q %v", tc.url, a, n, r, ok)
		}
	}
}
