package dashboard_test

import (
	"os"
	"testing"

	"visitors/internal/store/redisstore/redistest"
)

func osMkdirTemp() (string, error) { return os.MkdirTemp("", "dashboard-redis-") }

// TestMain stops the redis-servers the tests started.
func TestMain(m *testing.M) {
	code := m.Run()
	if redisServer != nil {
		redisServer.Close()
		os.RemoveAll(redisServer.Dir)
	}
	if redisCluster != nil {
		redisCluster.Close()
	}
	_ = redistest.ServerBin
	os.Exit(code)
}
