//go:build !unix

package servertest

import (
	"fmt"
	"os"
	"runtime"
)

// dupCloexec fails: a listening socket passed by descriptor number
// (-addr fd:N) is a Unix feature.
func dupCloexec(*os.File) (int, error) {
	return -1, fmt.Errorf("dup listener: no listener by descriptor number on %s", runtime.GOOS)
}
