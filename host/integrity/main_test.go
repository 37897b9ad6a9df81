package integrity

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/nexus-eval/nexus/internal/testkit"
)

// selfhash is a built binary that prints the sha256 of the file it runs
// from.
var selfhash string

func TestMain(m *testing.M) {
	b, err := testkit.NewBuilder()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if selfhash, err = b.Binary("host/integrity/testdata/selfhash"); err != nil {
		b.Cleanup()
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	b.Cleanup()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
