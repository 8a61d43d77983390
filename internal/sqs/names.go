package sqs

import (
	"strings"
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

// parseQueueRef reads the account and name a QueueUrl designates. SDKs send
// full URLs whose host may be anything (a legacy AWS host, a proxy), so only
// the last two path segments count; a bare name (no slash at all) means the
// caller's own account, and account is then empty. ok is false when the
// reference names no queue.
func parseQueueRef(ref string) (account, name string, ok bool) {
	if i := strings.IndexAny(ref, "?#"); i >= 0 {
		ref = ref[:i]
	}
	if _, after, found := strings.Cut(ref, "://"); found {
		_, path, hasPath := strings.Cut(after, "/") // drop the host
		if !hasPath {
			return "", "", false
		}
		ref = path // the Trim below drops any leading slash
	} else if !strings.Contains(ref, "/") {
		return "", ref, ref != ""
	}
	path := strings.Trim(ref, "/")
	last := strings.LastIndexByte(path, '/')
	if last < 0 {
		return "", "", false
	}
	name = path[last+1:]
	path = path[:last]
	account = path[strings.LastIndexByte(path, '/')+1:]
	return account, name, account != "" && name != ""
}
