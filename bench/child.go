// This file holds the hidden child modes: the benchmark re-execs itself
// with childFlag to measure something in a fresh process, whose peak RSS
// the parent reads from rusage.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"
)

// childResult is what a child prints on stdout.
type childResult struct {
	Elapsed time.Duration `json:"elapsed_ns"`
	Tools   int           `json:"tools"`
	Running int           `json:"running"`
}

// childMain runs child mode args[0]:
//
//	idle             do nothing: the RSS floor of this binary
//	discover DIR N   discover DIR once, expecting N plugins
func childMain(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "child: missing mode")
		return 2
	}
	var res childResult
	switch args[0] {
	case "idle":
	case "discover":
		if len(args) != 3 {
			fmt.Fprintln(os.Stderr, "child: discover DIR N")
			return 2
		}
		n, err := strconv.Atoi(args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 2
		}
		start := time.Now()
		h, ds := discover(args[1])
		res.Elapsed = time.Since(start)
		if err := checkDiscovered(h, ds, n); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 1
		}
		res.Tools, res.Running = len(h.Tools.List()), h.Running()
		h.Close()
	default:
		fmt.Fprintf(os.Stderr, "child: unknown mode %q\n", args[0])
		return 2
	}
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		return 1
	}
	return 0
}
