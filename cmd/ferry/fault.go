package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/ferrymq/ferry/internal/faults"
)

const faultUsage = `Usage:
  ferry fault add --queue Q [--action A] --error CODE|--delay D [--count N|--fraction F] [flags]
  ferry fault add --subscription ARN|--sns-endpoint URL|--protocol P
                  --status S|--timeout|--succeed-after K|--drop|--duplicate|--client-error
                  [--count N|--fraction F] [flags]
  ferry fault list [flags]
  ferry fault clear [ID] [flags]

Makes a running Ferry, started with --fault-injection, fail on purpose: SQS actions answer an
AWS error or wait, SNS deliveries fail, time out, succeed only after K attempts, vanish or
arrive twice. list shows the rules, their counts and the seed; clear removes one rule, or all.

`

// faultCmd drives a running Ferry's fault rules through /_ferry/faults.
func faultCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		fmt.Fprint(stderr, faultUsage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	sub, args := args[0], args[1:]
	fs := newFlagSet("ferry fault "+sub, faultUsage, stderr)
	c := adminFlags(fs, getenv)
	var (
		method, path = http.MethodGet, "/_ferry/faults"
		body         any
	)
	switch sub {
	case "add":
		rule := faultRuleFlags(fs)
		if code, ok := parseFlags(fs, args); !ok {
			return code
		}
		method, body = http.MethodPost, rule
	case "list":
		if code, ok := parseFlags(fs, args); !ok {
			return code
		}
	case "clear":
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 2
		}
		method = http.MethodDelete
		switch fs.NArg() {
		case 0:
		case 1:
			path += "/" + url.PathEscape(fs.Arg(0))
		default:
			fmt.Fprintf(stderr, "ferry fault clear: unexpected argument %q\n", fs.Arg(1))
			return 2
		}
	default:
		fmt.Fprintf(stderr, "ferry fault: unknown subcommand %q\n\n%s", sub, faultUsage)
		return 2
	}
	var res json.RawMessage
	if err := c.call(ctx, method, path, nil, body, &res); err != nil {
		fmt.Fprintf(stderr, "ferry fault %s: %v\n", sub, err)
		return 1
	}
	printJSON(stdout, res)
	return 0
}

// faultRuleFlags registers ferry fault add's flags, which fill the rule
// returned; the server checks it.
func faultRuleFlags(fs *flag.FlagSet) *faults.Rule {
	r := &faults.Rule{}
	fs.StringVar(&r.Queue, "queue", "", "SQS: the queue, by name, URL or ARN")
	fs.StringVar(&r.Account, "account", "", "SQS: any queue of this account (12 digits)")
	fs.StringVar(&r.Action, "action", "", "SQS: the action (ReceiveMessage, ...) or group (receives, sends, deletes); default: any")
	fs.StringVar(&r.Error, "error", "", "SQS: answer this AWS error code (RequestThrottled, QueueDoesNotExist, ...)")
	fs.StringVar(&r.Delay, "delay", "", "SQS: wait this long before the action runs (2s, 1m)")
	fs.StringVar(&r.Subscription, "subscription", "", "SNS: deliveries to this subscription ARN")
	fs.StringVar(&r.Endpoint, "sns-endpoint", "", "SNS: deliveries to this endpoint (URL, address or queue ARN)")
	fs.StringVar(&r.Protocol, "protocol", "", "SNS: deliveries of this protocol (http, https, sqs, ...)")
	fs.IntVar(&r.Status, "status", 0, "SNS: the endpoint answers this HTTP status")
	fs.BoolVar(&r.Timeout, "timeout", false, "SNS: the endpoint does not answer within the delivery timeout")
	fs.IntVar(&r.SucceedAfter, "succeed-after", 0, "SNS: the first K attempts of each chosen message fail (with --status, default 500, or --timeout)")
	fs.BoolVar(&r.Drop, "drop", false, "SNS: the delivery is lost; SNS counts it delivered")
	fs.BoolVar(&r.Duplicate, "duplicate", false, "SNS: the endpoint gets the delivery twice")
	fs.BoolVar(&r.ClientError, "client-error", false, "SNS: the delivery fails with a client-side error (the endpoint is gone): no retry, the dead-letter queue")
	fs.IntVar(&r.Count, "count", 0, "the next N matching events (with --fraction: at most N faults)")
	fs.Func("fraction", "this probability, 0 to 1, of each matching event", func(v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return errors.New("want a number from 0 to 1")
		}
		r.Fraction = &f
		return nil
	})
	fs.Func("seed", "seed of this rule's decisions, instead of the server's (0 to 2^64-1)", func(v string) error {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return errors.New("want a number from 0 to 2^64-1")
		}
		r.Seed = &n
		return nil
	})
	return r
}
