package app

import (
	"visitors/internal/metrics"
	"visitors/internal/store/redisstore"
)

// redisReport reads the Redis store's figures for /metrics.
func redisReport(s *redisstore.Store) metrics.RedisReport {
	r := s.Report()
	m := metrics.RedisReport{
		Up:             r.Up,
		Stuck:          r.Stuck,
		Rounds:         r.Rounds,
		RoundErrors:    r.RoundErrors,
		Commands:       r.Commands,
		UniqueCommands: r.UniqueCommands,
		KeysSent:       r.KeysSent,
		SyncVisits:     r.SyncVisits,
		Reserves:       r.Reserves,
		HiLeft:         r.HiLeft,
		PendingVisits:  r.PendingVisits,
		PendingKeys:    r.PendingKeys,
		HeldVisits:     r.HeldVisits,
		PendingUniques: r.PendingUniques,
		UniquesDropped: r.UniquesDropped,
		SinceRound:     r.SinceRound,
		Errors:         make(map[string]uint64, len(r.Errors)),
	}
	for i, n := range r.Errors {
		m.Errors[redisstore.ErrorKinds[i]] = n
	}
	return m
}
