package metrics

import "github.com/ferrymq/ferry/internal/engine"

// MessageSize is a message's body plus its attributes' names, types and
// values: the bytes SentMessageSize counts, whoever sent the message (an
// SQS send or an SNS delivery).
func MessageSize(m *engine.NewMessage) int {
	n := len(m.Body)
	for i := range m.Attributes {
		a := &m.Attributes[i]
		n += len(a.Name) + len(a.DataType) + len(a.StringValue) + len(a.BinaryValue)
	}
	return n
}
