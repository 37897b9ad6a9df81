package runtime

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// tokenVar marks every process a test starts (the environment is
// inherited), so leftovers can be found in /proc.
const tokenVar = "NEXUS_RUNTIME_TEST"

var token = tokenVar + "=" + strconv.Itoa(os.Getpid())

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if pids := waitGone(token, 5*time.Second); len(pids) > 0 {
			fmt.Fprintf(os.Stderr, "processes left behind: %v\n", pids)
			code = 1
		}
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// procsWith lists the processes whose environment holds env.
func procsWith(env string) []int {
	var pids []int
	entries, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, e := range entries {
		b, err := os.ReadFile(e)
		if err != nil {
			continue
		}
		for kv := range bytes.SplitSeq(b, []byte{0}) {
			if string(kv) == env {
				pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(e)))
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// waitGone waits until no process holds env (killed processes take a moment
// to exit, zombies keep their environment readable only until reaped), and
// returns the ones still there.
func waitGone(env string, d time.Duration) []int {
	deadline := time.Now().Add(d)
	for {
		pids := procsWith(env)
		if len(pids) == 0 || time.Now().After(deadline) {
			return pids
		}
		time.Sleep(20 * time.Millisecond)
	}
}
