package console

import (
	"net/http"
	"strings"

	"github.com/ferrymq/ferry/internal/arn"
)

// purge empties a queue with PurgeQueue, once the caller typed its name.
func (c *Console) purge(w http.ResponseWriter, r *http.Request, a *access) {
	var in struct {
		Confirm string `json:"confirm"`
	}
	if err := decode(w, r, &in); err != nil {
		c.fail(w, r, err)
		return
	}
	name := r.PathValue("name")
	if in.Confirm != name {
		c.fail(w, r, badRequest("confirm: type the queue's name, %q, to purge it", name))
		return
	}
	if err := c.b.Invoke(r.Context(), a.account, "sqs", "PurgeQueue", map[string]string{"QueueUrl": c.b.QueueURL(a.account, name)}, nil); err != nil {
		c.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct{}{})
}

// redrive starts a move task out of a dead-letter queue: of every
// message, or of those refs name.
func (c *Console) redrive(w http.ResponseWriter, r *http.Request, a *access) {
	var in struct {
		Refs           *[]string `json:"refs"`
		DestinationARN string    `json:"destinationArn"`
		MaxPerSecond   *int      `json:"maxPerSecond"`
	}
	if err := decode(w, r, &in); err != nil {
		c.fail(w, r, err)
		return
	}
	var refs []string
	if in.Refs != nil {
		if err := checkRefs(*in.Refs); err != nil {
			c.fail(w, r, err)
			return
		}
		refs = *in.Refs
	}
	name := r.PathValue("name")
	sourceARN := c.b.QueueARN(a.account, name)
	start := map[string]any{"SourceArn": sourceARN}
	if in.DestinationARN != "" {
		start["DestinationArn"] = in.DestinationARN
	}
	if in.MaxPerSecond != nil {
		start["MaxNumberOfMessagesPerSecond"] = *in.MaxPerSecond
	}
	var out struct{ TaskHandle string }
	if err := c.b.StartMoveTask(r.Context(), a.account, start, refs, &out); err != nil {
		c.fail(w, r, err)
		return
	}
	tasks, err := c.moveTasks(r.Context(), a.account, sourceARN)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	res := map[string]any{"taskHandle": out.TaskHandle, "task": nil}
	if len(tasks) > 0 {
		res["task"] = tasks[0]
	}
	writeJSON(w, http.StatusOK, res)
}

func (c *Console) cancelMove(w http.ResponseWriter, r *http.Request, a *access) {
	var in struct {
		TaskHandle string `json:"taskHandle"`
	}
	if err := decode(w, r, &in); err != nil {
		c.fail(w, r, err)
		return
	}
	if in.TaskHandle == "" {
		c.fail(w, r, badRequest("taskHandle: required"))
		return
	}
	var out struct{ ApproximateNumberOfMessagesMoved int64 }
	if err := c.b.Invoke(r.Context(), a.account, "sqs", "CancelMessageMoveTask", map[string]string{"TaskHandle": in.TaskHandle}, &out); err != nil {
		c.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int64{"moved": out.ApproximateNumberOfMessagesMoved})
}

// resendRequest is a message to send again, edited: what is left out is
// the original's.
type resendRequest struct {
	Ref             string                    `json:"ref"`
	Body            *string                   `json:"body"`
	Attributes      *map[string]attributeView `json:"attributes"`
	Destination     string                    `json:"destination"`
	GroupID         string                    `json:"groupId"`
	DeduplicationID string                    `json:"deduplicationId"`
}

// resend sends a message again, edited, with SendMessage, then deletes
// the original: a failure between the two leaves a copy, never nothing.
func (c *Console) resend(w http.ResponseWriter, r *http.Request, a *access) {
	var in resendRequest
	if err := decode(w, r, &in); err != nil {
		c.fail(w, r, err)
		return
	}
	if in.Ref == "" {
		c.fail(w, r, badRequest("ref: required"))
		return
	}
	ctx, name := r.Context(), r.PathValue("name")
	m, err := c.peekOne(ctx, a.account, name, in.Ref)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	destAccount, dest := a.account, in.Destination
	if dest == "" {
		dest = name
		// The source may be another account's (its redrive policy named
		// this queue): send there as SendMessage would, by its URL.
		if src, ok := arn.Parse(m.DeadLetterSourceARN); ok && src.Six() {
			destAccount, dest = src.Account, src.Resource
		}
	}
	send := map[string]any{"QueueUrl": c.b.QueueURL(destAccount, dest), "MessageBody": m.Body}
	if in.Body != nil {
		send["MessageBody"] = *in.Body
	}
	attrs := summarizeMessage(m, true).Attributes
	if in.Attributes != nil {
		attrs = *in.Attributes
	}
	if len(attrs) > 0 {
		wire := make(map[string]map[string]string, len(attrs))
		for k, v := range attrs {
			e := map[string]string{"DataType": v.DataType}
			if v.StringValue != nil {
				e["StringValue"] = *v.StringValue
			}
			if v.BinaryValue != nil {
				e["BinaryValue"] = *v.BinaryValue
			}
			wire[k] = e
		}
		send["MessageAttributes"] = wire
	}
	group := in.GroupID
	if group == "" {
		group = m.MessageGroupID
	}
	if strings.HasSuffix(dest, ".fifo") {
		if group != "" {
			send["MessageGroupId"] = group
		}
		// By default the original's id: a resend repeated within the
		// deduplication window is one resend.
		dedup := in.DeduplicationID
		if dedup == "" {
			dedup = m.MessageID
		}
		send["MessageDeduplicationId"] = dedup
	} else if in.GroupID != "" {
		send["MessageGroupId"] = in.GroupID
	}
	var out struct{ MessageId string }
	if err := c.b.Invoke(ctx, a.account, "sqs", "SendMessage", send, &out); err != nil {
		c.fail(w, r, err)
		return
	}
	if _, err := c.b.DeleteRefs(ctx, a.account, name, []string{in.Ref}); err != nil {
		// The copy was sent: the original stays, and the answer says so.
		c.fail(w, r, queueErr(err, name, a.account))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"messageId": out.MessageId})
}
