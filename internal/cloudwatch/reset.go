package cloudwatch

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
)

// ResetCounts is what Reset removed.
type ResetCounts struct {
	Alarms       int `json:"alarms"`
	AlarmHistory int `json:"alarmHistory"`
}

// Reset removes the alarms and the alarm history of account, or of every
// account when it is "". What to remove is read from the store, so that
// what other nodes wrote goes too; they hear of every record removed and
// forget it. The metric datapoints are the metric store's (metrics.Store
// Reset).
func (s *Service) Reset(ctx context.Context, account string) (ResetCounts, error) {
	var c ResetCounts
	s.mu.Lock()
	defer s.mu.Unlock()
	// An alarm's Account is its owner key as stored: the account's alarms
	// are those of every region.
	of := func(stored string) bool {
		if stored == "" {
			stored = s.account
		}
		a, _ := s.split(stored)
		return a == account
	}
	recs, err := s.records.Records(ctx, kindAlarm)
	if err != nil {
		return c, fmt.Errorf("cloudwatch: reset: %w", err)
	}
	for _, r := range recs {
		var a alarm
		if account != "" && (json.Unmarshal(r.Value, &a) != nil || !of(a.Account)) {
			continue
		}
		if err := s.records.DeleteRecord(ctx, kindAlarm, r.Key); err != nil {
			return c, fmt.Errorf("cloudwatch: reset: %w", err)
		}
		delete(s.alarms, r.Key)
		c.Alarms++
	}
	recs, err = s.records.Records(ctx, kindHistory)
	if err != nil {
		return c, fmt.Errorf("cloudwatch: reset: %w", err)
	}
	for _, r := range recs {
		var h historyItem
		if account != "" && (json.Unmarshal(r.Value, &h) != nil || !of(h.Account)) {
			continue
		}
		if err := s.records.DeleteRecord(ctx, kindHistory, r.Key); err != nil {
			return c, fmt.Errorf("cloudwatch: reset: %w", err)
		}
		c.AlarmHistory++
	}
	// This node's memory may hold what the store has no more (a change
	// through another node whose news is under way): it goes too.
	for k, a := range s.alarms {
		if account == "" || of(a.Account) {
			delete(s.alarms, k)
		}
	}
	s.history = slices.DeleteFunc(s.history, func(h historyItem) bool {
		return account == "" || of(h.Account)
	})
	return c, nil
}
