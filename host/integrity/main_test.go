package integrity

import (
	"testing"

	"github.com/nexus-eval/nexus/internal/testkit"
)

// selfhash is a built binary that prints the sha256 of the file it runs
// from.
var selfhash string

func TestMain(m *testing.M) {
	testkit.Main(m, func(b *testkit.Builder) error {
		var err error
		selfhash, err = b.Binary("host/integrity/testdata/selfhash")
		return err
	})
}
