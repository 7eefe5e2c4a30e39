// Package redisclient measures the two maintained Go Redis clients,
// rueidis and go-redis, on the commands the Redis store
// (internal/store/redisstore) sends: one INCR per visit from many
// goroutines (sync /hi) and a flush round of pipelined EVALSHA. Its
// benchmarks start their own redis-server; the figures and the choice
// are in docs/performance.md.
package redisclient
