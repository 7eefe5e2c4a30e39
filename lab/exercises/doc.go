// Package exercises holds the three exercises that open docs/lab.md,
// each built from a bug a seed published: a pooled buffer that stops
// being reused (greeting steps 5 to 8), a color rule that matches
// everything (greeting steps 1 to 8) and a result that aliases pooled
// memory (digest step 8).
//
// The checks are here, exported, and the package's own tests show that
// each fails on the seed's step and passes on a fix. The reader's copies
// of the buggy code are in reader.go, with the tests that run the checks
// on them, behind the build tag lab_exercise, so that the repository's
// tests stay green while the reader's fail until they are fixed:
//
//	go test -tags lab_exercise ./lab/exercises
package exercises
