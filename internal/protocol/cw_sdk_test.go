package protocol

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	awsv1 "github.com/aws/aws-sdk-go/aws"
	"github.com/aws/aws-sdk-go/aws/awserr"
	credv1 "github.com/aws/aws-sdk-go/aws/credentials"
	"github.com/aws/aws-sdk-go/aws/session"
	cwv1 "github.com/aws/aws-sdk-go/service/cloudwatch"
	"github.com/aws/smithy-go"

	"github.com/ferrymq/ferry/internal/bench"
)

// cwServer serves the CloudWatch-like service on a real listener. It keeps
// the last request's headers and body, so tests can see what the SDK sent.
type cwServer struct {
	url string
	rec *recorder
	raw chan capturedRequest
}

type capturedRequest struct {
	header http.Header
	path   string
	body   []byte
}

func newCWServer(t *testing.T) *cwServer {
	t.Helper()
	rec := &recorder{}
	h := &Handler{Services: []*Service{cwService(rec)}}
	if err := h.Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
	s := &cwServer{rec: rec, raw: make(chan capturedRequest, 16)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		select {
		case s.raw <- capturedRequest{header: r.Header.Clone(), path: r.URL.Path, body: body}:
		default:
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

func (s *cwServer) lastRaw(t *testing.T) capturedRequest {
	t.Helper()
	var last capturedRequest
	for {
		select {
		case c := <-s.raw:
			last = c
		default:
			if last.header == nil {
				t.Fatal("no request reached the server")
			}
			return last
		}
	}
}

func (s *cwServer) v2() *cloudwatch.Client {
	return cloudwatch.New(cloudwatch.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(s.url),
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDCW", "secret", ""),
		RetryMaxAttempts: 1,
		HTTPClient:       &http.Client{Transport: bench.PlainBodies{Next: http.DefaultTransport}},
	})
}

func (s *cwServer) v1() *cwv1.CloudWatch {
	sess := session.Must(session.NewSession(&awsv1.Config{
		Region:      awsv1.String("us-east-1"),
		Endpoint:    awsv1.String(s.url),
		Credentials: credv1.NewStaticCredentials("AKIDCW", "secret", ""),
		MaxRetries:  awsv1.Int(0),
		// A client of its own: with AWS_CA_BUNDLE set, the SDK installs
		// the bundle in it, which would otherwise be http.DefaultClient.
		HTTPClient: &http.Client{},
	}))
	return cwv1.New(sess)
}

func cwCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestCBORSDKPutMetricData decodes what aws-sdk-go-v2 sends over RPC v2
// CBOR: nested structures, lists of doubles, timestamps, optional members.
func TestCBORSDKPutMetricData(t *testing.T) {
	t.Parallel()
	s := newCWServer(t)
	_, err := s.v2().PutMetricData(cwCtx(t), &cloudwatch.PutMetricDataInput{
		Namespace: aws.String("Ferry/Test"),
		MetricData: []cwtypes.MetricDatum{
			{
				MetricName: aws.String("Latency"),
				Dimensions: []cwtypes.Dimension{{Name: aws.String("QueueName"), Value: aws.String("jobs")}},
				Timestamp:  aws.Time(cwT1),
				Value:      aws.Float64(0.25),
				Unit:       cwtypes.StandardUnitMilliseconds,
			},
			{
				MetricName:        aws.String("Sizes"),
				Values:            []float64{1, 2.5, -3e-7},
				Counts:            []float64{10, 1, 2},
				StorageResolution: aws.Int32(1),
				StatisticValues: &cwtypes.StatisticSet{
					SampleCount: aws.Float64(13), Sum: aws.Float64(42.5), Minimum: aws.Float64(-3e-7), Maximum: aws.Float64(2.5),
				},
			},
		},
		StrictEntityValidation: aws.Bool(false),
	})
	if err != nil {
		t.Fatalf("PutMetricData: %v", err)
	}
	raw := s.lastRaw(t)
	if got := raw.header.Get("Smithy-Protocol"); got != "rpc-v2-cbor" {
		t.Fatalf("the SDK did not speak RPC v2 CBOR: smithy-protocol %q, path %s", got, raw.path)
	}
	if raw.path != "/service/GraniteServiceVersion20100801/operation/PutMetricData" {
		t.Errorf("path %s", raw.path)
	}
	name, in, info := s.rec.last()
	if name != "PutMetricData" || info.Protocol != "rpcv2-cbor" || info.Region != "us-east-1" || info.AccessKey != "AKIDCW" {
		t.Fatalf("action %s, info %+v", name, info)
	}
	want := &cwPutMetricDataInput{
		Namespace: "Ferry/Test",
		MetricData: []cwDatum{
			{
				MetricName: "Latency",
				Dimensions: []cwDimension{{Name: "QueueName", Value: "jobs"}},
				Timestamp:  &cwT1,
				Value:      ptr(0.25),
				Unit:       "Milliseconds",
			},
			{
				MetricName:        "Sizes",
				Values:            []float64{1, 2.5, -3e-7},
				Counts:            []float64{10, 1, 2},
				StorageResolution: ptr(int32(1)),
				StatisticValues:   &cwStatisticSet{SampleCount: ptr(13.0), Sum: ptr(42.5), Minimum: ptr(-3e-7), Maximum: ptr(2.5)},
			},
		},
		StrictEntityValidation: ptr(false),
	}
	if !reflect.DeepEqual(in, want) {
		t.Errorf("decoded\n%+v\nwant\n%+v", in, want)
	}

	// The same bytes through the codec alone (the SDK gzips PutMetricData).
	body := raw.body
	if raw.header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	var direct cwPutMetricDataInput
	pc := &planCache{}
	c, _ := pc.plan(reflect.TypeFor[cwPutMetricDataInput]())
	if err := decodeCBOR(c, body, reflect.ValueOf(&direct).Elem()); err != nil || !reflect.DeepEqual(&direct, want) {
		t.Errorf("decodeCBOR of the SDK's body: %v\n%+v", err, direct)
	}
}

// TestCBORSDKOutputs has aws-sdk-go-v2 decode Ferry's CBOR answers.
func TestCBORSDKOutputs(t *testing.T) {
	t.Parallel()
	s := newCWServer(t)
	ctx := cwCtx(t)
	cl := s.v2()

	start, end := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC), time.Date(2026, 1, 2, 4, 0, 0, 500e6, time.UTC)
	md, err := cl.GetMetricData(ctx, &cloudwatch.GetMetricDataInput{
		StartTime: aws.Time(start), EndTime: aws.Time(end), NextToken: aws.String("tok"),
		MetricDataQueries: []cwtypes.MetricDataQuery{
			{Id: aws.String("m1"), MetricStat: &cwtypes.MetricStat{
				Metric: &cwtypes.Metric{Namespace: aws.String("AWS/SQS"), MetricName: aws.String("NumberOfMessagesSent"),
					Dimensions: []cwtypes.Dimension{{Name: aws.String("QueueName"), Value: aws.String("jobs")}}},
				Period: aws.Int32(60), Stat: aws.String("Sum"),
			}},
			{Id: aws.String("e1"), Expression: aws.String("m1*2"), Label: aws.String("double"), ReturnData: aws.Bool(true)},
		},
	})
	if err != nil {
		t.Fatalf("GetMetricData: %v", err)
	}
	_, in, _ := s.rec.last()
	gin := in.(*cwGetMetricDataInput)
	if !gin.StartTime.Equal(start) || !gin.EndTime.Equal(end) || gin.MetricDataQueries[0].MetricStat.Period != 60 ||
		gin.MetricDataQueries[0].MetricStat.Metric.Dimensions[0].Value != "jobs" || *gin.MetricDataQueries[1].Expression != "m1*2" {
		t.Errorf("decoded input %+v", gin)
	}
	if len(md.MetricDataResults) != 2 || aws.ToString(md.NextToken) != "tok" {
		t.Fatalf("output %+v", md)
	}
	r := md.MetricDataResults[1]
	if aws.ToString(r.Id) != "e1" || aws.ToString(r.Label) != "double" || r.StatusCode != cwtypes.StatusCodeComplete {
		t.Errorf("result %+v", r)
	}
	if !reflect.DeepEqual(r.Values, []float64{1, 0.5, 1e-5, -2.25e10}) {
		t.Errorf("values %v", r.Values)
	}
	if len(r.Timestamps) != 2 || !r.Timestamps[0].Equal(start) || !r.Timestamps[1].Equal(end) {
		t.Errorf("timestamps %v", r.Timestamps)
	}

	da, err := cl.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{AlarmNames: []string{"high-cpu"}, MaxRecords: aws.Int32(10)})
	if err != nil {
		t.Fatalf("DescribeAlarms: %v", err)
	}
	if len(da.MetricAlarms) != 1 {
		t.Fatalf("alarms %+v", da.MetricAlarms)
	}
	a, w := da.MetricAlarms[0], cwAlarms[0]
	switch {
	case aws.ToString(a.AlarmName) != w.AlarmName, aws.ToString(a.AlarmArn) != w.AlarmArn,
		!aws.ToBool(a.ActionsEnabled), !reflect.DeepEqual(a.AlarmActions, w.AlarmActions),
		!aws.ToTime(a.AlarmConfigurationUpdatedTimestamp).Equal(cwT1), !aws.ToTime(a.StateUpdatedTimestamp).Equal(cwT2),
		a.StateValue != cwtypes.StateValueAlarm, aws.ToInt32(a.EvaluationPeriods) != 3, aws.ToInt32(a.Period) != 60,
		aws.ToFloat64(a.Threshold) != 90.5, a.ComparisonOperator != cwtypes.ComparisonOperatorGreaterThanThreshold,
		len(a.Dimensions) != 1 || aws.ToString(a.Dimensions[0].Value) != "jobs",
		len(a.Metrics) != 1 || aws.ToBool(a.Metrics[0].ReturnData) || aws.ToInt32(a.Metrics[0].MetricStat.Period) != 60,
		aws.ToString(a.Metrics[0].MetricStat.Metric.Dimensions[0].Name) != "QueueName":
		t.Errorf("alarm as the SDK read it: %+v", a)
	}
	_, in, _ = s.rec.last()
	if d := in.(*cwDescribeAlarmsInput); !reflect.DeepEqual(d.AlarmNames, []string{"high-cpu"}) || *d.MaxRecords != 10 {
		t.Errorf("DescribeAlarms input %+v", d)
	}
}

// TestCBORSDKErrors: the SDK surfaces the query-compatible error code.
func TestCBORSDKErrors(t *testing.T) {
	t.Parallel()
	s := newCWServer(t)
	ctx := cwCtx(t)
	cl := s.v2()
	tests := []struct {
		name     string
		call     func() error
		code     string
		status   string
		typed    any
		messages string
	}{
		{"modeled 404", func() error {
			_, err := cl.DeleteAlarms(ctx, &cloudwatch.DeleteAlarmsInput{AlarmNames: []string{"nope"}})
			return err
		}, "ResourceNotFound", "404", new(*cwtypes.ResourceNotFound), errCWResourceNotFound.Message},
		{"query code differs from the shape", func() error {
			_, err := cl.PutMetricAlarm(ctx, &cloudwatch.PutMetricAlarmInput{AlarmName: aws.String("a"), Threshold: aws.Float64(-1)})
			return err
		}, "InvalidParameterValue", "400", new(*cwtypes.InvalidParameterValueException), errCWInvalidParameterValue.Message},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			var ae smithy.APIError
			if !errors.As(err, &ae) {
				t.Fatalf("not an APIError: %v", err)
			}
			if ae.ErrorCode() != tt.code || ae.ErrorMessage() != tt.messages || ae.ErrorFault() != smithy.FaultClient {
				t.Errorf("code %q message %q fault %v", ae.ErrorCode(), ae.ErrorMessage(), ae.ErrorFault())
			}
			if !errors.As(err, tt.typed) {
				t.Errorf("error %T is not the modeled %T", ae, tt.typed)
			}
		})
	}
}

// TestQuerySDKCloudWatch drives the same service over the query protocol
// with aws-sdk-go v1, as the AWS CLI does: timestamps and doubles in the
// form, ISO 8601 and Java-style doubles in the XML.
func TestQuerySDKCloudWatch(t *testing.T) {
	t.Parallel()
	s := newCWServer(t)
	cl := s.v1()
	_, err := cl.PutMetricDataWithContext(cwCtx(t), &cwv1.PutMetricDataInput{
		Namespace: awsv1.String("Ferry/Test"),
		MetricData: []*cwv1.MetricDatum{{
			MetricName: awsv1.String("Latency"),
			Dimensions: []*cwv1.Dimension{{Name: awsv1.String("QueueName"), Value: awsv1.String("jobs")}},
			Timestamp:  awsv1.Time(cwT1),
			Value:      awsv1.Float64(0.25),
			Values:     []*float64{awsv1.Float64(1), awsv1.Float64(1e-9)},
			StatisticValues: &cwv1.StatisticSet{SampleCount: awsv1.Float64(2), Sum: awsv1.Float64(1.5),
				Minimum: awsv1.Float64(0.5), Maximum: awsv1.Float64(1)},
		}},
	})
	if err != nil {
		t.Fatalf("PutMetricData: %v", err)
	}
	_, in, info := s.rec.last()
	want := &cwPutMetricDataInput{Namespace: "Ferry/Test", MetricData: []cwDatum{{
		MetricName: "Latency", Dimensions: []cwDimension{{Name: "QueueName", Value: "jobs"}},
		Timestamp: &cwT1, Value: ptr(0.25), Values: []float64{1, 1e-9},
		StatisticValues: &cwStatisticSet{SampleCount: ptr(2.0), Sum: ptr(1.5), Minimum: ptr(0.5), Maximum: ptr(1.0)},
	}}}
	if info.Protocol != "query" || !reflect.DeepEqual(in, want) {
		t.Errorf("protocol %s, decoded\n%+v\nwant\n%+v", info.Protocol, in, want)
	}

	start, end := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC), time.Date(2026, 1, 2, 4, 0, 0, 500e6, time.UTC)
	md, err := cl.GetMetricDataWithContext(cwCtx(t), &cwv1.GetMetricDataInput{
		StartTime: awsv1.Time(start), EndTime: awsv1.Time(end),
		MetricDataQueries: []*cwv1.MetricDataQuery{{Id: awsv1.String("e1"), Expression: awsv1.String("1")}},
	})
	if err != nil {
		t.Fatalf("GetMetricData: %v", err)
	}
	r := md.MetricDataResults[0]
	if awsv1.StringValue(r.Id) != "e1" || len(r.Values) != 4 || *r.Values[1] != 0.5 || *r.Values[2] != 1e-5 || *r.Values[3] != -2.25e10 ||
		len(r.Timestamps) != 2 || !r.Timestamps[0].Equal(start) || !r.Timestamps[1].Equal(end) {
		t.Errorf("result %v", r)
	}

	da, err := cl.DescribeAlarmsWithContext(cwCtx(t), &cwv1.DescribeAlarmsInput{AlarmNames: []*string{awsv1.String("high-cpu")}})
	if err != nil {
		t.Fatalf("DescribeAlarms: %v", err)
	}
	a := da.MetricAlarms[0]
	if !a.StateUpdatedTimestamp.Equal(cwT2) || !a.AlarmConfigurationUpdatedTimestamp.Equal(cwT1) || *a.Threshold != 90.5 ||
		*a.EvaluationPeriods != 3 || !*a.ActionsEnabled || *a.Metrics[0].MetricStat.Metric.Dimensions[0].Value != "jobs" {
		t.Errorf("alarm %v", a)
	}

	_, err = cl.DeleteAlarmsWithContext(cwCtx(t), &cwv1.DeleteAlarmsInput{AlarmNames: []*string{awsv1.String("x")}})
	var ae awserr.RequestFailure
	if !errors.As(err, &ae) || ae.Code() != "ResourceNotFound" || ae.StatusCode() != 404 || ae.Message() != errCWResourceNotFound.Message {
		t.Errorf("DeleteAlarms error %v", err)
	}
}
