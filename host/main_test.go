package host_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/nexus-eval/nexus/internal/testkit"
)

var builder *testkit.Builder

func TestMain(m *testing.M) {
	if os.Getenv(hostChildEnv) != "" {
		runHostChild()
		return
	}
	var err error
	if builder, err = testkit.NewBuilder(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	builder.Cleanup()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
