package cloudwatch

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ferrymq/ferry/internal/metrics"
)

// Enumerations of the CloudWatch model, in the model's order (validation
// messages list them so).
var (
	statistics          = []string{"SampleCount", "Average", "Sum", "Minimum", "Maximum"}
	comparisonOperators = []string{"GreaterThanOrEqualToThreshold", "GreaterThanThreshold", "LessThanThreshold",
		"LessThanOrEqualToThreshold", "LessThanLowerOrGreaterThanUpperThreshold", "LessThanLowerThreshold", "GreaterThanUpperThreshold"}
	stateValues      = []string{"OK", "ALARM", "INSUFFICIENT_DATA"}
	alarmTypes       = []string{"CompositeAlarm", "MetricAlarm"}
	historyItemTypes = []string{"ConfigurationUpdate", "StateUpdate", "Action", "AlarmContributorStateUpdate", "AlarmContributorAction"}
	scanBys          = []string{"TimestampDescending", "TimestampAscending"}
	standardUnits    = []string{"Seconds", "Microseconds", "Milliseconds", "Bytes", "Kilobytes", "Megabytes", "Gigabytes", "Terabytes",
		"Bits", "Kilobits", "Megabits", "Gigabits", "Terabits", "Percent", "Count", "Bytes/Second", "Kilobytes/Second",
		"Megabytes/Second", "Gigabytes/Second", "Terabytes/Second", "Bits/Second", "Kilobits/Second", "Megabits/Second",
		"Gigabits/Second", "Terabits/Second", "Count/Second", "None"}
	treatMissingValues = []string{"breaching", "notBreaching", "ignore", "missing"}
)

// Alarm states.
const (
	stateOK           = "OK"
	stateAlarm        = "ALARM"
	stateInsufficient = "INSUFFICIENT_DATA"
)

// unitOf is the unit CloudWatch reports for a metric of Ferry's: sizes in
// bytes, ages in seconds, everything else a count.
func unitOf(metric string) string {
	switch metric {
	case metrics.SentMessageSize, metrics.PublishSize:
		return "Bytes"
	case metrics.AgeOfOldestMessage:
		return "Seconds"
	}
	return "Count"
}

// cwTime is a timestamp as CloudWatch writes it inside its JSON documents
// (StateReasonData, history data, alarm notifications).
func cwTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000-0700") }

// reasonTime is a datapoint's time in a state reason: 30/11/26 03:10:00.
func reasonTime(t time.Time) string { return t.UTC().Format("02/01/06 15:04:05") }

// formatDouble writes f as Java's Double.toString does, which is how
// CloudWatch prints numbers in its texts and JSON: 1.0, 21.5, 1.0E7.
func formatDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		return "0.0"
	}
	abs := math.Abs(f)
	if abs >= 1e-3 && abs < 1e7 {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(f, 'E', -1, 64) // 1.5E+07
	mant, exp, _ := strings.Cut(s, "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}

// javaDouble marshals as formatDouble writes it.
type javaDouble float64

func (d javaDouble) MarshalJSON() ([]byte, error) { return []byte(formatDouble(float64(d))), nil }

// regionNames are the display names CloudWatch uses in alarm notifications.
var regionNames = map[string]string{
	"us-east-1":      "US East (N. Virginia)",
	"us-east-2":      "US East (Ohio)",
	"us-west-1":      "US West (N. California)",
	"us-west-2":      "US West (Oregon)",
	"ca-central-1":   "Canada (Central)",
	"eu-west-1":      "EU (Ireland)",
	"eu-west-2":      "EU (London)",
	"eu-west-3":      "EU (Paris)",
	"eu-central-1":   "EU (Frankfurt)",
	"eu-north-1":     "EU (Stockholm)",
	"eu-south-1":     "EU (Milan)",
	"ap-south-1":     "Asia Pacific (Mumbai)",
	"ap-northeast-1": "Asia Pacific (Tokyo)",
	"ap-northeast-2": "Asia Pacific (Seoul)",
	"ap-northeast-3": "Asia Pacific (Osaka)",
	"ap-southeast-1": "Asia Pacific (Singapore)",
	"ap-southeast-2": "Asia Pacific (Sydney)",
	"ap-east-1":      "Asia Pacific (Hong Kong)",
	"sa-east-1":      "South America (Sao Paulo)",
	"me-south-1":     "Middle East (Bahrain)",
	"af-south-1":     "Africa (Cape Town)",
}

func regionName(region string) string {
	if n, ok := regionNames[region]; ok {
		return n
	}
	return region
}
