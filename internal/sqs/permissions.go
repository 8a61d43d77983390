package sqs

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/protocol"
	"github.com/ferrymq/ferry/internal/sigv4"
)

// AddPermission and RemovePermission maintain the queue's Policy document,
// one statement per label, as AWS writes it.

const maxPermissionActions = 7

// shareableActions may be granted to other accounts; the remaining SQS
// actions are the queue owner's alone.
var shareableActions = []string{
	"*", "ChangeMessageVisibility", "DeleteMessage", "GetQueueAttributes", "GetQueueUrl",
	"ListDeadLetterSourceQueues", "PurgeQueue", "ReceiveMessage", "SendMessage",
}

// policyDocument is a queue policy; statements stay raw so that a policy
// set through SetQueueAttributes keeps its other statements untouched.
type policyDocument struct {
	Version   string            `json:"Version"`
	ID        string            `json:"Id,omitempty"`
	Statement []json.RawMessage `json:"Statement"`
}

// permissionStatement is the statement AddPermission writes. Principal and
// Action are a single string for one value and a list for several.
type permissionStatement struct {
	Sid       string         `json:"Sid"`
	Effect    string         `json:"Effect"`
	Principal map[string]any `json:"Principal"`
	Action    any            `json:"Action"`
	Resource  string         `json:"Resource"`
}

// parsePolicy reads a queue's Policy, or starts the default document. A
// policy whose Statement is a single object is read as a list of one.
func parsePolicy(policy, arn string) policyDocument {
	doc := policyDocument{Version: "2008-10-17", ID: arn + "/SQSDefaultPolicy"}
	if policy == "" {
		return doc
	}
	var raw struct {
		Version   string          `json:"Version"`
		ID        string          `json:"Id"`
		Statement json.RawMessage `json:"Statement"`
	}
	if json.Unmarshal([]byte(policy), &raw) != nil {
		return doc
	}
	if raw.Version != "" {
		doc.Version = raw.Version
	}
	doc.ID = raw.ID
	st := bytes.TrimSpace(raw.Statement)
	switch {
	case len(st) > 0 && st[0] == '[':
		_ = json.Unmarshal(st, &doc.Statement)
	case len(st) > 0 && st[0] == '{':
		doc.Statement = []json.RawMessage{st}
	}
	return doc
}

// sid reads a raw statement's Sid.
func sid(st json.RawMessage) string {
	var v struct{ Sid string }
	_ = json.Unmarshal(st, &v)
	return v.Sid
}

// marshalPolicy renders doc compactly and without HTML escaping, as AWS
// returns it.
func marshalPolicy(doc policyDocument) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return "", err
	}
	return string(bytes.TrimRight(b.Bytes(), "\n")), nil
}

func oneOrMany(vs []string) any {
	if len(vs) == 1 {
		return vs[0]
	}
	return vs
}

// checkActions validates AddPermission's action names.
func checkActions(actions []string) *protocol.Error {
	if len(actions) > maxPermissionActions {
		return errOverLimit.WithMessage("%d Actions were found, maximum allowed is %d.", len(actions), maxPermissionActions)
	}
	for _, a := range actions {
		if slices.Contains(shareableActions, a) {
			continue
		}
		reason := "Please refer to the appropriate WSDL for a list of valid actions."
		if _, known := sqsActionNames[a]; known {
			reason = "Only the queue owner is allowed to invoke this action."
		}
		return invalidValue("SQS:"+a, "ActionName", reason)
	}
	return nil
}

// sqsActionNames are all SQS operations, to tell an owner-only action from
// a name that is no action at all.
var sqsActionNames = map[string]struct{}{
	"AddPermission": {}, "CancelMessageMoveTask": {}, "ChangeMessageVisibility": {}, "ChangeMessageVisibilityBatch": {},
	"CreateQueue": {}, "DeleteMessage": {}, "DeleteMessageBatch": {}, "DeleteQueue": {}, "GetQueueAttributes": {},
	"GetQueueUrl": {}, "ListDeadLetterSourceQueues": {}, "ListMessageMoveTasks": {}, "ListQueueTags": {},
	"ListQueues": {}, "PurgeQueue": {}, "ReceiveMessage": {}, "RemovePermission": {}, "SendMessage": {},
	"SendMessageBatch": {}, "SetQueueAttributes": {}, "StartMessageMoveTask": {}, "TagQueue": {}, "UntagQueue": {},
}

func (s *service) addPermission(ctx context.Context, in *AddPermissionInput) (*EmptyOutput, error) {
	switch {
	case in.Label == "":
		return nil, missingParameter("Label")
	case len(in.AWSAccountIds) == 0:
		return nil, missingParameter("AWSAccountIds")
	case len(in.Actions) == 0:
		return nil, missingParameter("Actions")
	case !validIdent(in.Label, maxQueueNameLen):
		return nil, invalidValue(in.Label, "Label", "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length")
	}
	principals := make([]string, len(in.AWSAccountIds))
	for i, id := range in.AWSAccountIds {
		if !sigv4.IsAccountID(id) {
			return nil, invalidValue("["+id+"]", "PrincipalId", "Unable to verify.")
		}
		principals[i] = "arn:aws:iam::" + id + ":root"
	}
	if perr := checkActions(in.Actions); perr != nil {
		return nil, perr
	}
	actions := make([]string, len(in.Actions))
	for i, a := range in.Actions {
		actions[i] = "SQS:" + a
	}
	now := s.clock.Now()
	err := s.updateQueue(ctx, in.QueueUrl, "AddPermission", func(q *engine.Queue) *protocol.Error {
		arn := s.refOf(q).arn()
		doc := parsePolicy(q.Attributes[attrPolicy], arn)
		for _, st := range doc.Statement {
			if sid(st) == in.Label {
				return invalidValue(in.Label, "Label", "Already exists.")
			}
		}
		st, err := json.Marshal(permissionStatement{
			Sid:       in.Label,
			Effect:    "Allow",
			Principal: map[string]any{"AWS": oneOrMany(principals)},
			Action:    oneOrMany(actions),
			Resource:  arn,
		})
		if err != nil {
			return invalidParameter("Invalid permission: %v", err)
		}
		doc.Statement = append(doc.Statement, st)
		return setPolicy(q, doc, now)
	})
	if err != nil {
		return nil, err
	}
	return &EmptyOutput{}, nil
}

func (s *service) removePermission(ctx context.Context, in *RemovePermissionInput) (*EmptyOutput, error) {
	if in.Label == "" {
		return nil, missingParameter("Label")
	}
	now := s.clock.Now()
	err := s.updateQueue(ctx, in.QueueUrl, "RemovePermission", func(q *engine.Queue) *protocol.Error {
		doc := parsePolicy(q.Attributes[attrPolicy], s.refOf(q).arn())
		i := slices.IndexFunc(doc.Statement, func(st json.RawMessage) bool { return sid(st) == in.Label })
		if i < 0 {
			return invalidValue(in.Label, "Label", "can't find label.")
		}
		doc.Statement = slices.Delete(doc.Statement, i, i+1)
		return setPolicy(q, doc, now)
	})
	if err != nil {
		return nil, err
	}
	return &EmptyOutput{}, nil
}

// setPolicy stores doc as q's Policy; a document without statements removes
// the attribute, as AWS does.
func setPolicy(q *engine.Queue, doc policyDocument, now time.Time) *protocol.Error {
	attrs := maps.Clone(q.Attributes)
	if len(doc.Statement) == 0 {
		delete(attrs, attrPolicy)
	} else {
		policy, err := marshalPolicy(doc)
		if err != nil {
			return invalidParameter("Invalid policy: %v", err)
		}
		attrs[attrPolicy] = policy
	}
	q.Attributes = attrs
	q.Modified = now
	return nil
}
