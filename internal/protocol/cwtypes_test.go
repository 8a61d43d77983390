package protocol

import (
	"context"
	"net/http"
	"time"
)

// CloudWatch-like inputs and outputs (a subset of the model's members), for
// the RPC v2 CBOR, JSON and query wires.

type cwDimension struct {
	Name  string `json:"Name" query:"Name"`
	Value string `json:"Value" query:"Value"`
}

type cwStatisticSet struct {
	SampleCount *float64 `json:"SampleCount" query:"SampleCount"`
	Sum         *float64 `json:"Sum" query:"Sum"`
	Minimum     *float64 `json:"Minimum" query:"Minimum"`
	Maximum     *float64 `json:"Maximum" query:"Maximum"`
}

type cwDatum struct {
	MetricName        string          `json:"MetricName" query:"MetricName"`
	Dimensions        []cwDimension   `json:"Dimensions,omitempty" query:"Dimensions,wrapped"`
	Timestamp         *time.Time      `json:"Timestamp,omitempty" query:"Timestamp"`
	Value             *float64        `json:"Value,omitempty" query:"Value"`
	StatisticValues   *cwStatisticSet `json:"StatisticValues,omitempty" query:"StatisticValues"`
	Values            []float64       `json:"Values,omitempty" query:"Values,wrapped"`
	Counts            []float64       `json:"Counts,omitempty" query:"Counts,wrapped"`
	Unit              string          `json:"Unit,omitempty" query:"Unit"`
	StorageResolution *int32          `json:"StorageResolution,omitempty" query:"StorageResolution"`
}

type cwPutMetricDataInput struct {
	Namespace              string    `json:"Namespace" query:"Namespace"`
	MetricData             []cwDatum `json:"MetricData,omitempty" query:"MetricData,wrapped"`
	StrictEntityValidation *bool     `json:"StrictEntityValidation,omitempty" query:"StrictEntityValidation"`
}

type cwMetric struct {
	Namespace  string        `json:"Namespace,omitempty" query:"Namespace"`
	MetricName string        `json:"MetricName,omitempty" query:"MetricName"`
	Dimensions []cwDimension `json:"Dimensions,omitempty" query:"Dimensions,wrapped"`
}

type cwMetricStat struct {
	Metric cwMetric `json:"Metric" query:"Metric"`
	Period int32    `json:"Period" query:"Period"`
	Stat   string   `json:"Stat" query:"Stat"`
	Unit   string   `json:"Unit,omitempty" query:"Unit"`
}

type cwQuery struct {
	Id         string        `json:"Id" query:"Id"`
	MetricStat *cwMetricStat `json:"MetricStat,omitempty" query:"MetricStat"`
	Expression *string       `json:"Expression,omitempty" query:"Expression"`
	Label      *string       `json:"Label,omitempty" query:"Label"`
	ReturnData *bool         `json:"ReturnData,omitempty" query:"ReturnData"`
	Period     *int32        `json:"Period,omitempty" query:"Period"`
}

type cwGetMetricDataInput struct {
	MetricDataQueries []cwQuery  `json:"MetricDataQueries" query:"MetricDataQueries,wrapped"`
	StartTime         time.Time  `json:"StartTime" query:"StartTime"`
	EndTime           time.Time  `json:"EndTime" query:"EndTime"`
	NextToken         *string    `json:"NextToken,omitempty" query:"NextToken"`
	ScanBy            string     `json:"ScanBy,omitempty" query:"ScanBy"`
	MaxDatapoints     *int32     `json:"MaxDatapoints,omitempty" query:"MaxDatapoints"`
	Unused            *time.Time `json:"Unused,omitempty" query:"Unused"`
}

type cwMessage struct {
	Code  string `json:"Code,omitempty" query:"Code"`
	Value string `json:"Value,omitempty" query:"Value"`
}

type cwResult struct {
	Id         string      `json:"Id,omitempty" query:"Id"`
	Label      string      `json:"Label,omitempty" query:"Label"`
	Timestamps []time.Time `json:"Timestamps,omitempty" query:"Timestamps,wrapped"`
	Values     []float64   `json:"Values,omitempty" query:"Values,wrapped"`
	StatusCode string      `json:"StatusCode,omitempty" query:"StatusCode"`
	Messages   []cwMessage `json:"Messages,omitempty" query:"Messages,wrapped"`
}

type cwGetMetricDataOutput struct {
	MetricDataResults []cwResult  `json:"MetricDataResults" query:"MetricDataResults,wrapped"`
	NextToken         *string     `json:"NextToken,omitempty" query:"NextToken"`
	Messages          []cwMessage `json:"Messages,omitempty" query:"Messages,wrapped"`
}

type cwDescribeAlarmsInput struct {
	AlarmNames      []string `json:"AlarmNames,omitempty" query:"AlarmNames,wrapped"`
	AlarmNamePrefix *string  `json:"AlarmNamePrefix,omitempty" query:"AlarmNamePrefix"`
	MaxRecords      *int32   `json:"MaxRecords,omitempty" query:"MaxRecords"`
	StateValue      string   `json:"StateValue,omitempty" query:"StateValue"`
}

type cwMetricAlarm struct {
	AlarmName                          string        `json:"AlarmName,omitempty" query:"AlarmName"`
	AlarmArn                           string        `json:"AlarmArn,omitempty" query:"AlarmArn"`
	ActionsEnabled                     *bool         `json:"ActionsEnabled,omitempty" query:"ActionsEnabled"`
	AlarmActions                       []string      `json:"AlarmActions,omitempty" query:"AlarmActions,wrapped"`
	AlarmConfigurationUpdatedTimestamp *time.Time    `json:"AlarmConfigurationUpdatedTimestamp,omitempty" query:"AlarmConfigurationUpdatedTimestamp"`
	StateValue                         string        `json:"StateValue,omitempty" query:"StateValue"`
	StateUpdatedTimestamp              *time.Time    `json:"StateUpdatedTimestamp,omitempty" query:"StateUpdatedTimestamp"`
	Dimensions                         []cwDimension `json:"Dimensions,omitempty" query:"Dimensions,wrapped"`
	EvaluationPeriods                  *int32        `json:"EvaluationPeriods,omitempty" query:"EvaluationPeriods"`
	Period                             *int32        `json:"Period,omitempty" query:"Period"`
	Threshold                          *float64      `json:"Threshold,omitempty" query:"Threshold"`
	ComparisonOperator                 string        `json:"ComparisonOperator,omitempty" query:"ComparisonOperator"`
	Metrics                            []cwQuery     `json:"Metrics,omitempty" query:"Metrics,wrapped"`
}

type cwDescribeAlarmsOutput struct {
	MetricAlarms []cwMetricAlarm `json:"MetricAlarms,omitempty" query:"MetricAlarms,wrapped"`
	NextToken    *string         `json:"NextToken,omitempty" query:"NextToken"`
}

type cwDeleteAlarmsInput struct {
	AlarmNames []string `json:"AlarmNames" query:"AlarmNames,wrapped"`
}

// cwBlobs exercises the kinds CloudWatch itself has no member of.
type cwBlobs struct {
	Data  []byte            `json:"Data,omitempty" query:"Data"`
	Tags  map[string]string `json:"Tags,omitempty" query:"Tags,wrapped"`
	I64   *int64            `json:"I64,omitempty" query:"I64"`
	F32   float32           `json:"F32,omitempty" query:"F32"`
	Flag  bool              `json:"Flag" query:"Flag"`
	Skip  string            `json:"-" query:"Skip"`
	Plain string
}

const (
	cwNS         = "http://monitoring.amazonaws.com/doc/2010-08-01/"
	cwRPCService = "GraniteServiceVersion20100801"
)

var (
	errCWResourceNotFound = &Error{Shape: "ResourceNotFound", Code: "ResourceNotFound", Status: http.StatusNotFound,
		Message: "The named resource does not exist."}
	errCWInvalidParameterValue = &Error{Shape: "InvalidParameterValueException", Code: "InvalidParameterValue", Status: http.StatusBadRequest,
		Message: "The value -1 for parameter Threshold is invalid."}
)

// cwService is a CloudWatch-like service whose actions echo their input
// into their output, or fail as told.
func cwService(rec *recorder) *Service {
	s := &Service{
		JSONTargetPrefix: cwRPCService,
		RPCv2ServiceName: cwRPCService,
		ShapeNamespace:   "com.amazonaws.cloudwatch",
		Version:          "2010-08-01",
		XMLNamespace:     cwNS,
		SigningName:      "monitoring",
		Actions:          map[string]Action{},
	}
	for _, a := range []Action{
		Define("PutMetricData", func(ctx context.Context, in *cwPutMetricDataInput) (*emptyOutput, error) {
			rec.record(ctx, "PutMetricData", in)
			return &emptyOutput{}, nil
		}),
		Define("GetMetricData", func(ctx context.Context, in *cwGetMetricDataInput) (*cwGetMetricDataOutput, error) {
			rec.record(ctx, "GetMetricData", in)
			out := &cwGetMetricDataOutput{NextToken: in.NextToken}
			for _, q := range in.MetricDataQueries {
				label := q.Id
				if q.Label != nil {
					label = *q.Label
				}
				out.MetricDataResults = append(out.MetricDataResults, cwResult{
					Id: q.Id, Label: label, StatusCode: "Complete",
					Timestamps: []time.Time{in.StartTime, in.EndTime},
					Values:     []float64{1, 0.5, 1e-5, -2.25e10},
				})
			}
			return out, nil
		}),
		Define("DescribeAlarms", func(ctx context.Context, in *cwDescribeAlarmsInput) (*cwDescribeAlarmsOutput, error) {
			rec.record(ctx, "DescribeAlarms", in)
			return &cwDescribeAlarmsOutput{MetricAlarms: cwAlarms}, nil
		}),
		Define("DeleteAlarms", func(ctx context.Context, in *cwDeleteAlarmsInput) (*emptyOutput, error) {
			rec.record(ctx, "DeleteAlarms", in)
			return nil, errCWResourceNotFound
		}),
		Define("PutMetricAlarm", func(ctx context.Context, in *cwMetricAlarm) (*emptyOutput, error) {
			rec.record(ctx, "PutMetricAlarm", in)
			if in.Threshold != nil && *in.Threshold < 0 {
				return nil, errCWInvalidParameterValue
			}
			return &emptyOutput{}, nil
		}),
		Define("Blobs", func(ctx context.Context, in *cwBlobs) (*cwBlobs, error) {
			rec.record(ctx, "Blobs", in)
			return in, nil
		}),
	} {
		s.Actions[a.Name] = a
	}
	return s
}

// record notes an action's input.
func (r *recorder) record(ctx context.Context, name string, in any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.action, r.input, r.info = name, in, *Info(ctx)
}

var (
	cwT1 = time.Date(2026, 1, 2, 3, 4, 5, 123e6, time.UTC)
	cwT2 = time.Date(2026, 1, 2, 3, 5, 0, 0, time.UTC)
)

// cwAlarms is what DescribeAlarms answers.
var cwAlarms = []cwMetricAlarm{{
	AlarmName:                          "high-cpu",
	AlarmArn:                           "arn:aws:cloudwatch:us-east-1:000000000000:alarm:high-cpu",
	ActionsEnabled:                     ptr(true),
	AlarmActions:                       []string{"arn:aws:sns:us-east-1:000000000000:ops"},
	AlarmConfigurationUpdatedTimestamp: &cwT1,
	StateValue:                         "ALARM",
	StateUpdatedTimestamp:              &cwT2,
	Dimensions:                         []cwDimension{{Name: "QueueName", Value: "jobs"}},
	EvaluationPeriods:                  ptr(int32(3)),
	Period:                             ptr(int32(60)),
	Threshold:                          ptr(90.5),
	ComparisonOperator:                 "GreaterThanThreshold",
	Metrics: []cwQuery{{Id: "m1", ReturnData: ptr(false), MetricStat: &cwMetricStat{
		Metric: cwMetric{Namespace: "AWS/SQS", MetricName: "NumberOfMessagesSent", Dimensions: []cwDimension{{Name: "QueueName", Value: "jobs"}}},
		Period: 60, Stat: "Sum",
	}}},
}}
