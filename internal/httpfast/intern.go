package httpfast

import (
	"net/http"
	"sync/atomic"
	"time"
)

// Header names and values that the SDKs send on every request, so that
// the common ones cost no allocation.
var (
	commonKeys   = map[string]string{}
	commonValues = map[string]string{}
)

func init() {
	for _, k := range []string{"Accept", "Accept-Encoding", "Amz-Sdk-Invocation-Id", "Amz-Sdk-Request", "Authorization",
		"Cache-Control", "Connection", "Content-Encoding", "Content-Length", "Content-Type", "Cookie", "Origin", "Pragma",
		"Referer", "Smithy-Protocol", "User-Agent", "X-Amz-Content-Sha256", "X-Amz-Date", "X-Amz-Security-Token",
		"X-Amz-Target", "X-Amz-Query-Mode", "X-Amz-User-Agent", "X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host"} {
		commonKeys[k] = k
	}
	for _, v := range []string{"application/x-amz-json-1.0", "application/x-www-form-urlencoded; charset=utf-8",
		"application/x-www-form-urlencoded", "application/json", "text/xml", "gzip", "identity", "keep-alive", "close",
		"*/*", "true", "rpc-v2-cbor", "application/cbor", "attempt=1; max=3", "attempt=1", "no-cache",
		"AmazonSQS.SendMessage", "AmazonSQS.SendMessageBatch", "AmazonSQS.ReceiveMessage", "AmazonSQS.DeleteMessage",
		"AmazonSQS.DeleteMessageBatch", "AmazonSQS.ChangeMessageVisibility", "AmazonSQS.ChangeMessageVisibilityBatch",
		"AmazonSQS.GetQueueUrl", "AmazonSQS.GetQueueAttributes", "AmazonSQS.CreateQueue", "AmazonSQS.ListQueues"} {
		commonValues[v] = v
	}
}

// canonicalKey is name in net/http's canonical form.
func canonicalKey(name []byte) string {
	if k, ok := commonKeys[string(name)]; ok {
		return k
	}
	return http.CanonicalHeaderKey(string(name))
}

// internValue is v as a string, shared when it is a common one.
func internValue(v []byte) string {
	if s, ok := commonValues[string(v)]; ok {
		return s
	}
	return string(v)
}

// date is the Date header's value of the current second.
type date struct {
	unix int64
	text []byte
}

// dateCache holds the Date of the current second, formatted once.
type dateCache struct{ last atomic.Pointer[date] }

// appendDate appends the current time as net/http's Date header has it.
func (dc *dateCache) appendDate(dst []byte) []byte {
	now := time.Now()
	d := dc.last.Load()
	if d == nil || d.unix != now.Unix() {
		d = &date{unix: now.Unix(), text: now.UTC().AppendFormat(nil, http.TimeFormat)}
		dc.last.Store(d)
	}
	return append(dst, d.text...)
}
