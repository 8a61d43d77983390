package metrics

// Reset forgets every series and the other nodes' points, and returns how
// many series this node had: a reset of the broker's state. Totals
// restart with them, as they do at a restart.
func (s *Store) Reset() int {
	s.mu.Lock()
	n := len(s.series)
	s.series = make(map[SeriesKey]*series)
	s.mu.Unlock()
	s.peerMu.Lock()
	if s.peers != nil {
		s.peers = map[SeriesKey][]bucket{}
	}
	s.peerMu.Unlock()
	return n
}
