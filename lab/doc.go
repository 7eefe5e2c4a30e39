// Package lab rebuilds four published Go optimisation case studies step
// by step, so that every step can be benchmarked beside the others on
// today's Go and hardware:
//
//   - greeting: the /hi handler of a YAPC::Asia 2015 profiling talk;
//   - digest: driving one function to zero allocations;
//   - hello: profiling a per-name counter that logs with logrus;
//   - whoami: a user-agent and latency endpoint from a meetup talk.
//
// Within a case the steps answer alike for the same input except where
// a seed's own bug changed the output (a lost quote or </p>, a log
// message run together) or the service formats differently (whoami's
// latency); each package's TestSteps pins every step's output, and its
// TestMuseum tests show the bugs; the TestWhyAllocs tests check the
// cause each case's page (docs/lab/<case>.md) gives for each step's
// allocations, counted exactly
// with lab/allocs. The last step of greeting, hello and whoami is the
// service's own handler, imported, not copied. lab/exercises turns
// three of the seeds' bugs into exercises. `go run ./cmd/lab` measures
// them all and writes docs/lab; `go run ./cmd/lab -check` is CI's check
// that docs/lab.md and the case pages under docs/lab/ are fresh.
package lab
