//go:build lab_exercise

package exercises

import (
	"testing"

	"visitors/internal/race"
)

// Run without -race: go test -tags lab_exercise ./lab/exercises

func TestExercise1PoolKeepsGrowth(t *testing.T) {
	if race.Enabled {
		t.Skip("run without -race: sync.Pool drops items under it")
	}
	if err := PoolKeepsGrowth(Greeting()); err != nil {
		t.Error(err)
	}
}

func TestExercise2ColorAnchored(t *testing.T) {
	if err := ColorAnchored(Color()); err != nil {
		t.Error(err)
	}
}

func TestExercise3NoAlias(t *testing.T) {
	if err := NoAlias(Digest); err != nil {
		t.Error(err)
	}
}
