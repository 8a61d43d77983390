package sqs

import (
	"strings"

	"github.com/ferrymq/ferry/internal/region"
)

const (
	maxQueueNameLen = 80
	fifoSuffix      = ".fifo"
)

// isNameChar reports whether c may appear in a queue name, a batch entry id
// or a permission label: [A-Za-z0-9_-].
func isNameChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

// validIdent reports whether s is 1..max characters of [A-Za-z0-9_-].
func validIdent(s string, max int) bool {
	if len(s) == 0 || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isNameChar(s[i]) {
			return false
		}
	}
	return true
}

// validQueueName applies the standard queue name rule.
func validQueueName(name string) bool { return validIdent(name, maxQueueNameLen) }

// validFifoQueueName applies the FIFO rule: the suffix counts toward the 80.
func validFifoQueueName(name string) bool {
	base, ok := strings.CutSuffix(name, fifoSuffix)
	return ok && len(name) <= maxQueueNameLen && validIdent(base, maxQueueNameLen)
}

// validAnyQueueName reports whether name can name a queue of either type.
func validAnyQueueName(name string) bool { return validQueueName(name) || validFifoQueueName(name) }

// isPunctID reports whether s is a valid MessageGroupId,
// MessageDeduplicationId or ReceiveRequestAttemptId: 1..128 ASCII
// alphanumerics and punctuation.
func isPunctID(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < '!' || c > '~' {
			return false
		}
	}
	return true
}

// queueARN is arn:aws:sqs:{region}:{account}:{name}.
func queueARN(region, account, name string) string {
	return "arn:aws:sqs:" + region + ":" + account + ":" + name
}

// parseQueueRef reads the account, name and region a QueueUrl
// designates. SDKs send full URLs whose host may be anything (a legacy AWS
// host, a proxy), so only the last two path segments name the queue; a
// bare name (no slash at all) means the caller's own account, and account
// is then empty. The region is the one the URL names, in the forms AWS
// and LocalStack hand out: the host sqs.REGION.… or REGION.queue.…, or the
// path /queue/REGION/ACCOUNT/NAME; empty when it names none, and the
// request's region applies. ok is false when the reference names no queue.
func parseQueueRef(ref string) (account, name, reg string, ok bool) {
	if i := strings.IndexAny(ref, "?#"); i >= 0 {
		ref = ref[:i]
	}
	if _, after, found := strings.Cut(ref, "://"); found {
		host, path, hasPath := strings.Cut(after, "/")
		if !hasPath {
			return "", "", "", false
		}
		reg = hostRegion(host)
		ref = path // the Trim below drops any leading slash
	} else if !strings.Contains(ref, "/") {
		return "", ref, "", ref != ""
	}
	path := strings.Trim(ref, "/")
	last := strings.LastIndexByte(path, '/')
	if last < 0 {
		return "", "", "", false
	}
	name = path[last+1:]
	path = path[:last]
	slash := strings.LastIndexByte(path, '/')
	account = path[slash+1:]
	if slash >= 0 {
		if p, r, ok := strings.Cut(path[:slash], "/"); ok && p == "queue" && region.Valid(r) {
			reg = r
		}
	}
	return account, name, reg, account != "" && name != ""
}

// hostRegion is the region a queue URL's host names: sqs.REGION.… (AWS's
// and LocalStack's standard form) or REGION.queue.… (LocalStack's domain
// form); "" for any other host.
func hostRegion(host string) string {
	first, rest, _ := strings.Cut(host, ".")
	if first == "sqs" {
		if r, _, _ := strings.Cut(rest, "."); region.Valid(r) {
			return r
		}
		return ""
	}
	if region.Valid(first) && strings.HasPrefix(rest, "queue.") {
		return first
	}
	return ""
}

// QueueARN is the ARN of account's queue called name in region.
func QueueARN(region, account, name string) string { return queueARN(region, account, name) }
