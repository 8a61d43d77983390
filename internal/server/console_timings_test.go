package server_test

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/chromedp/chromedp"
)

// consoleTimingsEnv runs TestConsoleBrowserTimings: it fills a queue with 100,000
// messages on disk, which takes longer than CI's tests should.
const consoleTimingsEnv = "FERRY_CONSOLE_TIMINGS"

// TestConsoleBrowserTimings measures the console in the browser against a
// dead-letter queue of 100,000 messages in the embedded store on disk:
// from navigation to the overview shown, from the overview to the DLQ's
// first page of messages shown, and from a SendMessage to the overview's
// count showing it (the event stream's path). Run it under the bench lock:
//
//	FERRY_CONSOLE_TIMINGS=1 flock /tmp/ferry-bench.lock go test ./internal/server -run TestConsoleBrowserTimings -count=1 -v
func TestConsoleBrowserTimings(t *testing.T) {
	if os.Getenv(consoleTimingsEnv) == "" {
		t.Skipf("set %s=1 to measure the console with a queue of 100,000 messages", consoleTimingsEnv)
	}
	embeddedOnly(t, "the figures are the embedded store's")
	const total, rounds = 100_000, 5
	f := start(t, onDisk(t.TempDir()))
	dlq := f.createQueue(t, "big-dlq", nil)
	f.createQueue(t, "big", map[string]string{"RedrivePolicy": redrivePolicy("big-dlq", 1)})
	src := f.createQueue(t, "live", nil)

	began := time.Now()
	fillQueue(t, f.json, dlq, total)
	t.Logf("filled big-dlq with %d messages in %v", total, time.Since(began).Round(time.Millisecond))

	b := openConsole(t, f, "#/alarms")
	// measure times act, after setup, in each round.
	measure := func(what string, setup, act func()) {
		t.Helper()
		var ds []time.Duration
		for range rounds {
			setup()
			t0 := time.Now()
			act()
			ds = append(ds, time.Since(t0))
		}
		slices.Sort(ds)
		t.Logf("%s: median %v, min %v, max %v (%d rounds)", what, ds[len(ds)/2].Round(time.Millisecond),
			ds[0].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond), rounds)
	}
	blank := func() { b.do("leave the console", chromedp.Navigate("about:blank")) }
	firstPage := func() {
		b.until("the first page", `document.querySelectorAll("#message-table tbody tr").length === 50`)
	}

	var inPage []float64
	measure("navigation to the overview rendered", blank, func() {
		b.do("load the overview", chromedp.Navigate(b.base+"#/"))
		b.until("the DLQ's count", fmt.Sprintf(`document.querySelector('tr[data-queue="big-dlq"] td:nth-child(2)')?.textContent === %q`, "100,000"))
		inPage = append(inPage, eval[float64](b, `performance.getEntriesByName("ferry:view")[0].startTime`))
	})
	slices.Sort(inPage)
	t.Logf("  of which in the page, from navigation start to the overview shown (performance timeline): median %.0fms, min %.0fms, max %.0fms",
		inPage[len(inPage)/2], inPage[0], inPage[len(inPage)-1])
	measure("overview to the DLQ's first page rendered (in the page)", func() {
		b.route("#/")
		b.visible(`tr[data-queue="big-dlq"]`)
	}, func() {
		b.route("#/queues/big-dlq")
		firstPage()
	})
	measure("navigation to the DLQ's first page rendered", blank, func() {
		b.do("load the DLQ", chromedp.Navigate(b.base+"#/queues/big-dlq"))
		firstPage()
	})
	b.route("#/")
	b.visible(`tr[data-queue="live"]`)
	b.until("the live stream", `document.getElementById("live").dataset.state === "live"`)
	n := 0
	measure("SendMessage to the overview's count updated (event stream)", func() { n++ }, func() {
		if _, err := f.json.SendMessage(ctxT(t), &sqs.SendMessageInput{QueueUrl: aws.String(src), MessageBody: aws.String("tick")}); err != nil {
			t.Fatal(err)
		}
		b.until("the live count", fmt.Sprintf(`document.querySelector('tr[data-queue="live"] td:nth-child(2)').textContent === %q`, strconv.Itoa(n)))
	})
}
