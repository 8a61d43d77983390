package server_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/chromedp/chromedp"

	"github.com/ferrymq/ferry/internal/server"
	"github.com/ferrymq/ferry/internal/testwait"
)

// debianChromium is the browser the console's tests drive: Debian's
// chromium package.
const debianChromium = "/usr/bin/chromium"

var chromiumTool = outsideTool{
	require: "FERRY_REQUIRE_CHROMIUM",
	install: "install Debian's chromium (apt-get install chromium)",
	problem: func(ctx context.Context) string { return chromiumProblem(ctx, debianChromium) },
}

// chromiumProblem says why the browser at path cannot run the tests, or ""
// when it answers --version as Chromium does.
func chromiumProblem(ctx context.Context, path string) string {
	if _, err := os.Stat(path); err != nil {
		return fmt.Sprintf("no Chromium at %s: %v", path, err)
	}
	out, err := exec.CommandContext(ctx, path, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Chromium") {
		return fmt.Sprintf("the Chromium at %s does not run: %v: %q", path, err, out)
	}
	return ""
}

// browser is a headless Chromium tab on a Ferry's console. The page's
// uncaught exceptions and console errors (a CSP refusal among them) fail
// the test.
type browser struct {
	t    testing.TB
	ctx  context.Context
	base string // the console's address: http://127.0.0.1:port/console/

	mu     sync.Mutex
	errors []string
}

// browserFlags are the flags this machine's Chromium needs headless: no
// sandbox (tests run as root), and none of its background connections,
// which a closed network refuses.
func browserFlags(userDataDir string) []chromedp.ExecAllocatorOption {
	return []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(debianChromium),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(userDataDir),
		chromedp.WindowSize(1280, 800),
	}
}

// openConsole starts a browser and loads the console of f at route (a
// hash route, "#/"); it stops with the test.
func openConsole(t *testing.T, f *ferry, route string) *browser {
	t.Helper()
	chromiumTool.need(t)
	// The first action starts the browser: with no deadline, which would
	// end the browser with it. A Chromium that dies as it starts (seen
	// now and then on a loaded machine, with nothing said of why) is
	// started again, twice at most, each time with a profile of its own.
	var ctx context.Context
	var cancelCtx, cancelAlloc context.CancelFunc
	for attempt := 1; ; attempt++ {
		var actx context.Context
		actx, cancelAlloc = chromedp.NewExecAllocator(context.Background(), browserFlags(t.TempDir())...)
		ctx, cancelCtx = chromedp.NewContext(actx)
		err := chromedp.Do(ctx)
		if err == nil {
			break
		}
		cancelCtx()
		cancelAlloc()
		if attempt == 3 {
			t.Fatalf("start the browser: %v", err)
		}
		t.Logf("start the browser (attempt %d): %v", attempt, err)
	}
	b := &browser{t: t, ctx: ctx, base: f.srv.URL() + "/console/"}
	messages := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			// A refused request (the 401 a login page starts from) is the
			// page's business; any other error is the console's bug.
			if (m.Type == chromedp.ConsoleError && m.Source != "network") || m.IsException() {
				b.mu.Lock()
				b.errors = append(b.errors, fmt.Sprintf("%s %s:%d", m, m.URL, m.Line+1))
				b.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
		<-done
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, e := range b.errors {
			t.Errorf("browser: %s", e)
		}
	})
	b.do("open the console", chromedp.EmulateViewport(1280, 800), chromedp.Navigate(b.base+route))
	return b
}

// do runs steps within testwait's deadline.
func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, testwait.Deadline)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// visible waits until sel is shown.
func (b *browser) visible(sel string) {
	b.t.Helper()
	b.do("wait for "+sel, chromedp.WaitVisible(chromedp.CSS(sel)))
}

// until waits until the page's JavaScript expression expr is true.
func (b *browser) until(what, expr string) {
	b.t.Helper()
	b.do("wait for "+what, func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(testwait.Deadline), chromedp.WithPollingInterval(20*time.Millisecond))(ctx, t)
		return chromedp.Void{}, err
	})
}

// eval returns the value of the expression expr.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, testwait.Deadline)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// click clicks the element sel finds once it is shown. The click is the
// page's own (element.click()), found and made in one step: a live update
// may replace the element between a lookup and a mouse event.
func (b *browser) click(sel string) {
	b.t.Helper()
	b.visible(sel)
	b.until("a click on "+sel, fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) return false; e.click(); return true })()`, sel))
}

// text is the text of the first element sel finds, read in one step of
// the page's own: a live update may replace the element at any time.
func (b *browser) text(sel string) string {
	b.t.Helper()
	b.visible(sel)
	return strings.TrimSpace(eval[string](b, fmt.Sprintf(`document.querySelector(%q)?.textContent ?? ""`, sel)))
}

// typeInto replaces what the field sel holds with text.
func (b *browser) typeInto(sel, text string) {
	b.t.Helper()
	b.do("type into "+sel, chromedp.WaitVisible(chromedp.CSS(sel)),
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector(%q).value = ""`, sel)),
		chromedp.SendKeys(chromedp.CSS(sel), text))
}

// route navigates to a hash route of the console within the page (no
// reload).
func (b *browser) route(route string) {
	b.t.Helper()
	b.do("go to "+route, chromedp.Evaluate[chromedp.Void](fmt.Sprintf("location.hash = %q", route)))
}

// bannerCode is the AWS code the error banner shows, "" when it is hidden.
func (b *browser) bannerCode() string {
	return eval[string](b, `(() => { const e = document.getElementById("banner"); return e.hidden ? "" : document.getElementById("banner-code").textContent })()`)
}

// peekAll is every message of queue (a test's few) by id, as the
// console's API peeks them.
func peekAll(c *consoleClient, queue string) map[string]consoleMessage {
	c.t.Helper()
	var page consolePage
	c.call("GET", "/console/api/queues/"+queue+"/messages?limit=100", nil, 200, &page)
	out := map[string]consoleMessage{}
	for _, m := range page.Messages {
		out[m.MessageID] = m
	}
	return out
}

// queueCounts is GetQueueAttributes' visible and in-flight counts.
func queueCounts(t testing.TB, f *ferry, url string) (visible, inflight string) {
	t.Helper()
	out, err := f.json.GetQueueAttributes(ctxT(t), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Attributes["ApproximateNumberOfMessages"], out.Attributes["ApproximateNumberOfMessagesNotVisible"]
}

// orderEntries are n messages of JSON orders, each with a tenant attribute.
func orderEntries(first, n int) []types.SendMessageBatchRequestEntry {
	out := make([]types.SendMessageBatchRequestEntry, n)
	for i := range out {
		k := first + i
		out[i] = types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint("o", k)),
			MessageBody: aws.String(fmt.Sprintf(`{"order":%d,"sku":"sku-%d","amount":%d.50}`, k, k, 10*k)),
			MessageAttributes: map[string]types.MessageAttributeValue{
				"tenant": {DataType: aws.String("String"), StringValue: aws.String(fmt.Sprint("tenant-", k%2))}}}
	}
	return out
}

// TestConsoleBrowserDeadLetters drives the console in a browser through an
// on-call engineer's round: see the dead letters on the overview, find
// them in the DLQ, read one's history, redrive some, delete one, purge
// the rest; and checks through the SDK that looking changed nothing and
// acting did what the page said.
func TestConsoleBrowserDeadLetters(t *testing.T) {
	f := start(t)
	ctx := ctxT(t)
	dlq := f.createQueue(t, "orders-dlq", nil)
	orders := f.createQueue(t, "orders", map[string]string{"RedrivePolicy": redrivePolicy("orders-dlq", 1)})
	payments := f.createQueue(t, "payments", map[string]string{"RedrivePolicy": redrivePolicy("orders-dlq", 1)})
	plain := f.createQueue(t, "plain", nil)
	f.deadLetterEntries(t, orders, dlq, orderEntries(0, 3), 1)
	f.deadLetterEntries(t, payments, dlq, orderEntries(3, 1), 1)

	api := newConsoleClient(t, f.srv.URL())
	before := peekAll(api, "orders-dlq")
	if len(before) != 4 {
		t.Fatalf("the DLQ holds %d messages, want 4", len(before))
	}

	// The overview: the queues, their counts, the DLQ marked with its sources.
	b := openConsole(t, f, "#/")
	b.visible(`tr[data-queue="orders-dlq"]`)
	if got := b.text(`tr[data-queue="orders-dlq"] td:nth-child(2)`); got != "4" {
		t.Errorf("the DLQ's visible count reads %q, want 4", got)
	}
	if !eval[bool](b, `document.querySelector('tr[data-queue="orders-dlq"]').classList.contains("is-dlq-bad")`) {
		t.Error("the DLQ with messages does not stand out")
	}
	sources := eval[[]string](b, `[...document.querySelectorAll('[data-dlq="orders-dlq"] [data-source]')].map(e => e.dataset.source)`)
	if !slices.Equal(sources, []string{"orders", "payments"}) {
		t.Errorf("the redrive graph shows the DLQ's sources as %q", sources)
	}
	if got := b.text(`tr[data-queue="orders"] .redrive-to`); !strings.Contains(got, "orders-dlq") {
		t.Errorf("the source's row says %q of its DLQ", got)
	}

	// The DLQ's messages, and a search by body.
	b.click(`tr[data-queue="orders-dlq"] td.name a`)
	b.until("the DLQ's four messages", `document.querySelectorAll("#message-table tbody tr").length === 4`)
	// "/" takes the keyboard to the search.
	b.do("press /", chromedp.KeyEvent("/"))
	if got := eval[string](b, `document.activeElement.name`); got != "body" {
		t.Errorf("after / the focus is on %q, want the body search", got)
	}
	b.typeInto(`#search input[name="body"]`, `"sku-2"`)
	b.click(`#search button[type="submit"]`)
	b.until("the search's one message", `document.querySelectorAll("#message-table tbody tr").length === 1`)
	if got := b.text(`#message-table tbody tr td.cell-body`); !strings.Contains(got, `"sku":"sku-2"`) {
		t.Errorf("the search found %q", got)
	}
	// A message's page and its history: the receive and the move.
	b.click(`#message-table tbody tr td.cell-id a`)
	b.visible(`#history li[data-kind="move"]`)
	if got := b.text(`#history li[data-kind="move"] .ev-detail`); !strings.Contains(got, "orders → orders-dlq") {
		t.Errorf("the move reads %q", got)
	}
	if n := eval[int](b, `document.querySelectorAll('#history li[data-kind="receive"]').length`); n < 1 {
		t.Errorf("the history shows %d receives", n)
	}
	if got := b.text(`#message-attributes dd`); got != "tenant-0" {
		t.Errorf("the attribute reads %q", got)
	}

	// Looking changed nothing: no receive counted, nothing in flight.
	if v, nv := queueCounts(t, f, dlq); v != "4" || nv != "0" {
		t.Errorf("after viewing, the DLQ has %s visible and %s in flight, want 4 and 0", v, nv)
	}
	for id, m := range peekAll(api, "orders-dlq") {
		if m.ReceiveCount != before[id].ReceiveCount || m.State != "visible" {
			t.Errorf("after viewing, %s has receive count %d and state %s, want %d and visible", id, m.ReceiveCount, m.State, before[id].ReceiveCount)
		}
	}

	// Redrive two messages of orders: the page follows the move task live.
	b.click(`.crumbs a[href="#/queues/orders-dlq"]`)
	b.until("the DLQ's four messages", `document.querySelectorAll("#message-table tbody tr").length === 4`)
	picked := eval[[]string](b, `[...document.querySelectorAll("#message-table tbody tr")].filter(r => r.querySelector("td:nth-child(7)").textContent === "orders").slice(0, 2).map(r => { r.querySelector("input.select").click(); return r.dataset.id })`)
	if len(picked) != 2 {
		t.Fatalf("picked %d messages of orders", len(picked))
	}
	b.until("the selection to count two", `document.getElementById("selection").textContent === "2 selected"`)
	b.click(`#redrive-selected`)
	b.click(`#redrive-go`)
	b.visible(`#move-tasks .task[data-status="COMPLETED"]`)
	b.until("the list without the two", `document.querySelectorAll("#message-table tbody tr").length === 2`)
	back := f.receiveAll(t, orders, 10)
	var bodies []string
	for _, m := range back {
		bodies = append(bodies, aws.ToString(m.Body))
	}
	slices.Sort(bodies)
	var want []string
	for _, id := range picked {
		want = append(want, before[id].Body)
	}
	slices.Sort(want)
	if !slices.Equal(bodies, want) {
		t.Errorf("orders got back %q, want %q", bodies, want)
	}

	// Delete one, then purge the rest, confirmed by typing the name.
	b.click(`#message-table tbody tr input.select`)
	b.click(`#delete-selected`)
	b.click(`dialog[open] button[type="submit"]`)
	b.until("one message left", `document.querySelectorAll("#message-table tbody tr").length === 1`)
	if v, _ := queueCounts(t, f, dlq); v != "1" {
		t.Errorf("after the delete the DLQ has %s visible, want 1", v)
	}
	b.click(`#purge`)
	if !eval[bool](b, `document.querySelector('dialog[open] button[type="submit"]').disabled`) {
		t.Error("purge can be confirmed without typing the queue's name")
	}
	b.typeInto(`#confirm-input`, "orders-dlq")
	b.click(`dialog[open] button[type="submit"]`)
	b.visible(`#no-messages`)
	if v, nv := queueCounts(t, f, dlq); v != "0" || nv != "0" {
		t.Errorf("after the purge the DLQ has %s visible and %s in flight", v, nv)
	}
	// A second purge within the minute: AWS's refusal, with its code, in
	// the banner.
	b.click(`#purge`)
	b.typeInto(`#confirm-input`, "orders-dlq")
	b.click(`dialog[open] button[type="submit"]`)
	b.until("the refusal", `document.getElementById("banner").dataset.kind === "error" && !document.getElementById("banner").hidden`)
	if code := b.bannerCode(); code != "AWS.SimpleQueueService.PurgeQueueInProgress" {
		t.Errorf("a second purge shows %q", code)
	}

	// A live update: a message sent now shows on the overview without a
	// reload (the marker set on the window survives only without one).
	b.route("#/")
	b.visible(`tr[data-queue="plain"]`)
	b.until("the live stream", `document.getElementById("live").dataset.state === "live"`)
	b.do("mark the page", chromedp.Evaluate[chromedp.Void](`window.ferryTestMarker = 1`))
	if _, err := f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(plain), MessageBody: aws.String("hello")}); err != nil {
		t.Fatal(err)
	}
	b.until("plain's count to reach 1", `document.querySelector('tr[data-queue="plain"] td:nth-child(2)').textContent === "1"`)
	if !eval[bool](b, `window.ferryTestMarker === 1`) {
		t.Error("the page reloaded for the update")
	}
}

// TestConsoleBrowserLogin: with signatures verified, the console asks for a key
// and its secret, refuses a wrong secret with the banner, and shows the
// key's account once logged in.
func TestConsoleBrowserLogin(t *testing.T) {
	f := start(t, verifyingHarness(t))
	f.createQueue(t, "secured", nil)
	b := openConsole(t, f, "#/")
	b.visible(`#login-form`)
	b.typeInto(`#login-key`, harnessKey)
	b.typeInto(`#login-secret`, "not the secret")
	b.click(`#login-submit`)
	b.until("the refusal", `!document.getElementById("banner").hidden`)
	if code := b.bannerCode(); code != "LoginFailed" {
		t.Errorf("a wrong secret shows %q", code)
	}
	if n := eval[int](b, `document.querySelectorAll("#queue-table").length`); n != 0 {
		t.Error("the queues show without a login")
	}
	b.typeInto(`#login-secret`, harnessSecret)
	b.click(`#login-submit`)
	b.visible(`tr[data-queue="secured"]`)
	b.visible(`#logout`)
	b.until("the live stream", `document.getElementById("live").dataset.state === "live"`)
}

// TestConsoleBrowserMoveTaskAndResend: a redrive of everything at one
// message a second shows its progress as the runner moves (through the
// event stream alone) and is cancelled from the page; then a message is
// edited and sent back to its source.
func TestConsoleBrowserMoveTaskAndResend(t *testing.T) {
	f := start(t)
	ctx := ctxT(t)
	dlq := f.createQueue(t, "orders-dlq", nil)
	orders := f.createQueue(t, "orders", map[string]string{"RedrivePolicy": redrivePolicy("orders-dlq", 1)})
	f.deadLetterEntries(t, orders, dlq, orderEntries(0, 5), 1)

	b := openConsole(t, f, "#/queues/orders-dlq")
	b.until("the DLQ's five messages", `document.querySelectorAll("#message-table tbody tr").length === 5`)
	b.until("the live stream", `document.getElementById("live").dataset.state === "live"`)
	b.click(`#redrive-all`)
	b.typeInto(`#redrive-rate`, "1")
	b.click(`#redrive-go`)
	b.visible(`#move-tasks .task[data-status="RUNNING"] .cancel-task`)
	progress := `document.querySelector('#move-tasks .task[data-status="RUNNING"] progress')`
	b.until("the task's first message", progress+`.value >= 1 && `+progress+`.max === 5`)
	moved := eval[int](b, progress+`.value`)
	testwait.Eventually(t, "the runner to wait for the next second", f.runnerWaits)
	f.clk.Advance(time.Second)
	b.until("the progress bar to move on its own", fmt.Sprintf(`%s.value > %d`, progress, moved))
	b.click(`#move-tasks .cancel-task`)
	b.visible(`#move-tasks .task[data-status="CANCELLED"]`)
	tasks, err := f.json.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(arnPrefix + "orders-dlq")})
	if err != nil || len(tasks.Results) == 0 || aws.ToString(tasks.Results[0].Status) != "CANCELLED" {
		t.Fatalf("ListMessageMoveTasks = %+v, %v", tasks, err)
	}
	left := 5 - int(tasks.Results[0].ApproximateNumberOfMessagesMoved)
	if v, _ := queueCounts(t, f, dlq); v != strconv.Itoa(left) {
		t.Errorf("after the cancel the DLQ has %s visible, want %d", v, left)
	}
	b.until("the list without the moved", fmt.Sprintf(`document.querySelectorAll("#message-table tbody tr").length === %d`, left))
	for _, m := range f.receiveAll(t, orders, 10) {
		f.deleteMessage(t, orders, m.ReceiptHandle)
	}

	// Edit and resend: the edited body goes to the source, the original
	// leaves the DLQ.
	b.click(`#message-table tbody tr td.cell-id a`)
	b.visible(`#resend`)
	b.click(`#resend`)
	b.visible(`#resend-body`)
	if got := eval[string](b, `document.getElementById("resend-dest").value`); got != "orders" {
		t.Errorf("the resend goes to %q by default, want the source orders", got)
	}
	b.typeInto(`#resend-body`, `{"order":1,"fixed":true}`)
	b.click(`#resend-go`)
	b.until("the queue page again", `location.hash === "#/queues/orders-dlq"`)
	b.until("one message fewer", fmt.Sprintf(`document.querySelectorAll("#message-table tbody tr").length === %d`, left-1))
	got := f.receiveAll(t, orders, 10)
	if len(got) != 1 || aws.ToString(got[0].Body) != `{"order":1,"fixed":true}` || got[0].MessageAttributes["tenant"].StringValue == nil {
		t.Errorf("orders received %+v after the resend", got)
	}
}

// TestConsoleBrowserAdminAccounts: the admin token sees every account,
// and the account picker shows another account's queues.
func TestConsoleBrowserAdminAccounts(t *testing.T) {
	f := start(t, verifying(t, 0), func(c *server.Config) { c.AdminToken = "admin-token-for-the-test" })
	alice := clientsOf(f.srv.URL(), aliceKey, aliceSecret, "us-east-1")
	if _, err := alice.json.CreateQueue(ctxT(t), &sqs.CreateQueueInput{QueueName: aws.String("alice-work")}); err != nil {
		t.Fatal(err)
	}
	b := openConsole(t, f, "#/")
	b.click(`#tab-token`)
	b.typeInto(`#login-token`, "admin-token-for-the-test")
	b.click(`#login-submit`)
	b.visible(`#account-select`)
	accounts := eval[[]string](b, `[...document.querySelectorAll("#account-select option")].map(o => o.value)`)
	if !slices.Contains(accounts, aliceAccount) || !slices.Contains(accounts, server.DefaultAccount) {
		t.Fatalf("the picker offers %q", accounts)
	}
	b.do("pick alice's account", chromedp.SetValue(chromedp.CSS(`#account-select`), aliceAccount),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("account-select").dispatchEvent(new Event("change"))`))
	b.visible(`tr[data-queue="alice-work"]`)
	if got := b.text(`.page-head .sub`); !strings.Contains(got, aliceAccount) {
		t.Errorf("the overview says %q of its account", got)
	}
}
