package protocol

import (
	"context"
	"net/http"
	"sync"
)

// Representative inputs and outputs, shaped like the SQS and SNS models.

type msgAttrValue struct {
	DataType         string   `json:"DataType" query:"DataType"`
	StringValue      *string  `json:"StringValue,omitempty" query:"StringValue"`
	BinaryValue      []byte   `json:"BinaryValue,omitempty" query:"BinaryValue"`
	StringListValues []string `json:"StringListValues,omitempty" query:"StringListValue,flat"`
	BinaryListValues [][]byte `json:"BinaryListValues,omitempty" query:"BinaryListValue,flat"`
}

type sendEntry struct {
	Id                      string                  `json:"Id" query:"Id"`
	MessageBody             string                  `json:"MessageBody" query:"MessageBody"`
	DelaySeconds            *int32                  `json:"DelaySeconds,omitempty" query:"DelaySeconds"`
	MessageAttributes       map[string]msgAttrValue `json:"MessageAttributes,omitempty" query:"MessageAttribute,flat"`
	MessageSystemAttributes map[string]msgAttrValue `json:"MessageSystemAttributes,omitempty" query:"MessageSystemAttribute,flat"`
	MessageDeduplicationId  *string                 `json:"MessageDeduplicationId,omitempty" query:"MessageDeduplicationId"`
	MessageGroupId          *string                 `json:"MessageGroupId,omitempty" query:"MessageGroupId"`
}

type sendBatchInput struct {
	QueueUrl string      `json:"QueueUrl" query:"QueueUrl"`
	Entries  []sendEntry `json:"Entries" query:"SendMessageBatchRequestEntry,flat"`
}

type sendBatchResultEntry struct {
	Id               string `json:"Id" query:"Id"`
	MessageId        string `json:"MessageId" query:"MessageId"`
	MD5OfMessageBody string `json:"MD5OfMessageBody" query:"MD5OfMessageBody"`
}

type batchErrorEntry struct {
	Id          string  `json:"Id" query:"Id"`
	SenderFault bool    `json:"SenderFault" query:"SenderFault"`
	Code        string  `json:"Code" query:"Code"`
	Message     *string `json:"Message,omitempty" query:"Message"`
}

type sendBatchOutput struct {
	Successful []sendBatchResultEntry `json:"Successful" query:"SendMessageBatchResultEntry,flat"`
	Failed     []batchErrorEntry      `json:"Failed" query:"BatchResultErrorEntry,flat"`
}

type receiveInput struct {
	QueueUrl string `json:"QueueUrl" query:"QueueUrl"`
	// Both names travel as AttributeName.N on the query wire.
	AttributeNames              []string `json:"AttributeNames,omitempty" query:"AttributeName,flat"`
	MessageSystemAttributeNames []string `json:"MessageSystemAttributeNames,omitempty" query:"AttributeName,flat"`
	MessageAttributeNames       []string `json:"MessageAttributeNames,omitempty" query:"MessageAttributeName,flat"`
	MaxNumberOfMessages         *int32   `json:"MaxNumberOfMessages,omitempty" query:"MaxNumberOfMessages"`
	VisibilityTimeout           *int32   `json:"VisibilityTimeout,omitempty" query:"VisibilityTimeout"`
	WaitTimeSeconds             *int32   `json:"WaitTimeSeconds,omitempty" query:"WaitTimeSeconds"`
	ReceiveRequestAttemptId     *string  `json:"ReceiveRequestAttemptId,omitempty" query:"ReceiveRequestAttemptId"`
}

type message struct {
	MessageId              string                  `json:"MessageId" query:"MessageId"`
	ReceiptHandle          string                  `json:"ReceiptHandle" query:"ReceiptHandle"`
	MD5OfBody              string                  `json:"MD5OfBody" query:"MD5OfBody"`
	Body                   string                  `json:"Body" query:"Body"`
	Attributes             map[string]string       `json:"Attributes,omitempty" query:"Attribute,flat"`
	MD5OfMessageAttributes *string                 `json:"MD5OfMessageAttributes,omitempty" query:"MD5OfMessageAttributes"`
	MessageAttributes      map[string]msgAttrValue `json:"MessageAttributes,omitempty" query:"MessageAttribute,flat"`
}

type receiveOutput struct {
	Messages []message `json:"Messages,omitempty" query:"Message,flat"`
}

type createQueueInput struct {
	QueueName  string            `json:"QueueName" query:"QueueName"`
	Attributes map[string]string `json:"Attributes,omitempty" query:"Attribute,flat"`
	Tags       map[string]string `json:"tags,omitempty" query:"Tag,flat,key=Key,value=Value"`
}

type createQueueOutput struct {
	QueueUrl string `json:"QueueUrl" query:"QueueUrl"`
}

type listQueuesInput struct {
	QueueNamePrefix *string `json:"QueueNamePrefix,omitempty" query:"QueueNamePrefix"`
	MaxResults      *int32  `json:"MaxResults,omitempty" query:"MaxResults"`
	NextToken       *string `json:"NextToken,omitempty" query:"NextToken"`
}

type listQueuesOutput struct {
	QueueUrls []string `json:"QueueUrls,omitempty" query:"QueueUrl,flat"`
	NextToken *string  `json:"NextToken,omitempty" query:"NextToken"`
}

type getQueueAttributesOutput struct {
	Attributes map[string]string `json:"Attributes,omitempty" query:"Attribute,flat"`
}

type permissionInput struct {
	QueueUrl      string   `json:"QueueUrl" query:"QueueUrl"`
	Label         string   `json:"Label" query:"Label"`
	AWSAccountIds []string `json:"AWSAccountIds" query:"AWSAccountId,flat"`
	Actions       []string `json:"Actions" query:"ActionName,flat"`
}

type emptyOutput struct{}

// scalars exercises every scalar kind once.
type scalars struct {
	S   string  `json:"S" query:"S"`
	PS  *string `json:"PS" query:"PS"`
	I32 int32   `json:"I32" query:"I32"`
	I64 int64   `json:"I64" query:"I64"`
	PI  *int64  `json:"PI" query:"PI"`
	B   bool    `json:"B" query:"B"`
	PB  *bool   `json:"PB" query:"PB"`
	Raw []byte  `json:"Raw" query:"Raw"`
	Sub *struct {
		X string `json:"X" query:"X"`
	} `json:"Sub" query:"Sub"`
	Skip string `json:"-" query:"-"`
}

// SNS-like: wrapped lists and maps.

type snsTag struct {
	Key   string `json:"Key" query:"Key"`
	Value string `json:"Value" query:"Value"`
}

type snsAttr struct {
	DataType    string  `json:"DataType" query:"DataType"`
	StringValue *string `json:"StringValue,omitempty" query:"StringValue"`
	BinaryValue []byte  `json:"BinaryValue,omitempty" query:"BinaryValue"`
}

type createTopicInput struct {
	Name       string            `json:"Name" query:"Name"`
	Attributes map[string]string `json:"Attributes,omitempty" query:"Attributes,wrapped,key=key,value=value"`
	Tags       []snsTag          `json:"Tags,omitempty" query:"Tags,wrapped"`
}

type publishBatchEntry struct {
	Id                string             `json:"Id" query:"Id"`
	Message           string             `json:"Message" query:"Message"`
	Subject           *string            `json:"Subject,omitempty" query:"Subject"`
	MessageAttributes map[string]snsAttr `json:"MessageAttributes,omitempty" query:"MessageAttributes,wrapped,key=Name,value=Value"`
}

type publishBatchInput struct {
	TopicArn string              `json:"TopicArn" query:"TopicArn"`
	Entries  []publishBatchEntry `json:"PublishBatchRequestEntries" query:"PublishBatchRequestEntries,wrapped"`
}

type topic struct {
	TopicArn string `json:"TopicArn" query:"TopicArn"`
}

type listTopicsOutput struct {
	Topics    []topic `json:"Topics" query:"Topics,wrapped"`
	NextToken *string `json:"NextToken,omitempty" query:"NextToken"`
}

type getTopicAttributesOutput struct {
	Attributes map[string]string `json:"Attributes" query:"Attributes,wrapped,key=key,value=value"`
	Tags       []snsTag          `json:"Tags,omitempty" query:"Tags,wrapped"`
}

func ptr[T any](v T) *T { return &v }

// recorder remembers what the last action saw.
type recorder struct {
	mu     sync.Mutex
	action string
	input  any
	info   RequestInfo
}

func (r *recorder) last() (string, any, RequestInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.action, r.input, r.info
}

// respond builds an action that records its input and answers with out or
// err.
func respond[I, O any](rec *recorder, name string, out *O, err error) Action {
	return Define(name, func(ctx context.Context, in *I) (*O, error) {
		rec.mu.Lock()
		rec.action, rec.input, rec.info = name, in, *Info(ctx)
		rec.mu.Unlock()
		return out, err
	})
}

const (
	sqsNS = "http://queue.amazonaws.com/doc/2012-11-05/"
	snsNS = "http://sns.amazonaws.com/doc/2010-03-31/"
)

var errQueueDoesNotExist = &Error{Shape: "QueueDoesNotExist", Code: "AWS.SimpleQueueService.NonExistentQueue", Status: http.StatusBadRequest,
	Message: "The specified queue does not exist.", QueryMessage: "The specified queue does not exist for this wsdl version."}

// testServices returns an SQS-like and an SNS-like service; extra actions
// are added to SQS.
func testServices(rec *recorder, extra ...Action) (sqs, sns *Service) {
	sqs = &Service{
		JSONTargetPrefix: "AmazonSQS",
		ShapeNamespace:   "com.amazonaws.sqs",
		Version:          "2012-11-05",
		XMLNamespace:     sqsNS,
		SigningName:      "sqs",
		Actions:          map[string]Action{},
	}
	for _, a := range []Action{
		respond[sendBatchInput](rec, "SendMessageBatch", &sendBatchOutput{
			Successful: []sendBatchResultEntry{{Id: "a", MessageId: "m1", MD5OfMessageBody: "x"}},
			Failed:     []batchErrorEntry{},
		}, nil),
		respond[receiveInput](rec, "ReceiveMessage", &receiveOutput{}, nil),
		respond[createQueueInput](rec, "CreateQueue", &createQueueOutput{QueueUrl: "http://localhost/000000000000/q"}, nil),
		respond[listQueuesInput](rec, "ListQueues", &listQueuesOutput{QueueUrls: []string{"u1", "u2"}}, nil),
		respond[permissionInput](rec, "AddPermission", &emptyOutput{}, nil),
		respond[listQueuesInput](rec, "GetQueueUrl", (*createQueueOutput)(nil), errQueueDoesNotExist),
		respond[scalars](rec, "Scalars", &scalars{}, nil),
	} {
		sqs.Actions[a.Name] = a
	}
	for _, a := range extra {
		sqs.Actions[a.Name] = a
	}
	sns = &Service{
		Version:         "2010-03-31",
		XMLNamespace:    snsNS,
		EmptyResult:     true,
		OmitErrorDetail: true,
		SigningName:     "sns",
		Actions:         map[string]Action{},
	}
	for _, a := range []Action{
		respond[createTopicInput](rec, "CreateTopic", &topic{TopicArn: "arn:aws:sns:us-east-1:000000000000:t"}, nil),
		respond[publishBatchInput](rec, "PublishBatch", &emptyOutput{}, nil),
		respond[permissionInput](rec, "AddPermission", &emptyOutput{}, nil),
		respond[listQueuesInput](rec, "ListTopics", &listTopicsOutput{Topics: []topic{}}, nil),
		respond[listQueuesInput](rec, "GetTopicAttributes", (*emptyOutput)(nil), &Error{Shape: "NotFound", Code: "NotFound", Status: 404, Message: "Topic does not exist"}),
	} {
		sns.Actions[a.Name] = a
	}
	return sqs, sns
}
