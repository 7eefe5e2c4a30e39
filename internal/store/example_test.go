package store_test

import (
	"fmt"

	"visitors/internal/store"
)

// ValidKey is what a store holds; ValidPublicKey is what a badge's URL
// and the owner API may name.
func ExampleValidPublicKey() {
	for _, k := range []string{"octocat/hello-world", "me/été", "a//b", "ns/graph"} {
		fmt.Println(k, store.ValidKey([]byte(k)), store.ValidPublicKey(k))
	}
	// Output:
	// octocat/hello-world true true
	// me/été true false
	// a//b true false
	// ns/graph true false
}
