// Package lab rebuilds four published Go optimisation case studies step
// by step, so that every step can be benchmarked beside the others on
// today's Go and hardware:
//
//   - greeting: the /hi handler of a YAPC::Asia 2015 profiling talk;
//   - digest: driving one function to zero allocations;
//   - hello: profiling a per-name counter that logs with logrus;
//   - whoami: a user-agent and latency endpoint from a meetup talk.
//
// Within a case every step gives byte-identical output for the same
// input, and the last step of greeting and hello is the service's own
// handler, imported, not copied. `go run ./cmd/lab` runs them all and
// writes docs/lab.
package lab
