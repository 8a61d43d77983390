package sqs

// Input and output members of every SQS action. The json tag is the member's
// JSON 1.0 name, the query tag its query parameter and XML element name
// (flattened lists and maps, as SQS has them). Optional numbers are pointers
// so that an absent member can be told from a zero.

// CreateQueueInput is CreateQueue's request.
type CreateQueueInput struct {
	QueueName  string            `json:"QueueName" query:"QueueName"`
	Attributes map[string]string `json:"Attributes,omitempty" query:"Attribute,flat"`
	Tags       map[string]string `json:"tags,omitempty" query:"Tag,flat,key=Key,value=Value"`
}

// CreateQueueOutput is CreateQueue's response.
type CreateQueueOutput struct {
	QueueUrl string `json:"QueueUrl,omitempty" query:"QueueUrl"`
}

// GetQueueUrlInput is GetQueueUrl's request.
type GetQueueUrlInput struct {
	QueueName              string `json:"QueueName" query:"QueueName"`
	QueueOwnerAWSAccountId string `json:"QueueOwnerAWSAccountId,omitempty" query:"QueueOwnerAWSAccountId"`
}

// GetQueueUrlOutput is GetQueueUrl's response.
type GetQueueUrlOutput struct {
	QueueUrl string `json:"QueueUrl,omitempty" query:"QueueUrl"`
}

// ListQueuesInput is ListQueues' request.
type ListQueuesInput struct {
	QueueNamePrefix string `json:"QueueNamePrefix,omitempty" query:"QueueNamePrefix"`
	NextToken       string `json:"NextToken,omitempty" query:"NextToken"`
	MaxResults      *int   `json:"MaxResults,omitempty" query:"MaxResults"`
}

// ListQueuesOutput is ListQueues' response.
type ListQueuesOutput struct {
	QueueUrls []string `json:"QueueUrls,omitempty" query:"QueueUrl,flat"`
	NextToken string   `json:"NextToken,omitempty" query:"NextToken"`
}

// QueueInput is the request of actions that name only a queue
// (DeleteQueue, PurgeQueue, ListQueueTags).
type QueueInput struct {
	QueueUrl string `json:"QueueUrl" query:"QueueUrl"`
}

// EmptyOutput is the response of actions without output members.
type EmptyOutput struct{}

// GetQueueAttributesInput is GetQueueAttributes' request.
type GetQueueAttributesInput struct {
	QueueUrl       string   `json:"QueueUrl" query:"QueueUrl"`
	AttributeNames []string `json:"AttributeNames,omitempty" query:"AttributeName,flat"`
}

// GetQueueAttributesOutput is GetQueueAttributes' response.
type GetQueueAttributesOutput struct {
	Attributes map[string]string `json:"Attributes,omitempty" query:"Attribute,flat"`
}

// SetQueueAttributesInput is SetQueueAttributes' request.
type SetQueueAttributesInput struct {
	QueueUrl   string            `json:"QueueUrl" query:"QueueUrl"`
	Attributes map[string]string `json:"Attributes" query:"Attribute,flat"`
}

// MessageAttributeValue is a user or system message attribute's value.
// The list members exist in the model but SQS does not implement them.
type MessageAttributeValue struct {
	StringValue      string   `json:"StringValue,omitempty" query:"StringValue"`
	BinaryValue      []byte   `json:"BinaryValue,omitempty" query:"BinaryValue"`
	StringListValues []string `json:"StringListValues,omitempty" query:"StringListValue,flat"`
	BinaryListValues [][]byte `json:"BinaryListValues,omitempty" query:"BinaryListValue,flat"`
	DataType         string   `json:"DataType" query:"DataType"`
}

// SendMessageInput is SendMessage's request.
type SendMessageInput struct {
	QueueUrl                string                           `json:"QueueUrl" query:"QueueUrl"`
	MessageBody             string                           `json:"MessageBody" query:"MessageBody"`
	DelaySeconds            *int                             `json:"DelaySeconds,omitempty" query:"DelaySeconds"`
	MessageAttributes       map[string]MessageAttributeValue `json:"MessageAttributes,omitempty" query:"MessageAttribute,flat"`
	MessageSystemAttributes map[string]MessageAttributeValue `json:"MessageSystemAttributes,omitempty" query:"MessageSystemAttribute,flat"`
	MessageDeduplicationId  *string                          `json:"MessageDeduplicationId,omitempty" query:"MessageDeduplicationId"`
	MessageGroupId          *string                          `json:"MessageGroupId,omitempty" query:"MessageGroupId"`
}

// SendMessageOutput is SendMessage's response.
type SendMessageOutput struct {
	MD5OfMessageBody             string `json:"MD5OfMessageBody,omitempty" query:"MD5OfMessageBody"`
	MD5OfMessageAttributes       string `json:"MD5OfMessageAttributes,omitempty" query:"MD5OfMessageAttributes"`
	MD5OfMessageSystemAttributes string `json:"MD5OfMessageSystemAttributes,omitempty" query:"MD5OfMessageSystemAttributes"`
	MessageId                    string `json:"MessageId,omitempty" query:"MessageId"`
	SequenceNumber               string `json:"SequenceNumber,omitempty" query:"SequenceNumber"`
}

// SendMessageBatchRequestEntry is one message of SendMessageBatch.
type SendMessageBatchRequestEntry struct {
	Id                      string                           `json:"Id" query:"Id"`
	MessageBody             string                           `json:"MessageBody" query:"MessageBody"`
	DelaySeconds            *int                             `json:"DelaySeconds,omitempty" query:"DelaySeconds"`
	MessageAttributes       map[string]MessageAttributeValue `json:"MessageAttributes,omitempty" query:"MessageAttribute,flat"`
	MessageSystemAttributes map[string]MessageAttributeValue `json:"MessageSystemAttributes,omitempty" query:"MessageSystemAttribute,flat"`
	MessageDeduplicationId  *string                          `json:"MessageDeduplicationId,omitempty" query:"MessageDeduplicationId"`
	MessageGroupId          *string                          `json:"MessageGroupId,omitempty" query:"MessageGroupId"`
}

// SendMessageBatchInput is SendMessageBatch's request.
type SendMessageBatchInput struct {
	QueueUrl string                         `json:"QueueUrl" query:"QueueUrl"`
	Entries  []SendMessageBatchRequestEntry `json:"Entries" query:"SendMessageBatchRequestEntry,flat"`
}

// SendMessageBatchResultEntry is one sent message of SendMessageBatch.
type SendMessageBatchResultEntry struct {
	Id                           string `json:"Id" query:"Id"`
	MessageId                    string `json:"MessageId" query:"MessageId"`
	MD5OfMessageBody             string `json:"MD5OfMessageBody" query:"MD5OfMessageBody"`
	MD5OfMessageAttributes       string `json:"MD5OfMessageAttributes,omitempty" query:"MD5OfMessageAttributes"`
	MD5OfMessageSystemAttributes string `json:"MD5OfMessageSystemAttributes,omitempty" query:"MD5OfMessageSystemAttributes"`
	SequenceNumber               string `json:"SequenceNumber,omitempty" query:"SequenceNumber"`
}

// BatchResultErrorEntry is one failed entry of a batch action.
type BatchResultErrorEntry struct {
	Id          string `json:"Id" query:"Id"`
	SenderFault bool   `json:"SenderFault" query:"SenderFault"`
	Code        string `json:"Code" query:"Code"`
	Message     string `json:"Message,omitempty" query:"Message"`
}

// SendMessageBatchOutput is SendMessageBatch's response; both lists are
// always present.
type SendMessageBatchOutput struct {
	Successful []SendMessageBatchResultEntry `json:"Successful" query:"SendMessageBatchResultEntry,flat"`
	Failed     []BatchResultErrorEntry       `json:"Failed" query:"BatchResultErrorEntry,flat"`
}

// ReceiveMessageInput is ReceiveMessage's request. AttributeNames and
// MessageSystemAttributeNames share the query name AttributeName, so only
// the first is decoded from the query wire; the handler merges both.
type ReceiveMessageInput struct {
	QueueUrl                    string   `json:"QueueUrl" query:"QueueUrl"`
	AttributeNames              []string `json:"AttributeNames,omitempty" query:"AttributeName,flat"`
	MessageSystemAttributeNames []string `json:"MessageSystemAttributeNames,omitempty" query:"-"`
	MessageAttributeNames       []string `json:"MessageAttributeNames,omitempty" query:"MessageAttributeName,flat"`
	MaxNumberOfMessages         *int     `json:"MaxNumberOfMessages,omitempty" query:"MaxNumberOfMessages"`
	VisibilityTimeout           *int     `json:"VisibilityTimeout,omitempty" query:"VisibilityTimeout"`
	WaitTimeSeconds             *int     `json:"WaitTimeSeconds,omitempty" query:"WaitTimeSeconds"`
	ReceiveRequestAttemptId     string   `json:"ReceiveRequestAttemptId,omitempty" query:"ReceiveRequestAttemptId"`
}

// Message is one received message.
type Message struct {
	MessageId              string                           `json:"MessageId,omitempty" query:"MessageId"`
	ReceiptHandle          string                           `json:"ReceiptHandle,omitempty" query:"ReceiptHandle"`
	MD5OfBody              string                           `json:"MD5OfBody,omitempty" query:"MD5OfBody"`
	Body                   string                           `json:"Body,omitempty" query:"Body"`
	Attributes             map[string]string                `json:"Attributes,omitempty" query:"Attribute,flat"`
	MD5OfMessageAttributes string                           `json:"MD5OfMessageAttributes,omitempty" query:"MD5OfMessageAttributes"`
	MessageAttributes      map[string]MessageAttributeValue `json:"MessageAttributes,omitempty" query:"MessageAttribute,flat"`
}

// ReceiveMessageOutput is ReceiveMessage's response; Messages is omitted
// when nothing was received.
type ReceiveMessageOutput struct {
	Messages []Message `json:"Messages,omitempty" query:"Message,flat"`
}

// DeleteMessageInput is DeleteMessage's request.
type DeleteMessageInput struct {
	QueueUrl      string `json:"QueueUrl" query:"QueueUrl"`
	ReceiptHandle string `json:"ReceiptHandle" query:"ReceiptHandle"`
}

// DeleteMessageBatchRequestEntry is one handle of DeleteMessageBatch.
type DeleteMessageBatchRequestEntry struct {
	Id            string `json:"Id" query:"Id"`
	ReceiptHandle string `json:"ReceiptHandle" query:"ReceiptHandle"`
}

// DeleteMessageBatchInput is DeleteMessageBatch's request.
type DeleteMessageBatchInput struct {
	QueueUrl string                           `json:"QueueUrl" query:"QueueUrl"`
	Entries  []DeleteMessageBatchRequestEntry `json:"Entries" query:"DeleteMessageBatchRequestEntry,flat"`
}

// BatchResultEntry is one successful entry of DeleteMessageBatch or
// ChangeMessageVisibilityBatch.
type BatchResultEntry struct {
	Id string `json:"Id" query:"Id"`
}

// DeleteMessageBatchOutput is DeleteMessageBatch's response.
type DeleteMessageBatchOutput struct {
	Successful []BatchResultEntry      `json:"Successful" query:"DeleteMessageBatchResultEntry,flat"`
	Failed     []BatchResultErrorEntry `json:"Failed" query:"BatchResultErrorEntry,flat"`
}

// ChangeMessageVisibilityInput is ChangeMessageVisibility's request.
type ChangeMessageVisibilityInput struct {
	QueueUrl          string `json:"QueueUrl" query:"QueueUrl"`
	ReceiptHandle     string `json:"ReceiptHandle" query:"ReceiptHandle"`
	VisibilityTimeout *int   `json:"VisibilityTimeout,omitempty" query:"VisibilityTimeout"`
}

// ChangeMessageVisibilityBatchRequestEntry is one change of
// ChangeMessageVisibilityBatch.
type ChangeMessageVisibilityBatchRequestEntry struct {
	Id                string `json:"Id" query:"Id"`
	ReceiptHandle     string `json:"ReceiptHandle" query:"ReceiptHandle"`
	VisibilityTimeout *int   `json:"VisibilityTimeout,omitempty" query:"VisibilityTimeout"`
}

// ChangeMessageVisibilityBatchInput is ChangeMessageVisibilityBatch's request.
type ChangeMessageVisibilityBatchInput struct {
	QueueUrl string                                     `json:"QueueUrl" query:"QueueUrl"`
	Entries  []ChangeMessageVisibilityBatchRequestEntry `json:"Entries" query:"ChangeMessageVisibilityBatchRequestEntry,flat"`
}

// ChangeMessageVisibilityBatchOutput is ChangeMessageVisibilityBatch's response.
type ChangeMessageVisibilityBatchOutput struct {
	Successful []BatchResultEntry      `json:"Successful" query:"ChangeMessageVisibilityBatchResultEntry,flat"`
	Failed     []BatchResultErrorEntry `json:"Failed" query:"BatchResultErrorEntry,flat"`
}

// TagQueueInput is TagQueue's request.
type TagQueueInput struct {
	QueueUrl string            `json:"QueueUrl" query:"QueueUrl"`
	Tags     map[string]string `json:"Tags" query:"Tag,flat,key=Key,value=Value"`
}

// UntagQueueInput is UntagQueue's request.
type UntagQueueInput struct {
	QueueUrl string   `json:"QueueUrl" query:"QueueUrl"`
	TagKeys  []string `json:"TagKeys" query:"TagKey,flat"`
}

// ListQueueTagsOutput is ListQueueTags' response.
type ListQueueTagsOutput struct {
	Tags map[string]string `json:"Tags,omitempty" query:"Tag,flat,key=Key,value=Value"`
}

// AddPermissionInput is AddPermission's request.
type AddPermissionInput struct {
	QueueUrl      string   `json:"QueueUrl" query:"QueueUrl"`
	Label         string   `json:"Label" query:"Label"`
	AWSAccountIds []string `json:"AWSAccountIds" query:"AWSAccountId,flat"`
	Actions       []string `json:"Actions" query:"ActionName,flat"`
}

// RemovePermissionInput is RemovePermission's request.
type RemovePermissionInput struct {
	QueueUrl string `json:"QueueUrl" query:"QueueUrl"`
	Label    string `json:"Label" query:"Label"`
}

// ListDeadLetterSourceQueuesInput is ListDeadLetterSourceQueues' request.
type ListDeadLetterSourceQueuesInput struct {
	QueueUrl   string `json:"QueueUrl" query:"QueueUrl"`
	NextToken  string `json:"NextToken,omitempty" query:"NextToken"`
	MaxResults *int   `json:"MaxResults,omitempty" query:"MaxResults"`
}

// ListDeadLetterSourceQueuesOutput is ListDeadLetterSourceQueues' response;
// queueUrls is required, so always present.
type ListDeadLetterSourceQueuesOutput struct {
	QueueUrls []string `json:"queueUrls" query:"QueueUrl,flat"`
	NextToken string   `json:"NextToken,omitempty" query:"NextToken"`
}

// StartMessageMoveTaskInput is StartMessageMoveTask's request.
type StartMessageMoveTaskInput struct {
	SourceArn                    string `json:"SourceArn" query:"SourceArn"`
	DestinationArn               string `json:"DestinationArn,omitempty" query:"DestinationArn"`
	MaxNumberOfMessagesPerSecond *int   `json:"MaxNumberOfMessagesPerSecond,omitempty" query:"MaxNumberOfMessagesPerSecond"`
}

// StartMessageMoveTaskOutput is StartMessageMoveTask's response.
type StartMessageMoveTaskOutput struct {
	TaskHandle string `json:"TaskHandle,omitempty" query:"TaskHandle"`
}

// ListMessageMoveTasksInput is ListMessageMoveTasks' request.
type ListMessageMoveTasksInput struct {
	SourceArn  string `json:"SourceArn" query:"SourceArn"`
	MaxResults *int   `json:"MaxResults,omitempty" query:"MaxResults"`
}

// ListMessageMoveTasksResultEntry is one task of ListMessageMoveTasks.
type ListMessageMoveTasksResultEntry struct {
	TaskHandle                        string `json:"TaskHandle,omitempty" query:"TaskHandle"`
	Status                            string `json:"Status,omitempty" query:"Status"`
	SourceArn                         string `json:"SourceArn,omitempty" query:"SourceArn"`
	DestinationArn                    string `json:"DestinationArn,omitempty" query:"DestinationArn"`
	MaxNumberOfMessagesPerSecond      *int   `json:"MaxNumberOfMessagesPerSecond,omitempty" query:"MaxNumberOfMessagesPerSecond"`
	ApproximateNumberOfMessagesMoved  int64  `json:"ApproximateNumberOfMessagesMoved" query:"ApproximateNumberOfMessagesMoved"`
	ApproximateNumberOfMessagesToMove *int64 `json:"ApproximateNumberOfMessagesToMove,omitempty" query:"ApproximateNumberOfMessagesToMove"`
	FailureReason                     string `json:"FailureReason,omitempty" query:"FailureReason"`
	StartedTimestamp                  int64  `json:"StartedTimestamp" query:"StartedTimestamp"`
}

// ListMessageMoveTasksOutput is ListMessageMoveTasks' response.
type ListMessageMoveTasksOutput struct {
	Results []ListMessageMoveTasksResultEntry `json:"Results,omitempty" query:"ListMessageMoveTasksResultEntry,flat"`
}

// CancelMessageMoveTaskInput is CancelMessageMoveTask's request.
type CancelMessageMoveTaskInput struct {
	TaskHandle string `json:"TaskHandle" query:"TaskHandle"`
}

// CancelMessageMoveTaskOutput is CancelMessageMoveTask's response.
type CancelMessageMoveTaskOutput struct {
	ApproximateNumberOfMessagesMoved int64 `json:"ApproximateNumberOfMessagesMoved" query:"ApproximateNumberOfMessagesMoved"`
}
