package sns

// Inputs and outputs of the SNS actions. SNS speaks only the query
// protocol: lists travel as Name.member.N, maps as Name.entry.N.key/value
// (message attributes as Name.entry.N.Name/Value), and responses wrap them
// in <member> and <entry>.

// tag is a topic tag.
type tag struct {
	Key   string
	Value string
}

// tagOut is a tag as responses carry it: an empty value is still sent.
type tagOut struct {
	Key   string
	Value *string
}

type createTopicInput struct {
	Name                 string
	Attributes           map[string]string `query:"Attributes,wrapped,key=key,value=value"`
	Tags                 []tag             `query:"Tags,wrapped"`
	DataProtectionPolicy *string
}

type createTopicOutput struct {
	TopicArn string
}

type topicArnInput struct {
	TopicArn string
}

type emptyOutput struct{}

type emptyInput struct{}

type listInput struct {
	NextToken string
}

type topicEntry struct {
	TopicArn string
}

type listTopicsOutput struct {
	Topics    []topicEntry `query:"Topics,wrapped"`
	NextToken string
}

type attributesOutput struct {
	Attributes map[string]string `query:"Attributes,wrapped,key=key,value=value"`
}

type setTopicAttributesInput struct {
	TopicArn       string
	AttributeName  string
	AttributeValue *string
}

type subscribeInput struct {
	TopicArn              string
	Protocol              string
	Endpoint              string
	Attributes            map[string]string `query:"Attributes,wrapped,key=key,value=value"`
	ReturnSubscriptionArn bool
}

type subscriptionArnOutput struct {
	SubscriptionArn string
}

type confirmSubscriptionInput struct {
	TopicArn                  string
	Token                     string
	AuthenticateOnUnsubscribe string
}

type subscriptionArnInput struct {
	SubscriptionArn string
}

type subscriptionEntry struct {
	SubscriptionArn string
	Owner           string
	Protocol        string
	Endpoint        string
	TopicArn        string
}

type listSubscriptionsOutput struct {
	Subscriptions []subscriptionEntry `query:"Subscriptions,wrapped"`
	NextToken     string
}

type listSubscriptionsByTopicInput struct {
	TopicArn  string
	NextToken string
}

type setSubscriptionAttributesInput struct {
	SubscriptionArn string
	AttributeName   string
	AttributeValue  *string
}

// messageAttributeValue is a published message attribute.
type messageAttributeValue struct {
	DataType    string
	StringValue *string
	BinaryValue []byte
}

type publishInput struct {
	TopicArn               string
	TargetArn              string
	PhoneNumber            string
	Message                string
	Subject                *string
	MessageStructure       string
	MessageAttributes      map[string]messageAttributeValue `query:"MessageAttributes,wrapped"`
	MessageDeduplicationId *string
	MessageGroupId         *string
}

type publishOutput struct {
	MessageId      string
	SequenceNumber string
}

type publishBatchEntry struct {
	Id                     string
	Message                string
	Subject                *string
	MessageStructure       string
	MessageAttributes      map[string]messageAttributeValue `query:"MessageAttributes,wrapped"`
	MessageDeduplicationId *string
	MessageGroupId         *string
}

type publishBatchInput struct {
	TopicArn                   string
	PublishBatchRequestEntries []publishBatchEntry `query:"PublishBatchRequestEntries,wrapped"`
}

type publishBatchResult struct {
	Id             string
	MessageId      string
	SequenceNumber string
}

type batchError struct {
	Id          string
	Code        string
	Message     string
	SenderFault bool
}

type publishBatchOutput struct {
	Successful []publishBatchResult `query:"Successful,wrapped"`
	Failed     []batchError         `query:"Failed,wrapped"`
}

type tagResourceInput struct {
	ResourceArn string
	Tags        []tag `query:"Tags,wrapped"`
}

type untagResourceInput struct {
	ResourceArn string
	TagKeys     []string `query:"TagKeys,wrapped"`
}

type resourceArnInput struct {
	ResourceArn string
}

type listTagsOutput struct {
	Tags []tagOut `query:"Tags,wrapped"`
}

type addPermissionInput struct {
	TopicArn     string
	Label        string
	AWSAccountId []string `query:"AWSAccountId,wrapped"`
	ActionName   []string `query:"ActionName,wrapped"`
}

type removePermissionInput struct {
	TopicArn string
	Label    string
}

type dataProtectionPolicyOutput struct {
	DataProtectionPolicy string
}

type putDataProtectionPolicyInput struct {
	ResourceArn          string
	DataProtectionPolicy string
}
