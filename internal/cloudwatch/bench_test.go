package cloudwatch

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkEvaluate is one minute's evaluation of 1,000 alarms, each on
// its own active queue's counter with a datapoint per minute.
func BenchmarkEvaluate(b *testing.B) {
	r := newRig(b)
	ctx := context.Background()
	const alarms = 1000
	for m := 0; m < 10; m++ {
		for i := range alarms {
			r.record(fmt.Sprint("q", i), "NumberOfMessagesReceived", m, float64(i%3))
		}
	}
	for i := range alarms {
		in := input(fmt.Sprint("a", i))
		in.AlarmActions, in.OKActions = nil, nil
		in.Dimensions[0].Value = fmt.Sprint("q", i)
		in.EvaluationPeriods = ptr[int32](3)
		if _, err := r.svc.putMetricAlarm(ctx, in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r.svc.evaluate(ctx, nil, t0.Add(10*time.Minute))
	}
}
