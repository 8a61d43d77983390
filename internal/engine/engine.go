// Package engine is the seam between the services and the storage that
// keeps what they keep. A Store is one backend for all of it: queues and
// messages at the level of queue operations (send, receive, delete, change
// visibility, purge, stats, move tasks), SNS and CloudWatch records, and
// metric datapoints. It knows nothing of HTTP, wire formats or AWS's
// wording: the API packages map its errors and values to AWS's. The
// embedded backend lives in engine/embedded; a PostgreSQL backend can
// implement the same interface, and the command line chooses one.
package engine

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Errors a Backend returns. The SQS layer maps each to AWS's error.
var (
	ErrQueueNotFound        = errors.New("engine: queue does not exist")
	ErrQueueDeletedRecently = errors.New("engine: queue deleted less than 60 seconds ago")
	// ErrReceiptHandleInvalid: the handle is garbage, forged, or belongs to
	// another queue.
	ErrReceiptHandleInvalid = errors.New("engine: receipt handle is invalid")
	// ErrMessageNotInflight: the handle is genuine but the message it names
	// is gone, was received again since, or is no longer in flight.
	ErrMessageNotInflight = errors.New("engine: message is not in flight")
	// ErrVisibilityLimit: the change would keep the message invisible for
	// more than MaxVisibility counted from its receive.
	ErrVisibilityLimit = errors.New("engine: total visibility timeout beyond the limit")
	ErrPurgeInProgress = errors.New("engine: queue purged less than 60 seconds ago")
	ErrClosed          = errors.New("engine: closed")
	// ErrMoveTaskActive: the source queue already has a RUNNING or
	// CANCELLING move task.
	ErrMoveTaskActive = errors.New("engine: the source queue has an active move task")
	// ErrMoveTaskLimit: the account has MaxActiveMoveTasks active tasks.
	ErrMoveTaskLimit      = errors.New("engine: too many active move tasks")
	ErrMoveTaskNotFound   = errors.New("engine: move task does not exist")
	ErrMoveTaskNotRunning = errors.New("engine: move task is not running")
	// ErrReceiptHandleExpired (FIFO queues only): a delete or visibility
	// change used a handle whose visibility timeout has run out. SQS
	// answers InvalidParameterValue "... Reason: The receipt handle has
	// expired."; standard queues accept such handles instead.
	ErrReceiptHandleExpired = errors.New("engine: receipt handle has expired")
	// ErrStoreFull: the store's disk is (nearly) full, so the call, which
	// would write, was refused before it wrote anything. Reads go on, and
	// writes are accepted again once space is freed. The services answer
	// it with a 503 ServiceUnavailable, which SDKs retry.
	ErrStoreFull = errors.New("engine: the store's disk is full; writes are refused until space is freed")
	// ErrUnavailable: the store cannot be reached (a database that is
	// down, failing over, or out of connections). Nothing of the call was
	// acknowledged; the services answer 503 ServiceUnavailable, which SDKs
	// retry, and the same call succeeds once the store is back.
	ErrUnavailable = errors.New("engine: the store cannot be reached")
)

// Temporary reports whether err is a condition of the store that passes
// (ErrStoreFull, ErrUnavailable) rather than a failure of the call: the
// services answer it 503 ServiceUnavailable, which SDKs retry, and leave
// it unlogged, since the store logs the condition once.
func Temporary(err error) bool {
	return errors.Is(err, ErrStoreFull) || errors.Is(err, ErrUnavailable)
}

// DeduplicationWindow is how long a FIFO queue remembers a deduplication
// key, counted from the first send that used it. The window keeps running
// after that message was received or deleted.
const DeduplicationWindow = 5 * time.Minute

// Deduplication scopes (QueueSettings.DeduplicationScope).
const (
	DeduplicationScopeQueue        = "queue"
	DeduplicationScopeMessageGroup = "messageGroup"
)

// MaxVisibility is the longest a message may stay in flight, counted from
// the receive that handed it out (SQS: 12 hours).
const MaxVisibility = 12 * time.Hour

// PurgeInterval is how long a queue must wait between two purges.
const PurgeInterval = 60 * time.Second

// RecreateDelay is how long a deleted queue's name stays reserved.
const RecreateDelay = 60 * time.Second

// Waits turns SQS's two 60-second waits off, as LocalStack's
// SQS_DELAY_RECENTLY_DELETED and SQS_DELAY_PURGE_RETRY do: test suites
// that delete and create the same queue, or purge it twice, in a row. The
// zero value keeps AWS's behaviour. A store still records deletes and
// purges with the waits off, so that a node sharing the store with them
// on still sees them.
type Waits struct {
	// NoRecreateDelay lets a deleted queue's name be created again at
	// once (no ErrQueueDeletedRecently).
	NoRecreateDelay bool
	// NoPurgeInterval lets a queue be purged again at once (no
	// ErrPurgeInProgress).
	NoPurgeInterval bool
}

// RecreateDelay is how long a deleted queue's name stays reserved under w.
func (w Waits) RecreateDelay() time.Duration {
	if w.NoRecreateDelay {
		return 0
	}
	return RecreateDelay
}

// PurgeInterval is how long a queue must wait between two purges under w.
func (w Waits) PurgeInterval() time.Duration {
	if w.NoPurgeInterval {
		return 0
	}
	return PurgeInterval
}

// Move task limits (SQS: a task runs at most 36 hours; at most 100 active
// tasks per account).
const (
	MoveTaskMaxDuration = 36 * time.Hour
	MaxActiveMoveTasks  = 100
)

// MoveTaskFailure says why a move task FAILED (MoveTask.FailureReason). The
// values are the engine's own; the SQS layer words them as AWS does.
type MoveTaskFailure string

// The move task failure reasons.
const (
	// MoveTaskFailureNonExistentQueue: the source or a destination queue
	// does not exist (any more).
	MoveTaskFailureNonExistentQueue MoveTaskFailure = "queue-missing"
	// MoveTaskFailureTimedOut: the task outlived MoveTaskMaxDuration.
	MoveTaskFailureTimedOut MoveTaskFailure = "timed-out"
	// MoveTaskFailureStore: the store could not serve the task (a failed
	// write, a corrupt record); the messages stay in the source.
	MoveTaskFailureStore MoveTaskFailure = "store-failed"
)

// QueueSettings are the attributes the engine acts on. The SQS layer derives
// them from the queue's attribute strings on every create and update.
type QueueSettings struct {
	VisibilityTimeout time.Duration
	Delay             time.Duration
	Retention         time.Duration
	ReceiveWait       time.Duration
	MaximumSize       int
	// Redrive, when set, sends a message to a dead-letter queue instead of
	// handing it out once its receive count has reached MaxReceiveCount.
	Redrive *Redrive
	// FIFO makes the queue a FIFO queue: strict order and blocking within
	// a message group, deduplication, expiring receipt handles. It is fixed
	// at creation.
	FIFO bool
	// DeduplicationScope (FIFO only) is DeduplicationScopeQueue or
	// DeduplicationScopeMessageGroup; empty means queue. With messageGroup
	// the same DeduplicationID in two groups names two messages.
	DeduplicationScope string
}

// Redrive is a source queue's dead-letter configuration. The SQS layer has
// checked that the target existed and allowed this source when it was set;
// if the target is gone by the time of a move, the message stays in the
// source queue and is handed out as usual (nothing is lost).
type Redrive struct {
	TargetAccount   string
	TargetName      string
	MaxReceiveCount int
}

// Queue is a queue's durable description.
type Queue struct {
	Account string
	Name    string
	// ARN names the queue in dead-letter source attributes and move tasks.
	ARN string
	// Attributes holds the settable attributes as SQS shows them (strings),
	// only those with a value; computed ones are not stored.
	Attributes map[string]string
	Tags       map[string]string
	Settings   QueueSettings
	Created    time.Time
	Modified   time.Time
	// LastPurge is when the queue was last purged; zero if never.
	LastPurge time.Time
}

// MessageAttribute is one user or system message attribute. Exactly one of
// StringValue and BinaryValue is meaningful, chosen by the DataType's base
// (String and Number carry StringValue, Binary carries BinaryValue).
type MessageAttribute struct {
	Name        string
	DataType    string
	StringValue string
	BinaryValue []byte
}

// NewMessage is a message to enqueue. The SQS layer has validated it and
// computed its digests.
type NewMessage struct {
	Body       string
	Attributes []MessageAttribute // sorted by Name
	// TraceHeader is the AWSTraceHeader system attribute, if sent.
	TraceHeader string
	// Delay overrides the queue's delay when non-nil.
	Delay *time.Duration
	// MessageGroupID is required on FIFO queues; on standard queues it
	// only tags the message (fair queues).
	MessageGroupID string
	// DeduplicationID (FIFO only) is always set by the SQS layer: the
	// explicit MessageDeduplicationId or the SHA-256 of the body.
	DeduplicationID string
	SenderID        string
	MD5OfBody       string
	MD5OfAttrs      string // empty when there are no attributes
	MD5OfSysAttrs   string // empty when there is no trace header
	// History, when set, is the story the message arrives with (an SNS
	// delivery given up into a subscription's dead-letter queue), stored
	// as its history.
	History *MessageHistory
}

// FormatSequenceNumber formats a FIFO sequence number as every store
// hands it out: zero-padded to 20 digits (the most a uint64 has), so that
// every number has the same length and the strings sort as the numbers do.
func FormatSequenceNumber(seq uint64) string {
	var b, d [20]byte
	for i := range b {
		b[i] = '0'
	}
	n := len(strconv.AppendUint(d[:0], seq, 10))
	copy(b[20-n:], d[:n])
	return string(b[:])
}

// SendResult answers one NewMessage.
type SendResult struct {
	MessageID string
	// SequenceNumber (FIFO only) is a decimal number of at least 20 digits
	// that grows with every message enqueued in the queue.
	SequenceNumber string
	// Duplicate (FIFO only) reports that the message's deduplication key
	// was used within DeduplicationWindow: it was accepted but not
	// enqueued, and MessageID and SequenceNumber are the original's.
	Duplicate bool
}

// QueueSend is one queue's part of a SendMany.
type QueueSend struct {
	Account, Name string
	Msgs          []NewMessage
}

// SendOutcome answers one QueueSend: what Send would have returned.
type SendOutcome struct {
	Results []SendResult
	Err     error
}

// Message is a message as a receive hands it out.
type Message struct {
	MessageID      string
	ReceiptHandle  string
	Body           string
	Attributes     []MessageAttribute // sorted by Name
	TraceHeader    string
	MessageGroupID string
	SenderID       string
	MD5OfBody      string
	MD5OfAttrs     string
	SentAt         time.Time
	FirstReceiveAt time.Time
	ReceiveCount   int
	// DeadLetterSourceARN is the queue a redrive policy moved the message
	// from (the DeadLetterQueueSourceArn system attribute); empty otherwise.
	DeadLetterSourceARN string
	// SequenceNumber and DeduplicationID are set on FIFO queues only.
	SequenceNumber  string
	DeduplicationID string
	// History is the message's story when the receive asked for it
	// (ReceiveRequest.History) and the message has one.
	History *MessageHistory
}

// ReceiveRequest says how many messages to take and for how long.
type ReceiveRequest struct {
	Max int // 1..10
	// Visibility overrides the queue's visibility timeout when non-nil.
	Visibility *time.Duration
	// Wait is how long to wait for a first message when none is visible.
	Wait time.Duration
	// AttemptID (FIFO only) is the ReceiveRequestAttemptId. A repeat with
	// the same id within DeduplicationWindow hands out the same messages
	// with the same receipt handles (their visibility restarted) as long
	// as none of them was deleted or had its visibility changed since.
	AttemptID string
	// Consumer, when set, is recorded in the history of every message the
	// receive hands out (see history.go); nil records nothing.
	Consumer *Consumer
	// History asks for the messages' stories (Message.History).
	History bool
}

// VisibilityChange is one entry of ChangeVisibility.
type VisibilityChange struct {
	ReceiptHandle string
	Timeout       time.Duration
	// Event, when set, is added to the message's history in the same
	// write (an SNS delivery attempt that will be retried).
	Event *HistoryEvent
}

// Stats are a queue's approximate counts.
type Stats struct {
	Visible    int64
	NotVisible int64 // in flight
	Delayed    int64
	// OldestAt is when the oldest message that counts for SQS's
	// ApproximateAgeOfOldestMessage entered the queue; zero when there is
	// none. A message counts until it has been received
	// OldestMaxReceives times in this queue. It enters a queue when sent,
	// or, moved by a redrive policy, when moved (its SentAt stays the
	// original on a standard dead-letter queue).
	OldestAt time.Time
	// GroupsInFlight (FIFO) is the number of message groups with a message
	// in flight (ApproximateNumberOfGroupsWithInflightMessages).
	GroupsInFlight int64
}

// OldestMaxReceives is how many receives without a delete take a message
// out of Stats.OldestAt until it is consumed: SQS then points
// ApproximateAgeOfOldestMessage at the next oldest message.
const OldestMaxReceives = 3

// MoveTaskStatus is a move task's state, with SQS's names.
type MoveTaskStatus string

// The move task states. RUNNING and CANCELLING are active.
const (
	MoveTaskRunning    MoveTaskStatus = "RUNNING"
	MoveTaskCompleted  MoveTaskStatus = "COMPLETED"
	MoveTaskCancelling MoveTaskStatus = "CANCELLING"
	MoveTaskCancelled  MoveTaskStatus = "CANCELLED"
	MoveTaskFailed     MoveTaskStatus = "FAILED"
)

// Active reports whether a task in this state still holds its source.
func (s MoveTaskStatus) Active() bool { return s == MoveTaskRunning || s == MoveTaskCancelling }

// MoveTask moves messages out of a dead-letter queue. Every moved message
// becomes a new message in its destination (new id, new sent time, receive
// count zero) and leaves the source in the same atomic write. Between FIFO
// queues a message keeps its group and its DeduplicationID (the dead-letter
// queue's: the original MessageID after a redrive), gets a new
// SequenceNumber, and each group's order is kept; the destination's
// deduplication window neither drops nor remembers moved messages.
type MoveTask struct {
	ID string
	// SourceAccount/SourceName is the dead-letter queue; SourceARN its ARN.
	SourceAccount, SourceName, SourceARN string
	// DestinationARN is the explicit destination; empty sends each message
	// back to the queue named by its DeadLetterSourceARN.
	DestinationARN string
	// MaxPerSecond caps the rate; 0 moves as fast as the engine safely can.
	MaxPerSecond int
	// Refs, when set, limits the task to these messages of the source
	// (PeekedMessage.Ref): the console's redrive of selected messages. Of
	// them, those visible when the task reaches them move, in the order
	// of the queue; ToMove is len(Refs). Empty moves the whole queue.
	Refs   []string
	Status MoveTaskStatus
	// ToMove is the source's visible count when the task started; Moved
	// grows as the task runs and is exact across restarts.
	ToMove, Moved int64
	Started       time.Time
	// FailureReason is set when Status is FAILED.
	FailureReason MoveTaskFailure
}

// Backend stores queues and messages. Every method is safe for concurrent
// use. A send, delete, visibility change, purge or queue change returns only
// once it is durable; receive bookkeeping may be made durable later.
type Backend interface {
	// CreateQueue creates q unless a queue of that account and name exists,
	// in which case it returns the existing one and created=false. It fails
	// with ErrQueueDeletedRecently within RecreateDelay of a delete (the
	// store's Waits may set it to zero), a
	// restart in between included.
	CreateQueue(ctx context.Context, q Queue) (existing Queue, created bool, err error)
	GetQueue(ctx context.Context, account, name string) (Queue, error)
	// ViewQueue is GetQueue without its copies, for the message actions
	// that read a few settings on every call: the Queue's maps and
	// Redrive are shared with the backend and must only be read. A later
	// update does not change them.
	ViewQueue(ctx context.Context, account, name string) (Queue, error)
	// ListQueues returns the account's queues whose names start with prefix,
	// sorted by name.
	ListQueues(ctx context.Context, account, prefix string) ([]Queue, error)
	// Accounts returns the accounts that have at least one queue, sorted
	// bytewise: with ListQueues, what lists every account's queues.
	Accounts(ctx context.Context) ([]string, error)
	// UpdateQueue applies fn to the queue under the queue's lock and stores
	// the result; fn may refuse with an error, which UpdateQueue returns.
	UpdateQueue(ctx context.Context, account, name string, fn func(*Queue) error) error
	DeleteQueue(ctx context.Context, account, name string) error
	// ResetQueues removes the queues of every account (owner key) that
	// pick picks, each as DeleteQueue removes one (its messages, move
	// tasks, FIFO deduplication window and receive attempts; its long
	// polls end empty), and forgets the deleted names of those accounts,
	// so that any name can be created again at once. It returns how many
	// queues it removed. A queue created while it runs may stay.
	ResetQueues(ctx context.Context, pick func(account string) bool) (int, error)

	// Send enqueues msgs in order. On a FIFO queue a message whose
	// deduplication key (DeduplicationID, with MessageGroupID in the
	// messageGroup scope) was first sent less than DeduplicationWindow ago,
	// earlier in the same call included, is a duplicate: accepted, not
	// enqueued (SendResult.Duplicate). The window outlives the original's
	// receive and delete, and restarts. Delay is the queue's only.
	Send(ctx context.Context, account, name string, msgs []NewMessage) ([]SendResult, error)
	// SendMany is Send to several queues at once: each part is answered
	// as Send would answer it alone (a missing queue fails its part
	// only); an error is for the whole call, and then no part was
	// written. It returns once
	// every part is durable; a backend may write them together, so that
	// one call for many queues costs about what one Send costs.
	SendMany(ctx context.Context, sends []QueueSend) ([]SendOutcome, error)
	// Receive hands out up to req.Max visible messages, waiting up to
	// req.Wait for the first one. A cancelled ctx ends the wait early with
	// whatever was taken (possibly nothing) and no error. A message whose
	// receive count has reached Settings.Redrive.MaxReceiveCount is moved
	// to the dead-letter queue instead, atomically (same id, content, sent
	// time, receive counts; DeadLetterSourceARN set; visible at once; the
	// source's handles stop working), and does not count towards req.Max;
	// a long poll that found only such messages goes on waiting.
	//
	// On a FIFO queue messages of a group go out in order and never while
	// another message of the group is in flight; one that becomes visible
	// again goes out before those behind it. A receive takes as many as it
	// can from the group with the oldest visible head, then from the next.
	// A redrive into a FIFO dead-letter queue keeps the group, puts the
	// message at the back of it, resets SentAt to the move and replaces
	// the DeduplicationID by the MessageID; the dead-letter queue's window
	// is not consulted. req.AttemptID: see ReceiveRequest.
	Receive(ctx context.Context, account, name string, req ReceiveRequest) ([]Message, error)
	// Delete deletes by receipt handle; the result has one error (or nil)
	// per handle. A genuine but stale handle deletes nothing and succeeds,
	// except on a FIFO queue, where a handle whose visibility has expired
	// fails with ErrReceiptHandleExpired (one whose message is gone still
	// succeeds).
	Delete(ctx context.Context, account, name string, handles []string) ([]error, error)
	// ChangeVisibility changes in-flight messages' visibility; on a FIFO
	// queue an expired handle fails with ErrReceiptHandleExpired.
	ChangeVisibility(ctx context.Context, account, name string, changes []VisibilityChange) ([]error, error)
	// Purge deletes every message; ErrPurgeInProgress within PurgeInterval
	// of the previous purge (the store's Waits may set it to zero).
	Purge(ctx context.Context, account, name string) error
	Stats(ctx context.Context, account, name string) (Stats, error)

	// StartMoveTask starts t (ID, Status, ToMove, Moved and Started are
	// filled in by the engine; SourceARN too when empty) and returns it as
	// started. It fails with ErrQueueNotFound (source), ErrMoveTaskActive
	// or ErrMoveTaskLimit. Tasks are durable: a RUNNING task resumes after
	// a restart, a CANCELLING one ends CANCELLED. A destination that is
	// missing when a message's turn comes ends the task FAILED with
	// MoveTaskFailureNonExistentQueue; the messages not moved stay.
	StartMoveTask(ctx context.Context, t MoveTask) (MoveTask, error)
	// ListMoveTasks returns the source queue's tasks, most recent first.
	ListMoveTasks(ctx context.Context, account, name string) ([]MoveTask, error)
	// CancelMoveTask asks a RUNNING task to stop and returns it (CANCELLING
	// or already CANCELLED); ErrMoveTaskNotFound, ErrMoveTaskNotRunning.
	CancelMoveTask(ctx context.Context, account, name, id string) (MoveTask, error)

	Close() error
}

// Record is a small durable document another service keeps beside the
// queues (SNS topics and subscriptions, for one).
type Record struct {
	Key   string
	Value []byte
}

// RecordStore keeps Records by kind and key. Writes return once durable.
//
// A service reads a record, changes the document and writes it back
// whole. Where several nodes share the store, two nodes may do that to
// one record at once, and a plain PutRecord would lose one change.
// InsertRecord, SwapRecord and DeleteRecordIf are the compare-and-set that
// serialises them: the write happens only if the record is still what the
// writer built on, and a writer that lost reads the record again and
// builds its change again. The condition is the whole previous value,
// byte for byte, rather than a version beside it: records are small
// documents, so a value is its own version, and a value put back exactly
// as it was (A, B, A) leaves nothing built on A out of date. PutRecord and
// DeleteRecord stay for writes that build on nothing (a delete that wins
// over any change, a record only one node writes). Every write, conditional
// or not, is atomic against every other write of the same record through
// any node, and tells the other nodes (Cluster.WatchRecords) as PutRecord
// does; a conditional write that did not happen tells nobody.
type RecordStore interface {
	PutRecord(ctx context.Context, kind, key string, value []byte) error
	// DeleteRecord removes a record; a missing one is not an error.
	DeleteRecord(ctx context.Context, kind, key string) error
	// InsertRecord stores value as kind/key unless that record exists
	// (put-if-absent); it reports whether it stored it.
	InsertRecord(ctx context.Context, kind, key string, value []byte) (inserted bool, err error)
	// SwapRecord replaces the value of kind/key by value if the record
	// exists and its value is old; it reports whether it did.
	SwapRecord(ctx context.Context, kind, key string, old, value []byte) (swapped bool, err error)
	// DeleteRecordIf removes kind/key if its value is old; it reports
	// whether it did.
	DeleteRecordIf(ctx context.Context, kind, key string, old []byte) (deleted bool, err error)
	// Records returns every record of a kind, sorted by key (byte order).
	Records(ctx context.Context, kind string) ([]Record, error)
	// GetRecord returns one record's value; found is false when there is
	// none.
	GetRecord(ctx context.Context, kind, key string) (value []byte, found bool, err error)
}

// SequenceClaim asks a Sequencer for one number under a deduplication key.
type SequenceClaim struct {
	// Key is the deduplication key; the keys of one call are distinct.
	Key string
	// ID names what is numbered (a message id); a later claim of the key
	// within the window is answered with it.
	ID string
}

// SequenceTicket answers one SequenceClaim.
type SequenceTicket struct {
	// Number is the claim's sequence number, or the original's for a
	// duplicate: a decimal of 22 digits (until the year 2286), so that
	// the numbers of a sequence sort as strings as they do as numbers.
	Number string
	// ID is the claim's ID, or the original's for a duplicate.
	ID string
	// Duplicate: the key was claimed within DeduplicationWindow; the
	// claim took no number and nothing of it was remembered.
	Duplicate bool
}

// Sequencer numbers the messages of SNS FIFO topics and keeps their
// deduplication keys, so that every node publishing to one topic numbers
// and deduplicates it as one node would. A sequence is named by its topic
// and starts at its first claim. A number is the broker time's
// microseconds since the Unix epoch times 10^6, or the sequence's last
// number plus one if that is larger: the numbers grow strictly, in the
// order the store took them, and go on growing across a store that forgot
// its sequences.
type Sequencer interface {
	// Sequence takes numbers of the sequence name for claims, in their
	// order, at broker time now. A claim whose key a claim of this
	// sequence took less than DeduplicationWindow before now, through
	// any node, is a duplicate; any other takes the next number, and its
	// key is remembered with its ID and number for DeduplicationWindow.
	// The call is atomic: two calls that claim one key, through two
	// nodes at once, number it once.
	Sequence(ctx context.Context, name string, now time.Time, claims []SequenceClaim) ([]SequenceTicket, error)
	// ReleaseSequence forgets the keys of claims that still name the
	// claim's ID (taken by a publish that then failed, so that its retry
	// is not a duplicate). Their numbers are not handed out again.
	ReleaseSequence(ctx context.Context, name string, claims []SequenceClaim) error
	// DropSequence forgets the sequence and its keys (its topic is
	// deleted). A sequence claimed again starts anew.
	DropSequence(ctx context.Context, name string) error
}

// MetricPoint is one minute of one metric series: the statistics of the
// samples recorded in it.
type MetricPoint struct {
	// Account is the series' account, "" for the account the server is
	// configured with: the points stored before metrics were kept per
	// account have none, and are that account's.
	Account           string
	Namespace, Metric string
	// DimName and DimValue are the series' one dimension.
	DimName, DimValue string
	// Minute counts minutes since the Unix epoch.
	Minute               int64
	Sum, Count, Min, Max float64
}

// MetricStore keeps one-minute metric datapoints across restarts.
type MetricStore interface {
	// PutMetricPoints stores points in one durable batch; a point replaces
	// the stored one of its series and minute.
	PutMetricPoints(ctx context.Context, points []MetricPoint) error
	// MetricPoints returns the points of minute from on, by minute. On a
	// store several nodes share, each node's points are its own, and this
	// returns them merged per series (account included) and minute across
	// every node (sums
	// and counts added, the least minimum, the greatest maximum).
	MetricPoints(ctx context.Context, from int64) ([]MetricPoint, error)
	// DeleteMetricPointsBefore deletes the points of minutes before minute.
	DeleteMetricPointsBefore(ctx context.Context, minute int64) error
	// DeleteMetricPoints deletes every point of the accounts pick picks
	// (MetricPoint.Account, "" for the configured account's), of every
	// minute and, on a shared store, of every node: a reset of accounts.
	DeleteMetricPoints(ctx context.Context, pick func(account string) bool) error
}

// Store is everything the services keep, in one backend: queues and
// messages with their move tasks (Backend), SNS and CloudWatch documents
// (RecordStore), SNS FIFO topics' numbers and deduplication keys
// (Sequencer), metric datapoints (MetricStore), and what the server asks
// of the store itself (Monitor). The server is given a Store and never
// knows which backend it is; the command line chooses one.
type Store interface {
	Backend
	RecordStore
	Sequencer
	MetricStore
	Monitor
	Cluster
	HistoryReader
	Peeker

	// OnMovedByTask sets fn to be told of every message a move task has
	// written into its destination (a new message there, as a send makes),
	// once durable, from the task's goroutine. The server calls it once,
	// before it serves. A store that resumes move tasks when it opens may
	// be asked to hold them until this call, so that fn sees every move
	// (embedded: Options.HoldMoveTasks).
	OnMovedByTask(fn func(account, queue string, m *NewMessage))
}

// Monitor is how a store reports on itself to the health endpoint and to
// /metrics.
type Monitor interface {
	// Refusing is "" while the store accepts writes; otherwise it says why
	// writes fail with ErrStoreFull (e.g. "disk full"), and health reports
	// the store read-only for that reason.
	Refusing() string
	// Unreachable is "" while the store can be reached; otherwise it says
	// why calls fail with ErrUnavailable, and health reports the store
	// unreachable for that reason. It may ask the store (within ctx)
	// whether it is back.
	Unreachable(ctx context.Context) string
	// Degraded is "" while the store works as it should; otherwise it says
	// what makes it work worse while it still serves every call (on
	// PostgreSQL, a transaction that has held vacuum back for long), and
	// health reports the store degraded for that reason.
	Degraded() string
	// Collector exposes the store's own figures (ferry_store_*); nil when
	// it has none.
	Collector() prometheus.Collector
	// Durable reports whether what is written survives a restart. A store
	// that does not is not asked to keep the metric history.
	Durable() bool
}

// Cluster is what the services need to act as one broker when several
// nodes share one store (PostgreSQL): leases on background work, secrets
// every node uses, news of records changed through other nodes, and the
// other nodes' metric points. A store that one node has to itself
// (embedded) answers as the only node: every lease is its own, nothing
// changes behind its back, it has no peers.
type Cluster interface {
	// Shared reports whether other nodes may use the store at the same
	// time.
	Shared() bool
	// TakeLease takes or renews the lease called name for d and reports
	// whether this node holds it now. Background work that one node does
	// for all (metric sampling, alarm evaluation) runs only under its
	// lease, renewed more often than d, so that another node carries on
	// within d when the holder dies. Leases run on the store's own time
	// (the database's clock), not on the services' clock.
	TakeLease(ctx context.Context, name string, d time.Duration) (bool, error)
	// Secret returns the secret called name, which every node sharing the
	// store reads the same: the first call by any node stores the value
	// create makes, and every later call returns it.
	Secret(ctx context.Context, name string, create func() ([]byte, error)) ([]byte, error)
	// WatchRecords sets fn to be told, from the store's own goroutine, of
	// every record another node put or deleted (kind and key, once the
	// change is durable), so that a node keeps what it caches of records
	// current. Kind and key "" mean that any record may have changed (the
	// store lost news for a while) and every kind must be read again; a
	// kind with key "" means any record of that kind. fn must not block. It is set once, before the node serves; a store
	// only one node uses never calls it.
	WatchRecords(fn func(kind, key string))
	// PeerMetricPoints returns the points the other nodes stored for
	// minutes from on, merged per series and minute as MetricPoints
	// merges them; nil on a store only one node uses. A node adds them to
	// what it has recorded itself, so that CloudWatch shows the cluster's
	// figures.
	PeerMetricPoints(ctx context.Context, from int64) ([]MetricPoint, error)
}
