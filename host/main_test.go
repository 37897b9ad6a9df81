package host_test

import (
	"os"
	"testing"

	"github.com/nexus-eval/nexus/internal/testkit"
)

var builder *testkit.Builder

func TestMain(m *testing.M) {
	if os.Getenv(hostChildEnv) != "" {
		runHostChild()
		return
	}
	testkit.Main(m, func(b *testkit.Builder) error {
		builder = b
		return nil
	})
}
