package cloudwatch

import "time"

// Inputs and outputs of the CloudWatch actions. The json tag is the
// member's name in JSON and CBOR, the query tag its query parameter and XML
// element name; CloudWatch's query lists are wrapped (Name.member.N).
// Optional numbers are pointers so that an absent member can be told from
// a zero.
//
// Doubles are float64 and timestamps time.Time: the codecs write them as
// each wire does (ISO 8601 and Java's doubles in XML, epoch seconds and
// numbers in JSON and CBOR).

// Dimension is a metric's name/value pair.
type Dimension struct {
	Name  string `json:"Name" query:"Name"`
	Value string `json:"Value" query:"Value"`
}

// DimensionFilter narrows ListMetrics; an empty Value matches any.
type DimensionFilter struct {
	Name  string  `json:"Name" query:"Name"`
	Value *string `json:"Value,omitempty" query:"Value"`
}

// Tag is a resource tag.
type Tag struct {
	Key   string `json:"Key" query:"Key"`
	Value string `json:"Value" query:"Value"`
}

// Metric names one metric.
type Metric struct {
	Namespace  string      `json:"Namespace,omitempty" query:"Namespace"`
	MetricName string      `json:"MetricName,omitempty" query:"MetricName"`
	Dimensions []Dimension `json:"Dimensions,omitempty" query:"Dimensions,wrapped"`
}

// MetricStat is a metric with the statistic, period and unit to take.
type MetricStat struct {
	Metric *Metric `json:"Metric,omitempty" query:"Metric"`
	Period *int32  `json:"Period,omitempty" query:"Period"`
	Stat   string  `json:"Stat,omitempty" query:"Stat"`
	Unit   string  `json:"Unit,omitempty" query:"Unit"`
}

// MetricDataQuery is one query of GetMetricData or of a metric-math alarm.
type MetricDataQuery struct {
	Id         string      `json:"Id" query:"Id"`
	MetricStat *MetricStat `json:"MetricStat,omitempty" query:"MetricStat"`
	Expression string      `json:"Expression,omitempty" query:"Expression"`
	Label      string      `json:"Label,omitempty" query:"Label"`
	ReturnData *bool       `json:"ReturnData,omitempty" query:"ReturnData"`
	Period     *int32      `json:"Period,omitempty" query:"Period"`
	AccountId  string      `json:"AccountId,omitempty" query:"AccountId"`
}

// ListMetricsInput is ListMetrics' request.
type ListMetricsInput struct {
	Namespace             string            `json:"Namespace,omitempty" query:"Namespace"`
	MetricName            string            `json:"MetricName,omitempty" query:"MetricName"`
	Dimensions            []DimensionFilter `json:"Dimensions,omitempty" query:"Dimensions,wrapped"`
	NextToken             string            `json:"NextToken,omitempty" query:"NextToken"`
	RecentlyActive        string            `json:"RecentlyActive,omitempty" query:"RecentlyActive"`
	IncludeLinkedAccounts bool              `json:"IncludeLinkedAccounts,omitempty" query:"IncludeLinkedAccounts"`
	OwningAccount         string            `json:"OwningAccount,omitempty" query:"OwningAccount"`
}

// ListMetricsOutput is ListMetrics' response.
type ListMetricsOutput struct {
	Metrics   []Metric `json:"Metrics" query:"Metrics,wrapped"`
	NextToken string   `json:"NextToken,omitempty" query:"NextToken"`
}

// GetMetricStatisticsInput is GetMetricStatistics' request.
type GetMetricStatisticsInput struct {
	Namespace          string      `json:"Namespace,omitempty" query:"Namespace"`
	MetricName         string      `json:"MetricName,omitempty" query:"MetricName"`
	Dimensions         []Dimension `json:"Dimensions,omitempty" query:"Dimensions,wrapped"`
	StartTime          time.Time   `json:"StartTime" query:"StartTime"`
	EndTime            time.Time   `json:"EndTime" query:"EndTime"`
	Period             *int32      `json:"Period,omitempty" query:"Period"`
	Statistics         []string    `json:"Statistics,omitempty" query:"Statistics,wrapped"`
	ExtendedStatistics []string    `json:"ExtendedStatistics,omitempty" query:"ExtendedStatistics,wrapped"`
	Unit               string      `json:"Unit,omitempty" query:"Unit"`
}

// Datapoint is one period's statistics; only the requested ones are set.
type Datapoint struct {
	Timestamp   *time.Time `json:"Timestamp,omitempty" query:"Timestamp"`
	SampleCount *float64   `json:"SampleCount,omitempty" query:"SampleCount"`
	Average     *float64   `json:"Average,omitempty" query:"Average"`
	Sum         *float64   `json:"Sum,omitempty" query:"Sum"`
	Minimum     *float64   `json:"Minimum,omitempty" query:"Minimum"`
	Maximum     *float64   `json:"Maximum,omitempty" query:"Maximum"`
	Unit        string     `json:"Unit,omitempty" query:"Unit"`
}

// GetMetricStatisticsOutput is GetMetricStatistics' response.
type GetMetricStatisticsOutput struct {
	Label      string      `json:"Label,omitempty" query:"Label"`
	Datapoints []Datapoint `json:"Datapoints" query:"Datapoints,wrapped"`
}

// GetMetricDataInput is GetMetricData's request.
type GetMetricDataInput struct {
	MetricDataQueries []MetricDataQuery `json:"MetricDataQueries,omitempty" query:"MetricDataQueries,wrapped"`
	StartTime         time.Time         `json:"StartTime" query:"StartTime"`
	EndTime           time.Time         `json:"EndTime" query:"EndTime"`
	NextToken         string            `json:"NextToken,omitempty" query:"NextToken"`
	ScanBy            string            `json:"ScanBy,omitempty" query:"ScanBy"`
	MaxDatapoints     *int32            `json:"MaxDatapoints,omitempty" query:"MaxDatapoints"`
}

// MessageData is a note on a GetMetricData answer.
type MessageData struct {
	Code  string `json:"Code,omitempty" query:"Code"`
	Value string `json:"Value,omitempty" query:"Value"`
}

// MetricDataResult is one query's series.
type MetricDataResult struct {
	Id         string        `json:"Id,omitempty" query:"Id"`
	Label      string        `json:"Label,omitempty" query:"Label"`
	Timestamps []time.Time   `json:"Timestamps" query:"Timestamps,wrapped"`
	Values     []float64     `json:"Values" query:"Values,wrapped"`
	StatusCode string        `json:"StatusCode,omitempty" query:"StatusCode"`
	Messages   []MessageData `json:"Messages" query:"Messages,wrapped"`
}

// GetMetricDataOutput is GetMetricData's response.
type GetMetricDataOutput struct {
	MetricDataResults []MetricDataResult `json:"MetricDataResults" query:"MetricDataResults,wrapped"`
	NextToken         string             `json:"NextToken,omitempty" query:"NextToken"`
	Messages          []MessageData      `json:"Messages" query:"Messages,wrapped"`
}

// PutMetricAlarmInput is PutMetricAlarm's request.
type PutMetricAlarmInput struct {
	AlarmName                        string            `json:"AlarmName,omitempty" query:"AlarmName"`
	AlarmDescription                 *string           `json:"AlarmDescription,omitempty" query:"AlarmDescription"`
	ActionsEnabled                   *bool             `json:"ActionsEnabled,omitempty" query:"ActionsEnabled"`
	OKActions                        []string          `json:"OKActions,omitempty" query:"OKActions,wrapped"`
	AlarmActions                     []string          `json:"AlarmActions,omitempty" query:"AlarmActions,wrapped"`
	InsufficientDataActions          []string          `json:"InsufficientDataActions,omitempty" query:"InsufficientDataActions,wrapped"`
	MetricName                       string            `json:"MetricName,omitempty" query:"MetricName"`
	Namespace                        string            `json:"Namespace,omitempty" query:"Namespace"`
	Statistic                        string            `json:"Statistic,omitempty" query:"Statistic"`
	ExtendedStatistic                string            `json:"ExtendedStatistic,omitempty" query:"ExtendedStatistic"`
	Dimensions                       []Dimension       `json:"Dimensions,omitempty" query:"Dimensions,wrapped"`
	Period                           *int32            `json:"Period,omitempty" query:"Period"`
	Unit                             string            `json:"Unit,omitempty" query:"Unit"`
	EvaluationPeriods                *int32            `json:"EvaluationPeriods,omitempty" query:"EvaluationPeriods"`
	DatapointsToAlarm                *int32            `json:"DatapointsToAlarm,omitempty" query:"DatapointsToAlarm"`
	Threshold                        *float64          `json:"Threshold,omitempty" query:"Threshold"`
	ComparisonOperator               string            `json:"ComparisonOperator,omitempty" query:"ComparisonOperator"`
	TreatMissingData                 string            `json:"TreatMissingData,omitempty" query:"TreatMissingData"`
	EvaluateLowSampleCountPercentile string            `json:"EvaluateLowSampleCountPercentile,omitempty" query:"EvaluateLowSampleCountPercentile"`
	Metrics                          []MetricDataQuery `json:"Metrics,omitempty" query:"Metrics,wrapped"`
	Tags                             []Tag             `json:"Tags,omitempty" query:"Tags,wrapped"`
	ThresholdMetricId                string            `json:"ThresholdMetricId,omitempty" query:"ThresholdMetricId"`
}

// MetricAlarm is an alarm as DescribeAlarms shows it.
type MetricAlarm struct {
	AlarmName                          string      `json:"AlarmName,omitempty" query:"AlarmName"`
	AlarmArn                           string      `json:"AlarmArn,omitempty" query:"AlarmArn"`
	AlarmDescription                   *string     `json:"AlarmDescription,omitempty" query:"AlarmDescription"`
	AlarmConfigurationUpdatedTimestamp *time.Time  `json:"AlarmConfigurationUpdatedTimestamp,omitempty" query:"AlarmConfigurationUpdatedTimestamp"`
	ActionsEnabled                     bool        `json:"ActionsEnabled" query:"ActionsEnabled"`
	OKActions                          []string    `json:"OKActions" query:"OKActions,wrapped"`
	AlarmActions                       []string    `json:"AlarmActions" query:"AlarmActions,wrapped"`
	InsufficientDataActions            []string    `json:"InsufficientDataActions" query:"InsufficientDataActions,wrapped"`
	StateValue                         string      `json:"StateValue,omitempty" query:"StateValue"`
	StateReason                        string      `json:"StateReason,omitempty" query:"StateReason"`
	StateReasonData                    string      `json:"StateReasonData,omitempty" query:"StateReasonData"`
	StateUpdatedTimestamp              *time.Time  `json:"StateUpdatedTimestamp,omitempty" query:"StateUpdatedTimestamp"`
	MetricName                         string      `json:"MetricName,omitempty" query:"MetricName"`
	Namespace                          string      `json:"Namespace,omitempty" query:"Namespace"`
	Statistic                          string      `json:"Statistic,omitempty" query:"Statistic"`
	ExtendedStatistic                  string      `json:"ExtendedStatistic,omitempty" query:"ExtendedStatistic"`
	Dimensions                         []Dimension `json:"Dimensions" query:"Dimensions,wrapped"`
	Period                             int32       `json:"Period" query:"Period"`
	Unit                               string      `json:"Unit,omitempty" query:"Unit"`
	EvaluationPeriods                  int32       `json:"EvaluationPeriods" query:"EvaluationPeriods"`
	DatapointsToAlarm                  *int32      `json:"DatapointsToAlarm,omitempty" query:"DatapointsToAlarm"`
	Threshold                          *float64    `json:"Threshold,omitempty" query:"Threshold"`
	ComparisonOperator                 string      `json:"ComparisonOperator,omitempty" query:"ComparisonOperator"`
	TreatMissingData                   string      `json:"TreatMissingData,omitempty" query:"TreatMissingData"`
	EvaluateLowSampleCountPercentile   string      `json:"EvaluateLowSampleCountPercentile,omitempty" query:"EvaluateLowSampleCountPercentile"`
	StateTransitionedTimestamp         *time.Time  `json:"StateTransitionedTimestamp,omitempty" query:"StateTransitionedTimestamp"`
}

// CompositeAlarm is listed by DescribeAlarms; Ferry has none, so the list
// is always empty.
type CompositeAlarm struct {
	AlarmName string `json:"AlarmName,omitempty" query:"AlarmName"`
}

// DescribeAlarmsInput is DescribeAlarms' request.
type DescribeAlarmsInput struct {
	AlarmNames          []string `json:"AlarmNames,omitempty" query:"AlarmNames,wrapped"`
	AlarmNamePrefix     *string  `json:"AlarmNamePrefix,omitempty" query:"AlarmNamePrefix"`
	AlarmTypes          []string `json:"AlarmTypes,omitempty" query:"AlarmTypes,wrapped"`
	ChildrenOfAlarmName *string  `json:"ChildrenOfAlarmName,omitempty" query:"ChildrenOfAlarmName"`
	ParentsOfAlarmName  *string  `json:"ParentsOfAlarmName,omitempty" query:"ParentsOfAlarmName"`
	StateValue          string   `json:"StateValue,omitempty" query:"StateValue"`
	ActionPrefix        *string  `json:"ActionPrefix,omitempty" query:"ActionPrefix"`
	MaxRecords          *int32   `json:"MaxRecords,omitempty" query:"MaxRecords"`
	NextToken           string   `json:"NextToken,omitempty" query:"NextToken"`
}

// DescribeAlarmsOutput is DescribeAlarms' response.
type DescribeAlarmsOutput struct {
	CompositeAlarms []CompositeAlarm `json:"CompositeAlarms" query:"CompositeAlarms,wrapped"`
	MetricAlarms    []MetricAlarm    `json:"MetricAlarms" query:"MetricAlarms,wrapped"`
	NextToken       string           `json:"NextToken,omitempty" query:"NextToken"`
}

// DescribeAlarmsForMetricInput is DescribeAlarmsForMetric's request.
type DescribeAlarmsForMetricInput struct {
	MetricName        string      `json:"MetricName,omitempty" query:"MetricName"`
	Namespace         string      `json:"Namespace,omitempty" query:"Namespace"`
	Statistic         string      `json:"Statistic,omitempty" query:"Statistic"`
	ExtendedStatistic string      `json:"ExtendedStatistic,omitempty" query:"ExtendedStatistic"`
	Dimensions        []Dimension `json:"Dimensions,omitempty" query:"Dimensions,wrapped"`
	Period            *int32      `json:"Period,omitempty" query:"Period"`
	Unit              string      `json:"Unit,omitempty" query:"Unit"`
}

// DescribeAlarmsForMetricOutput is DescribeAlarmsForMetric's response.
type DescribeAlarmsForMetricOutput struct {
	MetricAlarms []MetricAlarm `json:"MetricAlarms" query:"MetricAlarms,wrapped"`
}

// AlarmNamesInput is the request of DeleteAlarms, EnableAlarmActions and
// DisableAlarmActions.
type AlarmNamesInput struct {
	AlarmNames []string `json:"AlarmNames,omitempty" query:"AlarmNames,wrapped"`
}

// SetAlarmStateInput is SetAlarmState's request.
type SetAlarmStateInput struct {
	AlarmName       string  `json:"AlarmName,omitempty" query:"AlarmName"`
	StateValue      string  `json:"StateValue,omitempty" query:"StateValue"`
	StateReason     *string `json:"StateReason,omitempty" query:"StateReason"`
	StateReasonData *string `json:"StateReasonData,omitempty" query:"StateReasonData"`
}

// DescribeAlarmHistoryInput is DescribeAlarmHistory's request.
type DescribeAlarmHistoryInput struct {
	AlarmName       *string    `json:"AlarmName,omitempty" query:"AlarmName"`
	AlarmTypes      []string   `json:"AlarmTypes,omitempty" query:"AlarmTypes,wrapped"`
	HistoryItemType string     `json:"HistoryItemType,omitempty" query:"HistoryItemType"`
	StartDate       *time.Time `json:"StartDate,omitempty" query:"StartDate"`
	EndDate         *time.Time `json:"EndDate,omitempty" query:"EndDate"`
	MaxRecords      *int32     `json:"MaxRecords,omitempty" query:"MaxRecords"`
	NextToken       string     `json:"NextToken,omitempty" query:"NextToken"`
	ScanBy          string     `json:"ScanBy,omitempty" query:"ScanBy"`
}

// AlarmHistoryItem is one entry of an alarm's history.
type AlarmHistoryItem struct {
	AlarmName       string     `json:"AlarmName,omitempty" query:"AlarmName"`
	AlarmType       string     `json:"AlarmType,omitempty" query:"AlarmType"`
	Timestamp       *time.Time `json:"Timestamp,omitempty" query:"Timestamp"`
	HistoryItemType string     `json:"HistoryItemType,omitempty" query:"HistoryItemType"`
	HistorySummary  string     `json:"HistorySummary,omitempty" query:"HistorySummary"`
	HistoryData     string     `json:"HistoryData,omitempty" query:"HistoryData"`
}

// DescribeAlarmHistoryOutput is DescribeAlarmHistory's response.
type DescribeAlarmHistoryOutput struct {
	AlarmHistoryItems []AlarmHistoryItem `json:"AlarmHistoryItems" query:"AlarmHistoryItems,wrapped"`
	NextToken         string             `json:"NextToken,omitempty" query:"NextToken"`
}

// ResourceARNInput is ListTagsForResource's request.
type ResourceARNInput struct {
	ResourceARN string `json:"ResourceARN,omitempty" query:"ResourceARN"`
}

// TagResourceInput is TagResource's request.
type TagResourceInput struct {
	ResourceARN string `json:"ResourceARN,omitempty" query:"ResourceARN"`
	Tags        []Tag  `json:"Tags,omitempty" query:"Tags,wrapped"`
}

// UntagResourceInput is UntagResource's request.
type UntagResourceInput struct {
	ResourceARN string   `json:"ResourceARN,omitempty" query:"ResourceARN"`
	TagKeys     []string `json:"TagKeys,omitempty" query:"TagKeys,wrapped"`
}

// ListTagsForResourceOutput is ListTagsForResource's response.
type ListTagsForResourceOutput struct {
	Tags []Tag `json:"Tags" query:"Tags,wrapped"`
}

// EmptyOutput answers actions without output members.
type EmptyOutput struct{}
