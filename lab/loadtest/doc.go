// Package loadtest, a research tool beside the lab and no part of the
// service, puts the whole visitors service beside the classic
// unoptimised server and a bare net/http ceiling, on this machine, in one
// run: each server pinned to one core, the load generator to the other,
// the servers measured in turn (a b c a b c …) for several rounds with
// wrk at full throughput, then at a constant rate of half of each one's
// maximum for latency percentiles without coordinated omission.
package loadtest
